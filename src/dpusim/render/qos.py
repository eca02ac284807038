"""mlnx_qos and cma_roce_mode / cma_roce_tos renderers.

mlnx_qos: ``corpus/mlnx_qos/FORMAT-from-source.md`` (mlnx-tools python/mlnx_qos ``pretty_print``), checked against
the tab-expanded capture cx-dscp-ets-pfc5-partial and the tab-preserving fixture fixture-tabs-pcp.
- dscp2prio lines come from the kernel DCB app table in dump order (the kernel prepends new entries, so the
  firmware default table set by ``--trust dscp`` reads 63..0 and each priority lists its DSCPs high to low, as the
  capture shows); at most 8 values per line.
- ``default priority:`` is printed; what follows it when a default priority is set is not in the corpus or the
  source we hold, so the twin never sets one (``--defltprio`` is refused by the front-end).
- The tc lines list only TCs that some priority maps to (``tc2up``), in first-seen order of the priorities.
cma_roce_mode / cma_roce_tos: ``corpus/show_gids/FORMAT-from-source.md`` and mlnx-tools sbin/cma_roce_{mode,tos}:
they print the configfs file, i.e. ``IB/RoCE v1`` / ``RoCE v2`` or the ToS number, one line.
"""

# ruff: noqa: UP031  (printf-style formats kept identical to the tools' own format strings)
from __future__ import annotations

TSA_STRICT, TSA_ETS, TSA_VENDOR = "strict", "ets", "vendor"


def _dscp_lines(app_table: list[tuple[int, int]]) -> list[str]:
    per_prio = [""] * 8
    for dscp, prio in app_table:
        per_prio[prio] += "%02d," % dscp
    lines = []
    for prio in range(8):
        s = per_prio[prio]
        pad = "\tprio:%d dscp:" % prio
        while len(s) > 24:
            lines.append(pad + s[:24])
            s = s[24:]
        if s:
            lines.append(pad + s)
    return lines


def mlnx_qos(q: dict) -> str:
    """q keys: dcbx ("os"|"fw"), trust ("pcp"|"dscp"), app_table [(dscp, prio)] in kernel dump order,
    buffer_size [8], max_buffer_size int|None, buffer_error bool, cable_len int, pfc [8 x 0/1], prio2buffer [8],
    prio_tc [8], tsa [8 x strict|ets|vendor], tc_bw [8], ratelimit [8 x kbit/s as the DCB maxrate reports it,
    0 = unlimited], printall bool, lldpad bool."""
    out = []
    if q.get("lldpad"):
        out.append("****** WARNING: lldpad service is running and may overwrite your settings ******")
        out.append("")
    out.append("DCBX mode: OS controlled" if q["dcbx"] == "os" else "DCBX mode: Firmware controlled")
    out.append("Priority trust state: " + q["trust"])
    if q["trust"] == "dscp":
        out.append("dscp2prio mapping:")
        out += _dscp_lines(q["app_table"])
    if q.get("default_priority_line", True):  # mlnx-tools before 25.07 (removed with --defltprio, commit 374d9b5)
        out.append("default priority:")
    if not q.get("buffer_error"):
        msg = "Receive buffer size (bytes): " + "".join("%1d," % b for b in q["buffer_size"])
        if q.get("max_buffer_size") is not None:
            msg += "max_buffer_size=%d" % q["max_buffer_size"]
        out.append(msg)
    out.append("Cable len: %d" % q["cable_len"])
    out.append("PFC configuration:")
    out.append("\tpriority    0   1   2   3   4   5   6   7")
    out.append("\tenabled     " + "".join("%1d   " % e for e in q["pfc"]))
    if not q.get("buffer_error"):
        out.append("\tbuffer      " + "".join("%1d   " % b for b in q["prio2buffer"]))
    tc2up: dict[int, list[int]] = {}
    if q.get("printall"):
        for tc in range(8):
            tc2up.setdefault(tc, [])
    for up, tc in enumerate(q["prio_tc"]):
        tc2up.setdefault(int(tc), []).append(up)
    for tc, ups in tc2up.items():
        rate = q["ratelimit"][tc] if tc < len(q["ratelimit"]) else 0
        r = "%.1f Gbps" % (float(rate / 1000) / 1000) if rate > 0 else "unlimited"
        msg = "tc: %d ratelimit: %s, tsa: " % (tc, r)
        tsa = q["tsa"][tc]
        if tsa == TSA_ETS:
            msg += "ets, bw: %s%%" % q["tc_bw"][tc]
        elif tsa in (TSA_STRICT, TSA_VENDOR):
            msg += tsa
        else:
            msg += "unknown"
        out.append(msg)
        for up in ups:
            out.append("\t priority:  %s" % up)
    return "".join(line + "\n" for line in out)


def default_app_table() -> list[tuple[int, int]]:
    """The table ``--trust dscp`` installs (dscp d -> prio d>>3, set for d = 0..63), in kernel dump order."""
    return [(d, d >> 3) for d in range(63, -1, -1)]


def app_table_set(table: list[tuple[int, int]], dscp: int, prio: int) -> list[tuple[int, int]]:
    """``--dscp2prio set,D,P``: mlx5 drops the old mapping of D, the kernel prepends the new entry; an identical
    entry is left where it is."""
    if (dscp, prio) in table:
        return list(table)
    return [(dscp, prio)] + [e for e in table if e[0] != dscp]


def app_table_del(table: list[tuple[int, int]], dscp: int, prio: int) -> list[tuple[int, int]]:
    return [e for e in table if e != (dscp, prio)]


ROCE_MODES = {1: "IB/RoCE v1", 2: "RoCE v2"}


def cma_roce_mode(mode: int) -> str:
    return ROCE_MODES[mode] + "\n"


def cma_roce_tos(tos: int) -> str:
    return "%d\n" % tos


CMA_ROCE_MODE_USAGE = """Set/Show RoCE default mode of RDMA_CM applications

Usage:
\tcma_roce_mode OPTIONS
Options:
\t-h              show this help
\t-d <dev>        use IB device <dev> (default mlx5_0)
\t-p <port>       use port <port> of IB device (default 1)
\t-m <roce_mode>  set RoCE mode of RDMA_CM applications (1 or 2)
"""

CMA_ROCE_TOS_USAGE = """Set/Show RoCE default ToS of RDMA_CM applications

Usage:
\tcma_roce_tos OPTIONS
Options:
\t-h              show this help
\t-d <dev>        use IB device <dev> (default mlx5_0)
\t-p <port>       use port <port> of IB device (default 1)
\t-t <tos>        set ToS of RoCE RDMA_CM applications (0)
"""
