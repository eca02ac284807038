# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tool)
"""``nvme list`` (nvme-cli) on the GPU host: the NVMe namespaces the BlueField's SNAP emulates (dpusim.snap).

Layout: nvme-cli nvme-print-stdout.c ``list_item`` / ``stdout_simple_list`` (github.com/linux-nvme/nvme-cli,
commit 1494a4d9ae499049df876b6a2576bfbe0a621d23): columns Node 21, Generic 21, SN 20, Model 40, Namespace 10,
Usage 26, Format 16, FW Rev 8, left-aligned, one space apart, a dash line under the titles; Namespace
``0x%x``; Usage ``%6.2f %2sB / %6.2f %2sB`` with SI suffixes (powers of 1000); Format ``%3.0f %2sB + %2d B``
with binary suffixes. Older nvme-cli prints no Generic column and a decimal namespace (a real capture of that
form is quoted in microsoft/lisa's nvmecli tool). ``-o json``: ``{"Devices": [...]}`` with NameSpace,
DevicePath, GenericPath, Firmware, ModelNumber, SerialNumber, UsedBytes, MaximumLBA, PhysicalSize,
SectorSize (the keys nvme-cli's simple JSON list prints, as quoted by its users). No namespaces:
``No NVMe devices detected.`` on stderr (table form), rc 0. The model/serial/firmware values are modelled
(see dpusim.snap).
"""

from __future__ import annotations

import json

from dpusim import snap, state
from dpusim.tools._common import ToolExit, emit, run_tool

NAMES = ("nvme",)
WIDTHS = (21, 21, 20, 40, 10, 26, 16, 8)
TITLES = ("Node", "Generic", "SN", "Model", "Namespace", "Usage", "Format", "FW Rev")


def _si(value: float) -> tuple[float, str]:
    for suffix in ("", "k", "M", "G", "T", "P"):
        if value < 1000 or suffix == "P":
            return value, suffix
        value /= 1000.0
    return value, "P"


def _binary(value: float) -> tuple[float, str]:
    for suffix in ("", "Ki", "Mi", "Gi"):
        if value < 1024 or suffix == "Gi":
            return value, suffix
        value /= 1024.0
    return value, "Gi"


def _row(cells: list[str]) -> str:
    return " ".join("%-*s" % (w, c) for w, c in zip(WIDTHS, cells, strict=True)) + "\n"


def table(namespaces: list[dict]) -> str:
    out = _row(list(TITLES)) + _row(["-" * w for w in WIDTHS])
    for ns in namespaces:
        size, used = ns["blocks"] * ns["block_size"], ns["used_blocks"] * ns["block_size"]
        (u, us), (s, ss), (lba, ls) = _si(used), _si(size), _binary(ns["block_size"])
        out += _row(["/dev/nvme%dn%d" % (ns["instance"], ns["nsid"]), "/dev/ng%dn%d" % (ns["instance"], ns["nsid"]),
                     ns["serial"], ns["model"], "0x%x" % ns["nsid"],
                     "%6.2f %2sB / %6.2f %2sB" % (u, us, s, ss), "%3.0f %2sB + %2d B" % (lba, ls, 0), ns["firmware"]])
    return out


def as_json(namespaces: list[dict]) -> str:
    devices = [{"NameSpace": ns["nsid"], "DevicePath": "/dev/nvme%dn%d" % (ns["instance"], ns["nsid"]),
                "GenericPath": "/dev/ng%dn%d" % (ns["instance"], ns["nsid"]), "Firmware": ns["firmware"],
                "ModelNumber": ns["model"], "SerialNumber": ns["serial"],
                "UsedBytes": ns["used_blocks"] * ns["block_size"], "MaximumLBA": ns["blocks"],
                "PhysicalSize": ns["blocks"] * ns["block_size"], "SectorSize": ns["block_size"]} for ns in namespaces]
    return json.dumps({"Devices": devices}, indent=2) + "\n"


def body(argv: list[str], prog: str) -> int:
    argv = list(argv)
    if not argv or argv[0] != "list":
        raise ToolExit("%s: the twin knows only `nvme list [-o normal|json]`" % prog, rc=1, stream="stderr")
    fmt = "normal"
    rest = argv[1:]
    for index, word in enumerate(rest):
        if word in ("-o", "--output-format") and index + 1 < len(rest):
            fmt = rest[index + 1]
        elif word.startswith("--output-format="):
            fmt = word.split("=", 1)[1]
    if fmt not in ("normal", "json"):
        raise ToolExit("%s list: output format %r: the twin prints normal or json" % (prog, fmt), rc=1,
                       stream="stderr")
    with state.open_node(write=False) as node:
        namespaces = snap.host_namespaces(node) if node.role == "host" else []
    namespaces = sorted(namespaces, key=lambda n: (n["instance"], n["nsid"]))
    if fmt == "json":
        emit(as_json(namespaces))
    elif not namespaces:
        emit("No NVMe devices detected.\n", "stderr")
    else:
        emit(table(namespaces))
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
