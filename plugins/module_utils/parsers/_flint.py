# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``flint`` / ``mstflint`` output. Kinds: ``flint-query``, ``flint-burn``.

Layout: shared/corpus/flint/FORMAT-from-source.md (mstflint flint/subcommands.cpp).

``query`` prints ``Label:`` in a fixed field (23 columns; 21 in old releases) and the value;
``Rom Info`` continues on indented lines; ``Base GUID`` / ``Base MAC`` rows sit under a
``Description: UID GuidsNumber`` header and carry the count after the value. Labels are read up
to the first ``:`` so the field width does not matter; every label lands in ``fields`` under
its snake_case name, and the common ones also at the top level (null when not printed, e.g.
``FW Version(Running)`` which appears only between a burn and the reset, or
``Security Attributes`` which old releases do not print).

``burn`` (and the other flash-writing sub-commands such as ``drom``) prints the two versions,
an optional note and prompt, then ``<step> - OK`` lines (progress ``NN%`` is rewritten in place
with ``\\r``, which reads here as separate lines of the same step) and ``-I-``/``-E-`` lines.
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    no_structure,
    snake,
    split_lines,
    to_int,
)

_LABEL_RE = LazyPattern(r"^(?P<label>[A-Za-z][A-Za-z0-9 ()/._-]*?)\s*:\s*(?P<value>.*?)\s*$")
_ROM_ITEM_RE = LazyPattern(r"(?P<key>[A-Za-z_]+)=(?P<value>.*?)(?=\s+[A-Za-z_]+=|$)")
_QUERY_TOP = {
    "image_type": "image_type",
    "fw_version": "fw_version",
    "fw_version_running": "running_fw_version",
    "fw_release_date": "fw_release_date",
    "product_version": "product_version",
    "psid": "psid",
    "orig_psid": "orig_psid",
    "image_vsd": "image_vsd",
    "device_vsd": "device_vsd",
    "security_attributes": "security_attributes",
    "security_ver": "security_ver",
    "part_number": "part_number",  # q full
    "description": "description",  # q full: the product text (the UID table's "Description:" header is not it)
}
_UID_LABELS = ("base_guid", "base_mac", "orig_base_guid", "orig_base_mac", "system_guid", "node_guid", "port_guid",
               "allocated_guid", "guid1", "guid2", "mac1", "mac2")


def _rom_entry(text):
    entry = {match.group("key"): match.group("value").strip() for match in _ROM_ITEM_RE.finditer(text.strip())}
    return entry or {"text": text.strip()}


def parse_flint_query(text):
    """``flint -d DEV q`` / ``mstflint -d BDF q`` (also ``q full``)."""
    kind = "flint-query"
    lines = split_lines(text)
    fields = {}
    uids = {}
    rom_info = []
    errors = []
    messages = []
    last = None
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("-E-"):
            errors.append(line[3:].strip())
            continue
        if line.startswith(("-I-", "-W-")):
            messages.append(line[3:].strip())
            continue
        if raw[:1].isspace() and last == "rom_info":
            rom_info.append(_rom_entry(line))
            continue
        match = _LABEL_RE.match(line)
        if not match or raw[:1].isspace():
            raise ParseError(kind, "expected 'Label:   value' (flint query output)", index + 1, raw)
        key = snake(match.group("label"))
        value = match.group("value")
        last = key
        if key == "rom_info":
            if value:
                rom_info.append(_rom_entry(value))
            continue
        if key == "description" and value.split()[:1] == ["UID"]:
            fields["uid_columns"] = value.split()
            continue
        if key in _UID_LABELS:
            parts = value.split()
            uids[key] = {
                "uid": parts[0] if parts else None,
                "count": to_int(parts[1]) if len(parts) > 1 else None,
                "step": to_int(parts[2]) if len(parts) > 2 else None,
            }
            fields[key] = parts[0] if parts else None
            continue
        fields[key] = value
    if not fields and not uids and not rom_info:
        if errors:
            fields = {}
        else:
            raise no_structure(kind, lines, "'FW Version:', 'PSID:' ... lines")
    elif not any(key in fields for key in ("fw_version", "psid", "image_type", "product_version")):
        raise no_structure(kind, lines, "'Image type:', 'FW Version:' or 'PSID:' lines")
    result = {name: fields.get(key) for key, name in _QUERY_TOP.items()}
    if result["security_ver"] is not None:
        result["security_ver"] = to_int(result["security_ver"])
    result["base_guid"] = uids.get("base_guid", {}).get("uid")
    result["base_guid_count"] = uids.get("base_guid", {}).get("count")
    result["base_mac"] = uids.get("base_mac", {}).get("uid")
    result["base_mac_count"] = uids.get("base_mac", {}).get("count")
    result["rom_info"] = rom_info
    result["uids"] = uids
    result["fields"] = fields
    result["errors"] = errors
    result["messages"] = messages
    return result


_CURRENT_RE = LazyPattern(r"^Current FW version on flash\s*:\s*(?P<v>.*?)\s*$", re.IGNORECASE)
_NEW_RE = LazyPattern(r"^New FW version\s*:\s*(?P<v>.*?)\s*$", re.IGNORECASE)
_STEP_RE = LazyPattern(r"^(?P<step>\S.*?)\s+-\s+(?P<status>OK|FAILED|\d{1,3}%)\s*$", re.IGNORECASE)
_PSID_MISMATCH_RE = LazyPattern(
    r"PSID on flash \((?P<flash>[^)]*)\) differs from the PSID in the given image \((?P<image>[^)]*)\)"
)
_PSID_REPLACE_RE = LazyPattern(
    r'replace current PSID on flash - "(?P<flash>[^"]*)" with a different PSID - "(?P<image>[^"]*)"'
)


def parse_flint_burn(text):
    """``flint -d DEV -i IMG burn`` (and other flash writes): versions, steps, result.

    ``ok`` is true when no ``-E-`` line was printed, at least one step was printed and every
    step's last status is ``OK``.
    """
    kind = "flint-burn"
    lines = split_lines(text)
    result = {
        "current_version": None,
        "new_version": None,
        "same_version": False,
        "ok": False,
        "error": None,
        "errors": [],
        "psid_flash": None,
        "psid_image": None,
        "prompt": None,
        "answer": None,
        "steps": [],
        "messages": [],
        "notes": [],
    }
    steps = {}
    recognised = False
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        for pattern in (_PSID_MISMATCH_RE, _PSID_REPLACE_RE):
            psid = pattern.search(line)
            if psid:
                result["psid_flash"], result["psid_image"] = psid.group("flash"), psid.group("image")
        if line.startswith("-E-"):
            result["errors"].append(line[3:].strip())
            recognised = True
            continue
        if line.startswith(("-I-", "-W-")):
            result["messages"].append(line[3:].strip())
            continue
        match = _CURRENT_RE.match(line)
        if match:
            result["current_version"] = match.group("v") or None
            recognised = True
            continue
        match = _NEW_RE.match(line)
        if match:
            result["new_version"] = match.group("v") or None
            recognised = True
            continue
        if "(y/n)" in line:
            question, dummy, answer = line.rpartition(":")
            result["prompt"] = question.strip()
            result["answer"] = answer.strip() or None
            continue
        match = _STEP_RE.match(line)
        if match:
            step = " ".join(match.group("step").split())
            if step not in steps:
                steps[step] = {"step": step, "status": None}
                result["steps"].append(steps[step])
            steps[step]["status"] = match.group("status").upper()
            recognised = True
            continue
        if line.lower().startswith("note:"):
            note = line[5:].strip()
            result["notes"].append(note)
            if "same as the current fw version" in note.lower():
                result["same_version"] = True
            continue
        result["messages"].append(line)
    if not recognised:
        raise no_structure(kind, lines, "'Current FW version on flash:', '<step> - OK' or '-E-' lines")
    result["error"] = result["errors"][0] if result["errors"] else None
    result["ok"] = (not result["errors"] and bool(result["steps"])
                    and all(step["status"] == "OK" for step in result["steps"]))
    return result


PARSERS = {
    "flint-query": parse_flint_query,
    "flint-burn": parse_flint_burn,
}
