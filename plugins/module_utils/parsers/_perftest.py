# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for perftest bandwidth reports (``ib_write_bw``; ``ib_read_bw``/``ib_send_bw`` print the same).

Layout (verbatim samples ``shared/corpus/perftest/*`` and perftest src/perftest_parameters.h
``RESULT_FMT`` / ``RESULT_FMT_G``): a settings block between dashed lines (``Device : mlx5_1``,
``Link type : Ethernet`` ..., two settings per line separated by TABs in the original), the
address exchange, then::

     #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
     65536      10384867         0.00               181.46              0.346100

Without ``--report_gbits`` the unit is ``MB/sec``. perftest computes it with ``format_factor =
(report_fmt == MBS) ? 0x100000 : 125000000`` (src/perftest_resources.c), i.e. MB/sec is MiB/s and
Gb/sec is 10^9 bit/s: Gb/s = MB/s * 1048576 / 125000000. The ``*_gbps`` fields are always Gb/s
(rounded to 3 decimals); the printed numbers and unit are kept in ``rows``. Lines perftest mixes in
(``Conflicting CPU frequency values detected ...``) are skipped. ``-a`` prints one row per size: the
top-level numbers are those of the last (largest) row. A server that is still waiting for its client
has no report: ``complete`` is False and the numbers are None. ``gpu_direct`` is True when the run
used GPU memory (perftest's CUDA lines: ``initializing CUDA``, ``allocated GPU buffer ...``).
After ``WARNING: BW peak won't be measured in this run.`` the table shows 0.00 as the peak:
``peak_measured`` is False and ``bw_peak_gbps`` None (the row keeps the printed 0.00).
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
)

KIND = "ib-write-bw"
_MIB_PER_S_TO_GBPS = 1048576 / 125000000
_SETTING_RES = {
    "device": LazyPattern(r"(?:^|\s)Device\s*:\s*(?P<v>\S+)"),
    "link_type": LazyPattern(r"(?:^|\s)Link type\s*:\s*(?P<v>\S+)"),
    "transport_type": LazyPattern(r"(?:^|\s)Transport type\s*:\s*(?P<v>\S+)"),
    "connection_type": LazyPattern(r"(?:^|\s)Connection type\s*:\s*(?P<v>\S+)"),
    "num_qps": LazyPattern(r"(?:^|\s)Number of qps\s*:\s*(?P<v>\d+)"),
    "mtu": LazyPattern(r"(?:^|\s)Mtu\s*:\s*(?P<v>\d+)\[B\]"),
    "gid_index": LazyPattern(r"(?:^|\s)G(?:ID|id) index\s*:\s*(?P<v>\d+)"),  # older perftest: "Gid index"
    "tos": LazyPattern(r"(?:^|\s)TOS\s*:\s*(?P<v>\d+)"),
}
_INT_SETTINGS = ("num_qps", "mtu", "gid_index", "tos")
_TITLE_RE = LazyPattern(r"^\s*(?P<title>\S.*\bBW Test)\s*$")
_RESULT_HEADER_RE = LazyPattern(r"#bytes\s+#iterations\s+BW peak\[(?P<unit>[A-Za-z]+/sec)\]")
_ROW_RE = LazyPattern(
    r"^\s*(?P<size>\d+)\s+(?P<iters>\d+)\s+(?P<peak>\d+(?:\.\d+)?)\s+(?P<avg>\d+(?:\.\d+)?)\s+(?P<rate>\d+(?:\.\d+)?)"
)
_GPU_NAME_RE = LazyPattern(r"device name = \[(?P<name>[^\]]+)\]")


def _to_gbps(value, unit):
    if unit == "Gb/sec":
        return round(value, 3)
    if unit == "MB/sec":
        return round(value * _MIB_PER_S_TO_GBPS, 3)
    return None


def parse_ib_write_bw(text):
    lines = split_lines(text)
    result = {
        "test": None, "device": None, "link_type": None, "transport_type": None, "connection_type": None,
        "num_qps": None, "mtu": None, "gid_index": None, "tos": None,
        "msg_size": None, "iterations": None, "bw_peak_gbps": None, "bw_avg_gbps": None, "msg_rate_mpps": None,
        "unit": None, "rows": [], "gpu_direct": False, "gpu_name": None, "complete": False, "peak_measured": True,
    }
    perftest_seen = False
    unit = None
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        title = _TITLE_RE.match(line)
        if title:
            result["test"] = title.group("title")
            perftest_seen = True
            continue
        if "Waiting for client" in line:
            perftest_seen = True
        if "BW peak won't be measured" in line:
            result["peak_measured"] = False  # the table then prints 0.00 as the peak
            perftest_seen = True
        if stripped.startswith("initializing CUDA") or "GPU buffer" in line:
            result["gpu_direct"] = True
        gpu = _GPU_NAME_RE.search(line)
        if gpu:
            result["gpu_name"] = gpu.group("name")
        header = _RESULT_HEADER_RE.search(line)
        if header:
            unit = header.group("unit")
            if unit not in ("Gb/sec", "MB/sec"):
                raise ParseError(KIND, f"unknown bandwidth unit {unit!r} (Gb/sec or MB/sec expected)", number, line)
            result["unit"] = unit
            perftest_seen = True
            continue
        if unit is not None:
            row = _ROW_RE.match(line)
            if row:
                peak, avg = float(row.group("peak")), float(row.group("avg"))
                result["rows"].append({
                    "msg_size": int(row.group("size")), "iterations": int(row.group("iters")),
                    "bw_peak": peak, "bw_avg": avg, "msg_rate_mpps": float(row.group("rate")),
                    "bw_peak_gbps": _to_gbps(peak, unit), "bw_avg_gbps": _to_gbps(avg, unit),
                })
            continue
        for key, regex in _SETTING_RES.items():
            found = regex.search(line)
            if found and result[key] is None:
                result[key] = int(found.group("v")) if key in _INT_SETTINGS else found.group("v")
                perftest_seen = True
    if result["rows"]:
        last = result["rows"][-1]
        result.update({
            "msg_size": last["msg_size"], "iterations": last["iterations"],
            "bw_peak_gbps": last["bw_peak_gbps"] if result["peak_measured"] else None,
            "bw_avg_gbps": last["bw_avg_gbps"], "msg_rate_mpps": last["msg_rate_mpps"], "complete": True,
        })
    elif not perftest_seen:
        for number, line in enumerate(lines, 1):
            if line.strip():
                raise ParseError(KIND, "no perftest bandwidth report (settings block or '#bytes ... BW peak' table)",
                                 number, line)
        raise ParseError(KIND, "empty output")
    return result


PARSERS = {KIND: parse_ib_write_bw}
