# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``nvme list`` (nvme-cli): the NVMe namespaces a host sees, e.g. those BlueField SNAP emulates.

Layouts:
* Table: nvme-cli nvme-print-stdout.c ``list_item`` / ``stdout_simple_list`` (github.com/linux-nvme/nvme-cli,
  commit 1494a4d9ae499049df876b6a2576bfbe0a621d23): titles Node, Generic, SN, Model, Namespace, Usage,
  Format, FW Rev over a line of dash runs, one run per column; Namespace ``0x%x``; Usage
  ``%6.2f %2sB / %6.2f %2sB`` (SI, powers of 1000); Format ``%3.0f %2sB + %2d B`` (binary prefixes). Older
  releases have no Generic column and print the namespace in decimal: a real capture of that form is the
  fixture tests/unit/fixtures/nvme/azure-nvme-list.txt (quoted in microsoft/lisa lisa/tools/nvmecli.py).
  Columns are cut at the starts of the dash runs (Model and SN may hold spaces).
* ``-o json``: ``{"Devices": [{"NameSpace", "DevicePath", "GenericPath", "Firmware", "ModelNumber",
  "SerialNumber", "UsedBytes", "MaximumLBA", "PhysicalSize", "SectorSize"}]}`` (same reference's JSON capture).

Not registered in a ``PARSERS`` dict: the only real capture is not (yet) in shared/corpus, and fixtures under
tests/unit/fixtures/parsers must be copied from there. Pure: no I/O. ``ParseError`` names the line.
"""

from __future__ import annotations

import json
import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
)

KIND = "nvme-list"
KIND_JSON = "nvme-list-json"
_SI = {"": 1, "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}
_BIN = {"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
_USAGE = LazyPattern(r"^(?P<used>\d+(?:\.\d+)?)\s*(?P<us>[kMGTPE]?)B\s*/\s*"
                     r"(?P<size>\d+(?:\.\d+)?)\s*(?P<ss>[kMGTPE]?)B$")
_FORMAT = LazyPattern(r"^(?P<lba>\d+)\s*(?P<ls>Ki|Mi|Gi)?\s*B\s*\+\s*(?P<meta>\d+)\s*B$")
_COLUMNS = {"Node": "node", "Generic": "generic", "SN": "serial", "Model": "model", "Namespace": "nsid",
            "Usage": "usage", "Format": "format", "FW Rev": "firmware"}


def _spans(dash_line):
    return [m.start() for m in re.finditer(r"-+", dash_line)]


def _titles(header, starts):
    cells = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(header)
        cells.append(header[start:end].strip())
    return cells


def parse_list(text):
    """``nvme list`` table -> list of namespaces: node, generic (None in the older layout), serial, model, nsid,
    used_bytes, size_bytes (both rounded as printed: 3 significant decimals), sector_size, metadata_size,
    firmware. Empty text or only the 'No NVMe devices detected.' line -> []."""
    lines = [line.rstrip() for line in split_lines(text)]
    body = [(no, line) for no, line in enumerate(lines, 1) if line.strip()]
    if not body or (len(body) == 1 and body[0][1].strip() == "No NVMe devices detected."):
        return []
    if len(body) < 2 or not body[0][1].startswith("Node") or not re.fullmatch(r"-+( +-+)+", body[1][1].strip()):
        raise ParseError(KIND, "expected the 'Node ... FW Rev' title line over a line of dashes", body[0][0],
                         body[0][1])
    starts = _spans(body[1][1])
    titles = _titles(body[0][1].ljust(starts[-1] + 8), starts)
    if any(t not in _COLUMNS for t in titles) or "Node" not in titles or "Model" not in titles:
        raise ParseError(KIND, "unknown column titles %s" % titles, body[0][0], body[0][1])
    out = []
    for no, line in body[2:]:
        values = _titles(line, starts)
        cells = {_COLUMNS[title]: values[index] for index, title in enumerate(titles)}
        usage, fmt = _USAGE.match(cells.get("usage", "")), _FORMAT.match(cells.get("format", ""))
        nsid = cells.get("nsid", "")
        if not cells.get("node", "").startswith("/dev/") or usage is None or fmt is None or not re.fullmatch(
                r"0x[0-9a-fA-F]+|\d+", nsid):
            raise ParseError(KIND, "a namespace row needs /dev/ node, namespace, usage 'N xB / N xB' and format "
                             "'N B + N B'", no, line)
        out.append({
            "node": cells["node"], "generic": cells.get("generic"), "serial": cells.get("serial", ""),
            "model": cells["model"], "nsid": int(nsid, 16) if nsid.startswith("0x") else int(nsid),
            "used_bytes": int(round(float(usage.group("used")) * _SI[usage.group("us")])),
            "size_bytes": int(round(float(usage.group("size")) * _SI[usage.group("ss")])),
            "sector_size": int(fmt.group("lba")) * _BIN[fmt.group("ls") or ""],
            "metadata_size": int(fmt.group("meta")), "firmware": cells.get("firmware", ""),
        })
    return out


def parse_list_json(text):
    """``nvme list -o json`` -> the same records as ``parse_list`` (exact byte counts)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ParseError(KIND_JSON, "not JSON: %s" % exc) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("Devices"), list):
        raise ParseError(KIND_JSON, "expected an object with a 'Devices' list")
    out = []
    for dev in doc["Devices"]:
        if not isinstance(dev, dict) or "DevicePath" not in dev or "PhysicalSize" not in dev:
            raise ParseError(KIND_JSON, "a device needs DevicePath and PhysicalSize: %r" % (dev,))
        out.append({
            "node": dev["DevicePath"], "generic": dev.get("GenericPath"), "serial": dev.get("SerialNumber", ""),
            "model": dev.get("ModelNumber", ""), "nsid": int(dev.get("NameSpace", 0)),
            "used_bytes": int(dev.get("UsedBytes", 0)), "size_bytes": int(dev["PhysicalSize"]),
            "sector_size": int(dev.get("SectorSize", 0)), "metadata_size": None, "firmware": dev.get("Firmware", ""),
        })
    return out


def same_size(printed_bytes, exact_bytes):
    """Whether a size read from the table (rounded to 2 decimals of its SI unit) matches ``exact_bytes``."""
    unit = 1
    value = float(exact_bytes)
    while value >= 1000 and unit < 10 ** 18:
        value /= 1000.0
        unit *= 1000
    return abs(printed_bytes - exact_bytes) <= 0.005 * unit + 1
