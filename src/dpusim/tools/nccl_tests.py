# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tool)
"""Twin ``all_reduce_perf`` (nccl-tests), one process on this host's GPUs (no MPI launcher).

Layout: the verbatim samples ``corpus/nccl-tests/all_reduce_perf-2node-*``: the parameter line, ``# Using devices``
and one ``#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s`` line per GPU, ``NCCL version``, the three
header lines (trailing blanks kept), one row per size (``%12li  %12li  %8s  %6s  %6i`` then, out-of-place and
in-place, ``  %7s  %6.2f  %6.2f  %5g`` with the time as ``%7.2f`` below 100 us, ``%7.1f`` below 10000, else
``%7.0f``), ``# Out of bounds values : 0 OK``, ``# Avg bus bandwidth    : %g `` (the mean busbw of all rows,
out-of-place and in-place) and ``#``.

Forms answered: ``all_reduce_perf [-b MIN] [-e MAX] [-f FACTOR] [-g NGPUS] [-w N] [-n N] [-c 0|1]``; sizes take
K, M, G suffixes (powers of 1024, as nccl-tests parses them).

Model (not a capture): ring all-reduce over the GPUs' NVLink; bus bandwidth saturates at 360 GB/s (H100 NVLink 4,
18 links; a model value below the 450 GB/s unidirectional peak) and each call costs 12 us of latency. busbw =
algbw * 2 (n - 1) / n (nccl-tests doc/PERFORMANCE.md). No GPU: the tool fails as CUDA does (``cudaGetDeviceCount``).
NCCL version ``2.27.3`` (the corpus samples' release) with this node's CUDA version.

Network path (``NET_MODEL``), when NCCL may use neither P2P nor shared memory (``NCCL_P2P_DISABLE=1`` and
``NCCL_SHM_DISABLE=1``, from the environment or ``/etc/nccl.conf``; the environment wins): NCCL then sends every
ring hop through its network transport (NCCL env docs: "NCCL uses network (IB or IP sockets) to communicate ...
when SHM is disabled", https://docs.nvidia.com/deeplearning/nccl/archives/nccl_247/nccl-developer-guide/docs/
env.html), i.e. through the RoCE ports of ``NCCL_IB_HCA``. The bus bandwidth then follows this node's own state
(never the parsers, never another node), one factor per setting, each from the twin's state:
- ceiling: the port's wire rate with RoCE v2 payload efficiency, the same numbers as the twin's ``ib_write_bw``
  (``perftest.bandwidth_gbps``; nccl-tests doc/PERFORMANCE.md: bus bandwidth approaches the slowest link's speed);
- GPUDirect RDMA: used for a GPU when ``nvidia_peermem`` is loaded and registered and the GPU-NIC path is within
  ``NCCL_NET_GDR_LEVEL`` (NCCL env docs, NCCL_NET_GDR_LEVEL: the maximum NIC-GPU distance for GPU Direct RDMA).
  Without it NCCL stages through host memory: ``STAGED_FACTOR``;
- PCIe ACS: with ACS Control non-zero on a bridge above the GPU or the card, P2P TLPs are redirected up to the root
  complex (NCCL troubleshooting guide, "PCI Access Control Services (ACS)": "significant performance reduction or
  even a hang", https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html): ``ACS_FACTOR``;
- GID index: ``NCCL_IB_GID_INDEX`` must be a GID of the port (absent: NCCL cannot connect, the run fails); a
  RoCE v1 GID carries no IP header, so no DSCP: its traffic lands on priority 0 (``perftest.priority_of`` with
  DSCP 0);
- PFC: the priority the traffic gets (DSCP of ``NCCL_IB_TC`` through the port's dscp2prio, or priority 0) without
  PFC is lossy: ``perftest.LOSSY_FACTOR`` (the same go-back-N loss model as the twin's ib_write_bw);
- NIC-GPU affinity: the GPU-NIC path (``nvidia-smi topo -m`` words: NODE same NUMA node, SYS across sockets; the
  twin has no GPU under the card's PCIe switch) compared with ``NCCL_NET_GDR_LEVEL`` as above.
The ring runs at its slowest rank (nccl-tests doc/PERFORMANCE.md: ring all-reduce time is set by the slowest link).
"""

from __future__ import annotations

import os
import socket

from dpusim import linux_state as ls
from dpusim import state
from dpusim.tools import perftest
from dpusim.tools._common import ToolExit, emit, run_tool

NAMES = ("all_reduce_perf",)

NCCL_RELEASE = "2.27.3"
PEAK_BUSBW = 360.0  # GB/s, model
LATENCY_US = 12.0  # model
# Model values of the network path (see the module docstring for where each effect comes from):
# without GPUDirect RDMA every byte crosses PCIe twice (GPU -> host memory, host memory -> NIC) and the proxy copies
# it: half the bus bandwidth, as a 4-node 100 Gb/s IB cluster without nvidia_peermem measured against its
# expectation (6 GB/s where 12 were expected; NVIDIA/nccl issue #465).
STAGED_FACTOR = 0.5
# ACS redirect: P2P reads and writes take the trip up to the root complex and back, and the guide warns of hangs;
# the guide gives no figure, so the model puts it below staging (which at least uses the CPU's optimised path:
# NVIDIA/nccl #465, "CPU are very, very bad PCI switches", said of P2P through the CPU).
ACS_FACTOR = 0.3
# NCCL_NET_GDR_LEVEL words, nearest first (NCCL env docs); the twin takes PXB when it is unset.
GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")
GDR_DEFAULT = "PXB"
SMI_TO_GDR = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS"}
HEADER = (
    "#                                                              out-of-place                       in-place          \n"  # noqa: E501
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"  # noqa: E501
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n"  # noqa: E501
)
USAGE = ("dpusim: all_reduce_perf: the twin answers [-b MIN] [-e MAX] [-f FACTOR] [-g NGPUS] [-w N] [-n N] [-c 0|1] "
         "only, not: %s")


def parse_size(text: str) -> int:
    units = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    text = text.strip()
    if text and text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def time_text(us: float) -> str:
    if us >= 10000.0:
        return "%7.0f" % us
    if us >= 100.0:
        return "%7.1f" % us
    return "%7.2f" % us


def render(run: dict) -> str:
    out = ["# nThread 1 nGpus %d minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d agg iters: 1 "
           "validation: %d graph: 0\n" % (run["ngpus"], run["min"], run["max"], run["factor"], run["warmup"],
                                          run["iters"], run["check"]),
           "#\n", "# Using devices\n"]
    for rank in run["ranks"]:
        out.append("#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s\n"
                   % (rank["rank"], rank["pid"], rank["host"], rank["device"], rank["bus"], rank["name"]))
    out.append("NCCL version %s\n#\n" % run["version"])
    out.append(HEADER)
    total, count = 0.0, 0
    for row in run["rows"]:
        line = "%12li  %12li  %8s  %6s  %6i" % (row["size"], row["size"] // 4, "float", "sum", -1)
        for t, algbw, busbw in (row["out"], row["in"]):
            line += "  %7s  %6.2f  %6.2f  %5g" % (time_text(t), algbw, busbw, 0)
            total += busbw
            count += 1
        out.append(line + "\n")
    out.append("# Out of bounds values : 0 OK\n")
    out.append("# Avg bus bandwidth    : %g \n#\n" % (total / count if count else 0.0))
    return "".join(out)


def _args(argv: list[str]) -> dict:
    opts = {"min": 33554432, "max": 33554432, "factor": 2, "ngpus": 1, "warmup": 5, "iters": 20, "check": 1}
    keys = {"-b": "min", "-e": "max", "-f": "factor", "-g": "ngpus", "-w": "warmup", "-n": "iters", "-c": "check"}
    i = 0
    while i < len(argv):
        arg, value = argv[i], None
        if arg in keys and i + 1 < len(argv):
            value = argv[i + 1]
            i += 2
        elif arg[:2] in keys and len(arg) > 2:
            arg, value = arg[:2], arg[2:]
            i += 1
        else:
            raise ToolExit(USAGE % " ".join(argv), rc=1, stream="stderr")
        try:
            opts[keys[arg]] = parse_size(value) if keys[arg] in ("min", "max") else int(value)
        except ValueError:
            raise ToolExit(USAGE % " ".join(argv), rc=1, stream="stderr") from None
    if opts["min"] <= 0 or opts["max"] < opts["min"] or opts["factor"] < 2 or opts["ngpus"] < 1:
        raise ToolExit(USAGE % " ".join(argv), rc=1, stream="stderr")
    return opts


def _timing(size: int, n: int, peak: float = PEAK_BUSBW) -> tuple[float, float, float]:
    factor = 2.0 * (n - 1) / n
    algbw_peak = peak / factor if factor else peak * 10
    t = LATENCY_US + size / (algbw_peak * 1e3)  # GB/s = 1e3 bytes/us
    algbw = size / t / 1e3
    return t, algbw, algbw * factor


def nccl_settings(node: state.Node) -> dict[str, str]:
    """NCCL_* settings as NCCL reads them: ``/etc/nccl.conf`` of this node, then the environment on top."""
    out: dict[str, str] = {}
    conf = node.root / "etc" / "nccl.conf"
    if conf.is_file():
        for raw in conf.read_text().splitlines():
            line = raw.strip()
            if line and not line.startswith("#") and "=" in line:
                name, _sep, value = line.partition("=")
                out[name.strip()] = value.strip()
    out.update({k: v for k, v in os.environ.items() if k.startswith("NCCL_")})
    return out


def _gdr_level(value: str) -> str:
    word = (value or GDR_DEFAULT).strip().upper()
    if word.isdigit():  # the older integer form: 0 LOC .. 4/5 SYS
        word = GDR_LEVELS[min(int(word), len(GDR_LEVELS) - 1)]
    if word not in GDR_LEVELS:
        raise ToolExit("dpusim: all_reduce_perf: NCCL_NET_GDR_LEVEL %r is not one of %s"
                       % (value, ", ".join(GDR_LEVELS)), rc=1, stream="stderr")
    return word


def _hcas(node: state.Node, value: str) -> list[dict]:
    ports = ls.rdma_ports(node)
    if not value:
        return ports[:1]
    out = []
    for item in value.lstrip("^=").split(","):
        dev, _sep, port = item.partition(":")
        match = next((p for p in ports if p["ibdev"] == dev.strip() and str(p["port"]) == (port or "1")), None)
        if match is not None:
            out.append(match)
    if not out:
        # NCCL's net_ib init finds no device of the list and falls back to sockets; with P2P and SHM off the twin
        # says it plainly instead of modelling TCP
        raise ToolExit("dpusim: all_reduce_perf: NCCL_IB_HCA=%s names no RDMA port of this node (NET/IB : No device "
                       "found)" % value, rc=1, stream="stderr")
    return out


def net_peak(node: state.Node, gpus: list[dict], settings: dict[str, str]) -> float:
    """Bus bandwidth ceiling (GB/s) of a ring whose hops all go through the NICs of ``NCCL_IB_HCA``."""
    hcas = _hcas(node, settings.get("NCCL_IB_HCA", ""))
    gid_index = int(settings.get("NCCL_IB_GID_INDEX", "-1") or -1)
    tc = int(settings.get("NCCL_IB_TC", "0") or 0)
    level = GDR_LEVELS.index(_gdr_level(settings.get("NCCL_NET_GDR_LEVEL", "")))
    peermem = "nvidia_peermem" in ls.modules(node) and ls.peermem_sysfs(node).is_file()
    bridges = ls.pcie_bridges(node)
    acs_above = {b["below"] for b in bridges if ls.acs_ctl(node, b["address"])}
    ports = []
    for p in hcas:
        table = ls.gids(node, p)
        if gid_index < 0:  # NCCL picks a RoCE v2 GID (IPv4 first) when the index is not given
            v2 = [g for g in table if g[2] == "v2"]
            entry = (v2[1:] or v2)[0] if v2 else None
        else:
            entry = next((g for g in table if g[0] == gid_index), None)
        if entry is None:
            raise ToolExit("dpusim: all_reduce_perf: NCCL_IB_GID_INDEX %d is not a GID of %s port %d (NCCL WARN "
                           "NET/IB : ibv_modify_qp failed)" % (gid_index, p["ibdev"], p["port"]), rc=1,
                           stream="stderr")
        q = ls.qos(node, p["netdev"])
        tos = tc if entry[2] == "v2" else 0  # RoCE v1: no IP header, no DSCP
        lossless = bool(q.get("pfc", [0] * 8)[perftest.priority_of(q, tos)])
        mtu = perftest.active_mtu(ls.netdev_mtu(node, p["netdev"]))
        card_pci = node.card_entry(p["card"])["functions"][0]["pci"]
        ports.append({"gbytes": perftest.bandwidth_gbps(mtu, lossless) / 8, "numa": max(int(
            node.card_entry(p["card"]).get("numa", 0)), 0), "acs": card_pci in acs_above})
    rates = []
    for i, g in enumerate(gpus):
        p = ports[i % len(ports)]  # NCCL spreads the channels of the ranks over the listed NICs
        path = "PHB" if g["numa"] == p["numa"] else "SYS"
        gdr = peermem and GDR_LEVELS.index(path) <= level
        factor = 1.0 if gdr else STAGED_FACTOR
        if gdr and (p["acs"] or "0000:" + g["bus_id"][9:].lower() in acs_above):
            factor = ACS_FACTOR
        rates.append(p["gbytes"] * factor)
    return min(rates)


def body(argv: list[str], prog: str) -> int:
    opts = _args(argv)
    with state.open_node(write=False) as node:
        if node.role == "host" and node.faults.get("gpu_driver_down") is not None:
            # CUDA's answer when the kernel driver does not respond (cudaErrorNoDevice's neighbour, error 35/100
            # depending on the release); the twin says it plainly, as for no GPU below
            raise ToolExit("dpusim: all_reduce_perf: CUDA failure (cudaGetDeviceCount: the NVIDIA driver does not "
                           "answer)", rc=1, stream="stderr")
        gpus = ls.gpus(node)
        cuda = ls.gpu_config(node)["cuda_version"]
        settings = nccl_settings(node)
        net = settings.get("NCCL_P2P_DISABLE") == "1" and settings.get("NCCL_SHM_DISABLE") == "1"
        peak = net_peak(node, gpus[:opts["ngpus"]], settings) if net and gpus else PEAK_BUSBW
    if not gpus:
        # nccl-tests' CUDACHECK prints the failing file:line and the CUDA error text; the twin says it plainly
        raise ToolExit("dpusim: all_reduce_perf: no CUDA device on this node (cudaGetDeviceCount: no CUDA-capable "
                       "device is detected)", rc=1, stream="stderr")
    if opts["ngpus"] > len(gpus):
        raise ToolExit("dpusim: all_reduce_perf: -g %d but this node has %d GPUs" % (opts["ngpus"], len(gpus)),
                       rc=1, stream="stderr")
    host = socket.gethostname()
    ranks = [{"rank": i, "pid": os.getpid(), "host": host, "device": i,
              "bus": "0000:%s" % gpus[i]["bus_id"][9:14].lower(), "name": gpus[i]["name"]}
             for i in range(opts["ngpus"])]
    rows = []
    size = opts["min"]
    while size <= opts["max"]:
        t, algbw, busbw = _timing(size, opts["ngpus"], peak)
        rows.append({"size": size, "out": (t, algbw, busbw), "in": (t, algbw, busbw)})
        size *= opts["factor"]
    emit(render({**opts, "ranks": ranks, "rows": rows, "version": "%s+cuda%s" % (NCCL_RELEASE, cuda)}))
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
