"""nvidia-smi renderers (default table, ``topo -m`` / ``-mp``, ``-q``).

nvidia-smi is closed source; every layout here is taken from captures:
- default table: the 550-series layout of corpus/nvidia-smi/h100-1gpu-550-no-processes (verbatim): cells 41/24/22
  wide, date line in asctime form (the 535 sample shows the space-padded day). Only the "No running processes
  found" process box is rendered: the twin's GPUs run no processes (a box with process rows has no capture here).
- ``topo -mp``: corpus/nvidia-smi/topo-mp-L40S-10nics (verbatim, TAB separated, NIC rows end in four TABs, header
  starts with a TAB and four spaces). ``topo -m`` uses the same layout; its extra legend line for NVLink
  (``NV#``) is not in the corpus: it is taken from the wording nvidia-smi prints for NVLink systems and is marked
  as such in ``NV_LEGEND``.
- ``-q``: no capture in the corpus. Layout (leading blank line, banner, 42-column labels for the 470..550 series,
  4-space nesting) from public ``nvidia-smi -q`` captures found through the code index (470.256.02 ``-q -d CLOCK``,
  375.66 ``-q`` memory fixture, 525.147.01 ``-q``). Only the sections listed in ``Q_SECTIONS`` are rendered; the
  real tool prints many more (clocks, power, ECC, retired pages, processes ...).
"""

# ruff: noqa: UP031  (printf-style formats mirror the fixed-width cells of the captured layout)
from __future__ import annotations

import datetime as dt

SEP = "+-----------------------------------------+------------------------+----------------------+"
HEADER_ROWS = (
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
    "|                                         |                        |               MIG M. |",
    "|=========================================+========================+======================|",
)
PROCESSES_NONE = (
    "+-----------------------------------------------------------------------------------------+",
    "| Processes:                                                                              |",
    "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
    "|        ID   ID                                                               Usage      |",
    "|=========================================================================================|",
    "|  No running processes found                                                             |",
    "+-----------------------------------------------------------------------------------------+",
)


def date_line(now: dt.datetime) -> str:
    """asctime form, day padded with a space (``Mon Oct  6 03:29:21 2025``)."""
    return now.strftime("%a %b ") + f"{now.day:>2}" + now.strftime(" %H:%M:%S %Y")


def table(info: dict, now: dt.datetime) -> str:
    """info: ``{"driver_version", "cuda_version", "gpus": [{"index", "name", "persistence" (On|Off), "bus_id"
    (00000000:C3:00.0), "disp_a", "ecc" ("0"|"N/A"), "fan", "temp_c", "perf", "power_w", "power_cap_w",
    "mem_used_mib", "mem_total_mib", "util_pct", "compute_mode", "mig"}]}``."""
    out = [date_line(now),
           "+" + "-" * 89 + "+",
           "| NVIDIA-SMI %-23sDriver Version: %-15sCUDA Version: %-9s|" % (
               info.get("smi_version", info["driver_version"]), info["driver_version"], info["cuda_version"]),
           "|-----------------------------------------+------------------------+----------------------+"]
    out += HEADER_ROWS
    for g in info["gpus"]:
        out.append("|%4d  %-29s%4s  |%19s %3s |%21s |" % (
            g["index"], g["name"], g["persistence"], g["bus_id"], g["disp_a"], g["ecc"]))
        out.append("|%4s%5sC%6s%15sW / %4sW |%8sMiB / %6sMiB |%7s%%%13s |" % (
            g["fan"], g["temp_c"], g["perf"], g["power_w"], g["power_cap_w"], g["mem_used_mib"],
            g["mem_total_mib"], g["util_pct"], g["compute_mode"]))
        out.append("|%41s|%24s|%21s |" % ("", "", g["mig"]))
        out.append(SEP)
    out.append("")
    out += PROCESSES_NONE
    return "".join(line + "\n" for line in out)


LEGEND = (
    "  X    = Self",
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
    "  PIX  = Connection traversing at most a single PCIe bridge",
)
# Not in the corpus (no topo -m capture of an NVLink system): wording of the NVLink legend line of nvidia-smi.
NV_LEGEND = "  NV#  = Connection traversing a bonded set of # NVLinks"


def topo(devices: list[dict], matrix: dict[tuple[str, str], str], nvlink_legend: bool) -> str:
    """devices: ``[{"name": "GPU0"|"NIC0", "cpu_affinity"?, "numa_affinity"?, "gpu_numa_id"?, "nic"?}]``;
    matrix[(row, col)] is the link word (``X`` for self is rendered as `` X ``)."""
    names = [d["name"] for d in devices]
    out = ["\t    " + "\t".join(names) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for d in devices:
        cells = [" X " if col == d["name"] else matrix[(d["name"], col)] for col in names]
        out.append(d["name"] + "\t" + "\t".join(cells) + "\t%s\t%s\t\t%s" % (
            d.get("cpu_affinity", ""), d.get("numa_affinity", ""), d.get("gpu_numa_id", "")))
    out += ["", "Legend:", ""]
    out += LEGEND
    if nvlink_legend:
        out.append(NV_LEGEND)
    nics = [d for d in devices if d.get("nic")]
    if nics:
        out += ["", "NIC Legend:", ""]
        out += [f"  {d['name']}: {d['nic']}" for d in nics]
    return "".join(line + "\n" for line in out)


Q_SECTIONS = ("Product Name", "Product Brand", "Product Architecture", "Persistence Mode", "MIG Mode",
              "Serial Number", "GPU UUID", "VBIOS Version", "PCI", "FB Memory Usage", "BAR1 Memory Usage")
Q_WIDTH = 42


def _q_line(indent: int, label: str, value: object = None) -> str:
    pad = " " * indent + label
    if value is None:
        return pad
    return f"{pad:<{Q_WIDTH}}: {value}"


def query(info: dict, now: dt.datetime, memory_only: bool = False) -> str:
    """``nvidia-smi -q`` (``-d MEMORY`` when memory_only) for the sections in ``Q_SECTIONS``."""
    out = ["", "==============NVSMI LOG==============", "",
           _q_line(0, "Timestamp", date_line(now)),
           _q_line(0, "Driver Version", info["driver_version"]),
           _q_line(0, "CUDA Version", info["cuda_version"]), "",
           _q_line(0, "Attached GPUs", len(info["gpus"]))]
    for g in info["gpus"]:
        out.append(f"GPU {g['bus_id']}")
        if not memory_only:
            out += [_q_line(4, "Product Name", g["name"]), _q_line(4, "Product Brand", g["brand"]),
                    _q_line(4, "Product Architecture", g["architecture"]),
                    _q_line(4, "Persistence Mode", "Enabled" if g["persistence"] == "On" else "Disabled"),
                    _q_line(4, "MIG Mode"), _q_line(8, "Current", g["mig"]), _q_line(8, "Pending", g["mig"]),
                    _q_line(4, "Serial Number", g["serial"]), _q_line(4, "GPU UUID", g["uuid"]),
                    _q_line(4, "VBIOS Version", g["vbios"]),
                    _q_line(4, "PCI"), _q_line(8, "Bus", "0x" + g["bus_id"].split(":")[1]),
                    _q_line(8, "Device", "0x" + g["bus_id"].split(":")[2].split(".")[0]),
                    _q_line(8, "Domain", "0x" + g["bus_id"].split(":")[0][-4:]),
                    _q_line(8, "Device Id", g["pci_device_id"]), _q_line(8, "Bus Id", g["bus_id"])]
        out += [_q_line(4, "FB Memory Usage"), _q_line(8, "Total", f"{g['mem_total_mib']} MiB"),
                _q_line(8, "Reserved", f"{g['mem_reserved_mib']} MiB"),
                _q_line(8, "Used", f"{g['mem_used_mib']} MiB"),
                _q_line(8, "Free", f"{g['mem_total_mib'] - g['mem_reserved_mib'] - g['mem_used_mib']} MiB"),
                _q_line(4, "BAR1 Memory Usage"), _q_line(8, "Total", f"{g['bar1_total_mib']} MiB"),
                _q_line(8, "Used", "1 MiB"), _q_line(8, "Free", f"{g['bar1_total_mib'] - 1} MiB"), ""]
    return "".join(line + "\n" for line in out)
