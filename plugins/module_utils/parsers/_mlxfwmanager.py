# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``mlxfwmanager --query`` / ``mlxfwmanager --online -u`` / ``mlxup`` (same print code).
Kind: ``mlxfwmanager-query``.

Layout: shared/corpus/mlxfwmanager/FORMAT-from-source.md (mstflint mlxfwupdate/mlxfwmanager.cpp):
``Device #N:`` blocks of ``  Label:  value`` lines, a ``Versions:  Current  Available`` table
whose rows are ``NAME  CURRENT  AVAILABLE`` (NAME may contain spaces and overflow its 12-character
column: ``UEFI Virtio blk``, ``FW (Running)``), and ``Status:``. The version cells are taken from
the end of a row (a version looks like ``24.42.1000`` or ``N/A``); what is left is the NAME.
After the devices, update runs print a summary, the prompt, per-device progress and ``Log File:``;
those lines are kept in ``messages`` (and ``log_file``).
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    no_structure,
    snake,
    split_lines,
)

KIND = "mlxfwmanager-query"
_DEVICE_RE = LazyPattern(r"^Device\s*#\s*(\d+)\s*:\s*$")
_LABEL_RE = LazyPattern(r"^(?P<label>[A-Za-z][A-Za-z0-9 ()]*?)\s*:\s*(?P<value>.*?)\s*$")
_VERSION_RE = LazyPattern(r"^(?:N/A|-|\d[\w.\-]*)$")
_KEYS = ("device_type", "part_number", "description", "psid", "pci_device_name", "base_mac", "base_guid", "status")


def _new_device(number):
    device = {key: None for key in _KEYS}
    device.update({"number": number, "versions": {}, "fields": {}})
    return device


def parse_mlxfwmanager_query(text):
    lines = split_lines(text)
    devices = []
    errors = []
    messages = []
    log_file = None
    device = None
    columns = None  # the Versions: table is open
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line or set(line) <= {"-"}:
            if not line:
                columns = None
            continue
        match = _DEVICE_RE.match(line)
        if match:
            device = _new_device(int(match.group(1)))
            devices.append(device)
            columns = None
            continue
        if line.startswith("-E-"):
            errors.append(line[3:].strip())
            continue
        if line.startswith(("-I-", "-W-")):
            messages.append(line[3:].strip())
            continue
        label = _LABEL_RE.match(line)
        if label and snake(label.group("label")) == "log_file":
            log_file = label.group("value")
            continue
        if label and device is not None:
            key = snake(label.group("label"))
            value = label.group("value")
            if key == "versions":
                columns = [snake(title) for title in value.split()] or ["current", "available"]
                continue
            columns = None
            device["fields"][key] = value
            if key in _KEYS:
                device[key] = value
            continue
        if columns is not None and ":" not in line:
            tokens = line.split()
            cells = []
            while tokens and len(cells) < len(columns) and len(tokens) > 1 and _VERSION_RE.match(tokens[-1]):
                cells.insert(0, tokens.pop())
            if not cells:
                raise ParseError(KIND, "expected a version row: NAME CURRENT [AVAILABLE]", index + 1, raw)
            row = dict.fromkeys(columns)
            row.update(zip(columns, cells, strict=False))
            device["versions"][" ".join(tokens)] = row
            continue
        if device is None and line.startswith("Querying"):
            continue
        if device is not None and not raw[:1].isspace():
            messages.append(line)  # update summary / prompt / progress after the device blocks
            continue
        raise ParseError(KIND, "not a line of mlxfwmanager output", index + 1, raw)
    if not devices and not errors:
        raise no_structure(KIND, lines, "'Device #1:' blocks with 'Versions:' and 'Status:'")
    return {"devices": devices, "errors": errors, "messages": messages, "log_file": log_file}


PARSERS = {KIND: parse_mlxfwmanager_query}
