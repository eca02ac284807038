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
"""

from __future__ import annotations

import os
import socket

from dpusim import linux_state as ls
from dpusim import state
from dpusim.tools._common import ToolExit, emit, run_tool

NAMES = ("all_reduce_perf",)

NCCL_RELEASE = "2.27.3"
PEAK_BUSBW = 360.0  # GB/s, model
LATENCY_US = 12.0  # model
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


def _timing(size: int, n: int) -> tuple[float, float, float]:
    factor = 2.0 * (n - 1) / n
    algbw_peak = PEAK_BUSBW / factor if factor else PEAK_BUSBW * 10
    t = LATENCY_US + size / (algbw_peak * 1e3)  # GB/s = 1e3 bytes/us
    algbw = size / t / 1e3
    return t, algbw, algbw * factor


def body(argv: list[str], prog: str) -> int:
    opts = _args(argv)
    with state.open_node(write=False) as node:
        gpus = ls.gpus(node)
        cuda = ls.gpu_config(node)["cuda_version"]
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
        t, algbw, busbw = _timing(size, opts["ngpus"])
        rows.append({"size": size, "out": (t, algbw, busbw), "in": (t, algbw, busbw)})
        size *= opts["factor"]
    emit(render({**opts, "ranks": ranks, "rows": rows, "version": "%s+cuda%s" % (NCCL_RELEASE, cuda)}))
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
