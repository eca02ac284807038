# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``mlxfwreset`` / ``mstfwreset``. Kinds: ``mlxfwreset-query`` (``... q``) and
``mlxfwreset-reset`` (``... [-l N] [-y] reset``).

Strings: shared/corpus/mlxfwreset/FORMAT-from-source.md (mstflint small_utils/mstfwreset.py).
The FORMAT file covers the reset run; the query layout (sections ``Reset-levels:``,
``Reset-types (...):``, ``Reset-sync (...):`` of ``N: description  -Supported|-Not Supported
[(default)]`` rows) is taken from a published BlueField-3 capture (fixture
``bf3-mlxfwreset-q-blockquote``), not from the source: the corpus has no query sample.

Since mstflint 4.26 (2023-08) the query may end with ``Reset-reason: ... Warm reset|Cold reset`` and
``Timestamp (number of clock cycles) since last cold reset: N`` (cmd_reg_mrsi.py query_text); since
mstflint 4.31/4.33 (2025-01..07, MFT 4.30+) a firmware with the MROQ register gets a
``The following query is relevant only for reset-type N:`` header, ``Reset sync (...)`` (a space)
with a third owner ``2: FW is the owner`` and a ``Reset request method (...)`` section
(mstfwreset.py query branch, cmd_reg_mroq.py print_query_text). Both layouts are read; the new
sections land in ``sync`` and ``methods``, the header in ``reset_type``, the last lines in
``reset_reason`` and ``timestamp``.
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    is_count,
    no_structure,
    split_lines,
)

_ROW_RE = LazyPattern(
    r"^(?P<num>\d+)\s*:\s*(?P<desc>.*?)\s*-\s*(?P<support>Supported|Not\s+Supported)\s*(?P<default>\(default\))?\s*$",
    re.IGNORECASE,
)
_SECTION_RE = LazyPattern(r"^(?P<title>Reset[- ][A-Za-z]+(?: [A-Za-z]+)*?)(?:\s*\((?P<note>[^)]*)\))?\s*:\s*$")
_SECTION_KEYS = {"reset-levels": "levels", "reset-types": "types", "reset-sync": "sync", "reset sync": "sync",
                 "reset request method": "methods"}
_FOR_TYPE_RE = LazyPattern(r"^The following query is relevant only for reset-type (?P<type>\d+)\s*:\s*$")
_REASON_RE = LazyPattern(r"^Reset-reason\s*:\s*(?P<value>.*?)\s*$")
_TIMESTAMP_RE = LazyPattern(r"^Timestamp \((?P<unit>[^)]*)\) since last cold reset\s*:\s*(?P<value>.*?)\s*$")


def parse_mlxfwreset_query(text):
    """``mlxfwreset -d DEV q``: ``{"levels": [...], "types": [...], "sync": [...], "methods": [...], "notes": {...},
    "reset_type": N|None, "reset_reason": str|None, "timestamp": int|str|None}``."""
    kind = "mlxfwreset-query"
    lines = split_lines(text)
    result = {"levels": [], "types": [], "sync": [], "methods": [], "notes": {}, "reset_type": None,
              "reset_reason": None, "timestamp": None, "errors": [], "messages": []}
    section = None
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        match = _FOR_TYPE_RE.match(line)
        if match:
            result["reset_type"] = int(match.group("type"))
            continue
        match = _REASON_RE.match(line)
        if match:
            result["reset_reason"] = match.group("value")
            section = None
            continue
        match = _TIMESTAMP_RE.match(line)
        if match:
            value = match.group("value")
            result["timestamp"] = int(value) if is_count(value) else value
            section = None
            continue
        if line.startswith("-E-"):
            result["errors"].append(line[3:].strip())
            continue
        if line.startswith(("-I-", "-W-")):
            result["messages"].append(line[3:].strip())
            continue
        match = _SECTION_RE.match(line)
        if match:
            title = " ".join(match.group("title").lower().split())
            section = _SECTION_KEYS.get(title, title)
            result.setdefault(section, [])
            if match.group("note"):
                result["notes"][section] = match.group("note").strip()
            continue
        match = _ROW_RE.match(line)
        if match and section is not None:
            entry = {
                "description": match.group("desc"),
                "supported": match.group("support").lower() == "supported",
                "default": match.group("default") is not None,
            }
            entry["level" if section == "levels" else "id"] = int(match.group("num"))
            result[section].append(entry)
            continue
        raise ParseError(kind, "expected a 'Reset-levels:' / 'Reset sync (...):' title, 'N: description -Supported' "
                               "row or 'Reset-reason:' line",
                         index + 1, raw)
    if not result["levels"] and not result["errors"]:
        raise no_structure(kind, lines, "'Reset-levels:' followed by 'N: description -Supported' rows")
    return result


_LEVEL_HEAD_RE = LazyPattern(
    r"^(?:The|Minimal|Requested) reset level for device,\s*(?P<device>.*?)\s*(?:is)?\s*:\s*$", re.IGNORECASE
)
_LEVEL_RE = LazyPattern(r"^(?P<num>\d+)\s*:\s*(?P<desc>.+?)\s*$")
_STEP_RE = LazyPattern(r"^(?P<step>.+?)\s*-\s*(?P<status>Done|Skipped|Failed|FAILED|OK)\s*$")


def parse_mlxfwreset_reset(text):
    """``mlxfwreset -d DEV [-l N] -y reset``: chosen level, answer, steps and outcome.

    ``ok`` is true when the tool says the firmware was loaded (``FW was loaded successfully`` or
    ``FW reset success``) and printed no ``-E-`` line.
    """
    kind = "mlxfwreset-reset"
    lines = split_lines(text)
    result = {"device": None, "level": None, "level_description": None, "prompt": None, "answer": None,
              "steps": [], "ok": False, "errors": [], "messages": []}
    expect_level = False
    recognised = False
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        match = _LEVEL_HEAD_RE.match(line)
        if match:
            result["device"] = match.group("device") or None
            expect_level = recognised = True
            continue
        if expect_level:
            match = _LEVEL_RE.match(line)
            if match:
                result["level"] = int(match.group("num"))
                result["level_description"] = match.group("desc")
                expect_level = False
                continue
        expect_level = False
        if "?" in line and "[y/N]" in line:
            question, dummy, answer = line.rpartition("]")
            result["prompt"] = question + "]"
            result["answer"] = answer.strip() or None
            continue
        if line.startswith("-E-"):
            result["errors"].append(line[3:].strip())
            recognised = True
            continue
        if line.startswith(("-I-", "-W-")):
            body = line[3:].strip()
            match = _STEP_RE.match(body)
            if match and line.startswith("-I-"):
                result["steps"].append({"step": " ".join(match.group("step").split()), "status": match.group("status")})
                recognised = True
                continue
            result["messages"].append(body)
            if "fw was loaded successfully" in body.lower() or "fw reset success" in body.lower():
                result["ok"] = True
                recognised = True
            continue
        result["messages"].append(line)
    if not recognised:
        raise no_structure(kind, lines, "'The reset level for device, DEV is:' and '-I- <step> -Done' lines")
    if result["errors"] or any(step["status"].lower() == "failed" for step in result["steps"]):
        result["ok"] = False
    return result


PARSERS = {
    "mlxfwreset-query": parse_mlxfwreset_query,
    "mlxfwreset-reset": parse_mlxfwreset_reset,
}
