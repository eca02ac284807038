# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``mst status`` and ``mst status -v`` (MFT). Kind: ``mst-status``.

MFT's ``mst`` is closed source; the layout is the one observed in the samples
(shared/corpus/mst/FORMAT-observed.md): a ``MST modules:`` section, then either
``PCI devices:`` (``-v``: a table DEVICE_TYPE / MST / PCI / RDMA / NET / NUMA, a blank
line after each row) or ``MST devices:`` (plain form: ``/dev/mst/<dev> - <access text>``
followed by indented ``domain:bus:dev.fn=...`` and ``Chip revision is: ..`` lines).

The table is read by tokens, not by column offsets: the widths change with the data
(``NA`` in the MST column, domain-prefixed BDFs) and between MFT releases, and published
copies strip the trailing padding. RDMA and NET may be empty, so the tokens after the PCI
column are told apart by what they look like: ``net-...`` (comma-joined) is NET, a last
integer is NUMA, anything else is the RDMA device. ``net`` lists the interface names without
the ``net-`` tag the tool puts in front of each (``net-p0,net-pf0hpf`` -> ``["p0", "pf0hpf"]``).
Lines the parser does not know inside a section are kept, stripped, in ``messages``.
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    no_structure,
    split_lines,
)

KIND = "mst-status"
_BDF_RE = LazyPattern(r"^(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]{1,2}$")
_SECTION_RE = LazyPattern(r"^(?P<name>[A-Za-z][A-Za-z ]*?)\s*:\s*$")
_NUMA_RE = LazyPattern(r"^-?\d+$")
_MODULE_RE = LazyPattern(r"^MST (?P<name>PCI(?: configuration)?) module (?P<state>is not loaded|loaded|is loaded)",
                         re.IGNORECASE)
_PLAIN_DEV_RE = LazyPattern(r"^(?P<mst>/\S+)\s+-\s+(?P<description>.*?)\s*$")


def _row(tokens, line_no, line):
    device = {
        "device_type": tokens[0],
        "mst": tokens[1],
        "pci": tokens[2],
        "rdma": None,
        "net": [],
        "numa": None,
    }
    rest = tokens[3:]
    if rest and _NUMA_RE.match(rest[-1]):
        device["numa"] = int(rest.pop())
    elif len(rest) > 1 and rest[-1] in ("NA", "N/A", "-"):
        rest.pop()  # NUMA printed as unknown; numa stays null
    for token in rest:
        if token.startswith("net-") or "," in token:
            device["net"].extend(part[4:] if part.startswith("net-") else part for part in token.split(",") if part)
        elif device["rdma"] is None:
            device["rdma"] = token
        else:
            raise ParseError(KIND, "more columns than DEVICE_TYPE MST PCI RDMA NET NUMA", line_no, line)
    return device


def parse_mst_status(text):
    lines = split_lines(text)
    modules = {}
    devices = []
    messages = []
    section = None
    seen_section = False
    table_header = False
    plain = None  # the device a plain-form continuation line belongs to
    for index, raw in enumerate(lines):
        line_no = index + 1
        line = raw.strip()
        if not line or set(line) == {"-"}:
            continue
        match = _SECTION_RE.match(line)
        if match and not raw[:1].isspace():
            section = match.group("name").lower()
            seen_section = True
            table_header = False
            plain = None
            continue
        if section == "mst modules":
            module = _MODULE_RE.match(line)
            if module:
                key = "pci_configuration" if "configuration" in module.group("name").lower() else "pci"
                modules[key] = module.group("state").lower() != "is not loaded"
            else:
                messages.append(line)
            continue
        if section == "pci devices":
            tokens = line.split()
            if tokens[0] == "DEVICE_TYPE":
                table_header = True
                continue
            if len(tokens) >= 3 and _BDF_RE.match(tokens[2]):
                devices.append(_row(tokens, line_no, raw))
                continue
            if tokens[0].endswith(")") or tokens[0] == "NA" or (len(tokens) > 1 and tokens[1].startswith("/dev/mst")):
                raise ParseError(KIND, "a device row needs DEVICE_TYPE MST PCI (a bus:dev.fn) ...", line_no, raw)
            messages.append(line)
            continue
        if section == "mst devices":
            found = _PLAIN_DEV_RE.match(line)
            if found and not raw[:1].isspace():
                plain = {
                    "device_type": None,
                    "mst": found.group("mst"),
                    "pci": None,
                    "rdma": None,
                    "net": [],
                    "numa": None,
                    "description": found.group("description"),
                    "chip_revision": None,
                }
                devices.append(plain)
                continue
            if plain is not None and raw[:1].isspace():
                for item in line.split():
                    key, sep, value = item.partition("=")
                    if sep and key == "domain:bus:dev.fn":
                        plain["pci"] = value
                if line.lower().startswith("chip revision is:"):
                    plain["chip_revision"] = line.split(":", 1)[1].strip()
                continue
            messages.append(line)
            continue
        if section is None:
            raise no_structure(KIND, lines, "'MST modules:' and 'PCI devices:' (mst status -v) sections")
        messages.append(line)
    if not seen_section:
        raise no_structure(KIND, lines, "'MST modules:' and 'PCI devices:' (mst status -v) sections")
    if section == "pci devices" and not table_header and not devices:
        raise ParseError(KIND, "the 'PCI devices:' section has no DEVICE_TYPE header and no rows", len(lines),
                         lines[-1])
    return {
        "modules": {"pci": modules.get("pci"), "pci_configuration": modules.get("pci_configuration")},
        "devices": devices,
        "messages": messages,
    }


PARSERS = {KIND: parse_mst_status}
