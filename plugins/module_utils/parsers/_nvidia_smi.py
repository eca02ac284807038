# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``nvidia-smi`` (the default table) and ``nvidia-smi topo -m`` / ``topo -mp``.

The default table (verbatim samples ``shared/corpus/nvidia-smi/h100-*``: the 535 layout with a
22-wide Bus-Id column and the 550+ layout with a 24-wide one) is read by cells between ``|``, never
by column offsets, so moved widths do not matter. Per GPU the table prints three rows::

    |   0  NVIDIA H100 80GB HBM3          On  |   00000000:C3:00.0 Off |                    0 |
    | N/A   26C    P0             75W /  700W |       1MiB /  81559MiB |      0%      Default |
    |                                         |                        |             Disabled |

(older drivers print no third row). ``nvidia-smi -l`` repeats the whole table; only the first sample
is read. The processes box is not parsed.

``topo -m`` / ``-mp`` (verbatim sample ``topo-mp-L40S-10nics.txt``): a TAB-separated matrix whose
header names the devices (``GPU0 .. NIC0 ..``) then ``CPU Affinity``, ``NUMA Affinity`` and (newer
drivers) ``GPU NUMA ID``; a row per device; then ``Legend:`` and ``NIC Legend:`` (``NIC0: mlx5_0``).
Cells are split on any whitespace, so tab-expanded copies read the same.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
    to_int,
)

_VERSION_RE = LazyPattern(r"Driver Version:\s*(?P<driver>\S+)(?:\s+CUDA Version:\s*(?P<cuda>\S+))?")
_SMI_RE = LazyPattern(r"NVIDIA-SMI\s+(?P<smi>\S+)")
_FIRST_CELL_RE = LazyPattern(r"^\s*(?P<index>\d+)\s+(?P<name>\S.*?)\s+(?P<persistence>On|Off)\s*$")
_BUS_CELL_RE = LazyPattern(r"^\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(?P<disp>\S+)\s*$")
_MEM_CELL_RE = LazyPattern(r"^\s*(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB\s*$")
_STATS_CELL_RE = LazyPattern(
    r"^\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<power>\S+)\s*/\s*(?P<cap>\S+)\s*$"
)
_UTIL_CELL_RE = LazyPattern(r"^\s*(?P<util>\S+)\s+(?P<compute>\S.*?)\s*$")


def _unit_int(value, unit):
    """``"26C"`` -> 26, ``"75W"`` -> 75, ``"0%"`` -> 0; ``"N/A"`` and anything else -> None."""
    if value is None or not value.endswith(unit):
        return None
    number = to_int(value[: -len(unit)])
    return number if isinstance(number, int) else None


def _cells(line):
    stripped = line.strip()
    if not (stripped.startswith("|") and stripped.endswith("|")):
        return None
    return stripped[1:-1].split("|")


def parse_nvidia_smi(text):
    kind = "nvidia-smi"
    lines = split_lines(text)
    result = {"driver_version": None, "cuda_version": None, "smi_version": None, "gpus": []}
    headers = 0
    gpu = None
    row = 0
    for number, line in enumerate(lines, 1):
        if "NVIDIA-SMI" in line and "Driver Version" in line:
            headers += 1
            if headers > 1:
                break  # nvidia-smi -l: the next sample starts
            version = _VERSION_RE.search(line)
            if version is None:
                raise ParseError(kind, "header without 'Driver Version: X'", number, line)
            result["driver_version"] = version.group("driver")
            result["cuda_version"] = version.group("cuda")
            smi = _SMI_RE.search(line)
            result["smi_version"] = smi.group("smi") if smi else None
            continue
        if headers == 0:
            continue
        cells = _cells(line)
        if cells is None or len(cells) < 3:
            gpu = None
            continue
        first = _FIRST_CELL_RE.match(cells[0])
        bus = _BUS_CELL_RE.match(cells[1])
        if first and bus:
            gpu = {
                "index": int(first.group("index")),
                "name": first.group("name"),
                "persistence_mode": first.group("persistence"),
                "bus_id": bus.group("bus"),
                "display_active": bus.group("disp"),
                "ecc_uncorrected": to_int(cells[2].strip()) if cells[2].strip() else None,
                "fan": None, "temperature_c": None, "perf": None, "power_usage_w": None, "power_cap_w": None,
                "memory_used_mib": None, "memory_total_mib": None, "gpu_util_percent": None,
                "compute_mode": None, "mig_mode": None,
            }
            result["gpus"].append(gpu)
            row = 1
            continue
        if gpu is None:
            continue
        row += 1
        if row == 2:
            stats = _STATS_CELL_RE.match(cells[0])
            memory = _MEM_CELL_RE.match(cells[1])
            util = _UTIL_CELL_RE.match(cells[2])
            if stats:
                gpu["fan"] = stats.group("fan")
                gpu["temperature_c"] = _unit_int(stats.group("temp"), "C")
                gpu["perf"] = stats.group("perf")
                gpu["power_usage_w"] = _unit_int(stats.group("power"), "W")
                gpu["power_cap_w"] = _unit_int(stats.group("cap"), "W")
            if memory:
                gpu["memory_used_mib"] = int(memory.group("used"))
                gpu["memory_total_mib"] = int(memory.group("total"))
            if util:
                gpu["gpu_util_percent"] = _unit_int(util.group("util"), "%")
                gpu["compute_mode"] = util.group("compute")
        elif row == 3 and not cells[0].strip() and cells[2].strip():
            gpu["mig_mode"] = cells[2].strip()
            gpu = None
    if headers == 0:
        for number, line in enumerate(lines, 1):
            if line.strip():
                raise ParseError(kind, "no 'NVIDIA-SMI ... Driver Version:' header (nvidia-smi table expected)",
                                 number, line)
        raise ParseError(kind, "empty output")
    return result


# ---------------------------------------------------------------------------------------------
# nvidia-smi topo -m / -mp
# ---------------------------------------------------------------------------------------------

_NIC_LEGEND_RE = LazyPattern(r"^\s*(?P<nic>NIC\d+):\s*(?P<dev>\S+)\s*$")
_LEGEND_RE = LazyPattern(r"^\s+(?P<code>X|[A-Z]+\d*|NV#)\s+=\s+(?P<text>\S.*?)\s*$")
_HEADER_START_RE = LazyPattern(r"^(GPU|NIC)\d+(\s|$)")


def _header_devices(line):
    """Device names of the header: every word before ``CPU Affinity`` (or all words if it is missing)."""
    tokens = line.split()
    for i in range(len(tokens) - 1):
        if tokens[i] == "CPU" and tokens[i + 1] == "Affinity":
            return tokens[:i], " ".join(tokens[i:])
    return tokens, ""


def _trailer(kind, line, devices, titles, number):
    """``(cpu_affinity, numa_affinity, gpu_numa_id)`` of a matrix row; empty cells are None.

    With TABs (as nvidia-smi prints) the cells are exact: after the link cells come CPU affinity,
    NUMA affinity, then an empty cell and the GPU NUMA ID (driver 535+). A CPU affinity can be empty
    (seen in a real capture, see the fixtures). Tab-expanded copies lose empty cells: when one word
    fewer than the titles is left and the header has ``GPU NUMA ID``, the empty one is taken to be
    the CPU affinity (NUMA affinity and GPU NUMA ID always print a value or N/A).
    """
    if "\t" in line:
        cells = [cell.strip() for cell in line.split("\t")]
        rest = cells[1 + len(devices):]
        values = [cell or None for cell in rest]
        cpu = values[0] if values else None
        numa = values[1] if len(values) > 1 else None
        gpu_numa = next((v for v in reversed(values[2:]) if v), None)
        return cpu, numa, gpu_numa
    rest = line.split()[1 + len(devices):]
    has_gpu_numa = "GPU NUMA ID" in titles
    if has_gpu_numa and len(rest) == 2:
        return None, rest[0], rest[1]
    if len(rest) > 3:
        raise ParseError(kind, "more cells after the matrix than the header has titles", number, line)
    rest = rest + [None] * (3 - len(rest))
    return rest[0], rest[1], rest[2]


def parse_topo(text):
    kind = "nvidia-smi-topo"
    lines = split_lines(text)
    devices = None
    titles = ""
    header_no = 0
    matrix, cpu, numa, gpu_numa, nics, legend = {}, {}, {}, {}, {}, {}
    section = "matrix"
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if devices is None:
            if "CPU Affinity" in line or _HEADER_START_RE.match(stripped):
                devices, titles = _header_devices(stripped)
                header_no = number
                if not devices:
                    raise ParseError(kind, "header names no device", number, line)
            continue
        if stripped == "Legend:":
            section = "legend"
            continue
        if stripped == "NIC Legend:":
            section = "nics"
            continue
        if section == "nics":
            nic = _NIC_LEGEND_RE.match(line)
            if nic:
                nics[nic.group("nic")] = nic.group("dev")
            continue
        if section == "legend":
            entry = _LEGEND_RE.match(line)
            if entry:
                legend[entry.group("code")] = entry.group("text")
            continue
        tokens = stripped.split()
        if tokens[0] not in devices:
            continue  # driver notes between the matrix and the legend
        if len(tokens) < 1 + len(devices):
            raise ParseError(kind, f"row has {len(tokens) - 1} link cells, the header names {len(devices)} devices",
                             number, line)
        name = tokens[0]
        matrix[name] = dict(zip(devices, tokens[1:1 + len(devices)], strict=True))
        cpu[name], numa[name], gpu_numa[name] = _trailer(kind, line.strip("\r\n "), devices, titles, number)
    if devices is None:
        for number, line in enumerate(lines, 1):
            if line.strip():
                raise ParseError(kind, "no matrix header ('GPU0 ... CPU Affinity')", number, line)
        raise ParseError(kind, "empty output")
    if not matrix:
        raise ParseError(kind, "matrix header without rows", header_no, lines[header_no - 1])
    return {
        "devices": devices,
        "matrix": matrix,
        "nics": nics,
        "cpu_affinity": {k: v for k, v in cpu.items() if v is not None},
        "numa_affinity": {k: v for k, v in numa.items() if v is not None},
        "gpu_numa_id": {k: v for k, v in gpu_numa.items() if v is not None},
        "legend": legend,
    }


PARSERS = {"nvidia-smi": parse_nvidia_smi, "nvidia-smi-topo": parse_topo}
