# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for nccl-tests ``all_reduce_perf`` output (other ``*_perf`` tests print the same table).

Layout (verbatim samples ``shared/corpus/nccl-tests/*``)::

    # nThread 1 nGpus 8 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 ...
    #  Rank  0 Group  0 Pid   9448 on HOST device  0 [0000:1b:00] NVIDIA H200
    NCCL version 2.27.3+cuda12.9
    #                                                              out-of-place                       in-place
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
               8             2     float     sum      -1    59.24    0.00    0.00      0    32.26    0.00    0.00      0
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 36.2205

Columns are located by the header line (the first ``time``/``algbw``/``busbw`` are the out-of-place
ones), so releases without ``redop``/``root`` or with ``error`` (a float, ``N/A`` without validation)
instead of ``#wrong`` read the same: ``wrong`` and ``error`` are None when the column is absent.
``nranks`` counts the ``#  Rank N`` lines (None when the run did not print them). Bandwidths are
GB/s as printed (nccl-tests' unit). A failed run (``Test NCCL failure``, ``NCCL WARN``) keeps its
error lines in ``errors``.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
    to_int,
)

KIND = "nccl-all-reduce"
_RANK_RE = LazyPattern(r"^#\s+Rank\s+(?P<rank>\d+)\s")
_AVG_RE = LazyPattern(r"^#\s*Avg bus bandwidth\s*:\s*(?P<avg>\d+(?:\.\d+)?)")
_OOB_RE = LazyPattern(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)\s*(?P<ok>\S+)?")
_VERSION_RE = LazyPattern(r"^NCCL version\s+(?P<v>\S+)")
_NGPUS_RE = LazyPattern(r"nThread\s+(?P<threads>\d+)\s+nGpus\s+(?P<gpus>\d+)")
_FLOAT_RE = LazyPattern(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")


def _float(value):
    return float(value) if _FLOAT_RE.match(value) else None


def parse_all_reduce(text):
    lines = split_lines(text)
    result = {"nranks": None, "nccl_version": None, "n_threads": None, "n_gpus": None, "rows": [],
              "avg_busbw": None, "out_of_bounds": None, "errors": []}
    columns = None
    ranks = set()
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            rank = _RANK_RE.match(stripped)
            if rank:
                ranks.add(int(rank.group("rank")))
                continue
            words = stripped.lstrip("#").split()
            if "size" in words and "algbw" in words and "busbw" in words:
                columns = words
                continue
            avg = _AVG_RE.match(stripped)
            if avg:
                result["avg_busbw"] = float(avg.group("avg"))
                continue
            oob = _OOB_RE.match(stripped)
            if oob:
                result["out_of_bounds"] = int(oob.group("n"))
                continue
            threads = _NGPUS_RE.search(stripped)
            if threads:
                result["n_threads"] = int(threads.group("threads"))
                result["n_gpus"] = int(threads.group("gpus"))
            continue
        version = _VERSION_RE.match(stripped)
        if version:
            result["nccl_version"] = version.group("v")
            continue
        if "NCCL failure" in stripped or "NCCL WARN" in stripped or "Test failure" in stripped:
            result["errors"].append(stripped)
            continue
        tokens = stripped.split()
        if columns is None or not isinstance(to_int(tokens[0]), int):
            continue  # launcher noise (ssh warnings, mpirun lines)
        if len(tokens) != len(columns):
            raise ParseError(KIND, f"row has {len(tokens)} columns, the header names {len(columns)}", number, line)
        cells = dict(zip(columns, tokens, strict=True))  # repeated names: the later (in-place) value wins
        first = {}
        for name, value in zip(columns, tokens, strict=True):
            first.setdefault(name, value)
        size = to_int(first["size"])
        algbw, busbw = _float(first["algbw"]), _float(first["busbw"])
        time_us = _float(first["time"]) if "time" in first else None
        if not isinstance(size, int) or algbw is None or busbw is None:
            raise ParseError(KIND, "size, algbw and busbw must be numbers", number, line)
        wrong = first.get("#wrong")
        error = first.get("error")  # releases before "#wrong" printed the max error as a float (or N/A)
        result["rows"].append({
            "size": size,
            "count": to_int(first["count"]) if "count" in first else None,
            "type": first.get("type"),
            "redop": first.get("redop"),
            "time_us": time_us,
            "algbw": algbw,
            "busbw": busbw,
            "wrong": to_int(wrong) if wrong is not None and isinstance(to_int(wrong), int) else None,
            "error": _float(error) if error is not None else None,
            "in_place": {"time_us": _float(cells["time"]) if "time" in cells else None,
                         "algbw": _float(cells["algbw"]), "busbw": _float(cells["busbw"])},
        })
    if ranks:
        result["nranks"] = len(ranks)
    if columns is None and not result["errors"]:
        for number, line in enumerate(lines, 1):
            if line.strip():
                raise ParseError(KIND, "no nccl-tests table header ('# size count type ... algbw busbw')", number, line)
        raise ParseError(KIND, "empty output")
    return result


PARSERS = {KIND: parse_all_reduce}
