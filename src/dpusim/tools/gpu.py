"""Twin ``nvidia-smi`` for a GPU host: default table, ``topo -m`` / ``topo -mp``, ``-q`` (``-d MEMORY``).

The GPU inventory is ``dpusim.linux_state.gpus`` (default 8x H100 80GB HBM3, driver 550.127.08, CUDA 12.4;
``linux_state.configure_gpus`` changes it). The topology puts GPUs 0..N/2-1 on NUMA node 0 and the rest on node 1;
a card's NICs sit on the card's NUMA node (profile). Link words: NV18 between GPUs for ``-m`` (NVSwitch H100
system), PCIe words (NODE same NUMA node, SYS across) for ``-mp``; PIX between two functions of one card.
On a DPU (or a host with no GPU) the real nvidia-smi found later on PATH answers, if any.
"""

from __future__ import annotations

import datetime as dt

from dpusim import linux_state as ls
from dpusim import state
from dpusim.render import gpu as render
from dpusim.tools._common import ToolExit, emit, passthrough, run_tool, visible_cards

NAMES = ("nvidia-smi",)

CPU_AFFINITY = {0: "0-55,112-167", 1: "56-111,168-223"}  # model: 2 sockets x 56 cores with SMT


def _topo(node: state.Node, gpus: list[dict], pcie_only: bool) -> str:
    devices: list[dict] = []
    numa: dict[str, int] = {}
    card_of: dict[str, object] = {}
    for g in gpus:
        name = f"GPU{g['index']}"
        devices.append({"name": name, "cpu_affinity": CPU_AFFINITY[g["numa"]], "numa_affinity": str(g["numa"]),
                        "gpu_numa_id": "N/A"})
        numa[name] = g["numa"]
    nic = 0
    for card in visible_cards(node):
        entry = node.card_entry(card)
        for fn in entry["functions"]:
            name = f"NIC{nic}"
            devices.append({"name": name, "nic": fn["rdma"]})
            numa[name] = max(int(entry.get("numa", 0)), 0)
            card_of[name] = card.dir
            nic += 1
    matrix = {}
    for a in devices:
        for b in devices:
            x, y = a["name"], b["name"]
            if x == y:
                continue
            if x.startswith("GPU") and y.startswith("GPU") and not pcie_only:
                word = "NV18"
            elif x in card_of and y in card_of and card_of[x] == card_of[y]:
                word = "PIX"
            else:
                word = "NODE" if numa[x] == numa[y] else "SYS"
            matrix[(x, y)] = word
    return render.topo(devices, matrix, nvlink_legend=not pcie_only)


# What nvidia-smi prints (stdout, exit status 9 = NVML_ERROR_DRIVER_NOT_LOADED) when the driver does not answer;
# the sentence as real machines print it (e.g. the nvidia_smi section of a driver bug report and many user reports).
DRIVER_DOWN = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
               "latest NVIDIA driver is installed and running.\n")


def body(argv: list[str], prog: str) -> int:
    with state.open_node(write=False) as node:
        if node.role == "host" and node.faults.get("gpu_driver_down") is not None:
            raise ToolExit(DRIVER_DOWN, rc=9)
        gpus = ls.gpus(node)
        cfg = ls.gpu_config(node)
        if node.role != "host":
            return passthrough("nvidia-smi", argv)
        if not gpus:
            raise ToolExit("No devices were found", rc=6)
        info = {"driver_version": cfg["driver_version"], "cuda_version": cfg["cuda_version"], "gpus": gpus}
        now = dt.datetime.now()
        if not argv:
            emit(render.table(info, now))
            return 0
        if argv[0] == "topo" and len(argv) == 2 and argv[1] in ("-m", "--matrix", "-mp", "--matrix_pci"):
            emit(_topo(node, gpus, pcie_only=argv[1] in ("-mp", "--matrix_pci")))
            return 0
        if argv[0] in ("-q", "--query"):
            rest = argv[1:]
            if not rest:
                emit(render.query(info, now))
                return 0
            if rest in (["-d", "MEMORY"], ["--display=MEMORY"], ["--display", "MEMORY"]):
                emit(render.query(info, now, memory_only=True))
                return 0
    raise ToolExit("dpusim: nvidia-smi: the twin answers the default table, 'topo -m', 'topo -mp', '-q' and "
                   f"'-q -d MEMORY' only, not: {' '.join(argv)}", rc=2, stream="stderr")


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
