# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the kernel's CPU accounting files: ``/proc/stat``, ``/proc/<pid>/cgroup``, cgroup v2
``cpu.stat`` and cgroup v1 ``cpuacct.usage``.

Layouts (kernel sources; real captures in ``tests/unit/fixtures/parsers/``):

- ``/proc/stat`` (fs/proc/stat.c ``show_stat``): ``cpu`` (all CPUs) then ``cpuN`` lines with ten
  counters in USER_HZ ticks: user nice system idle iowait irq softirq steal guest guest_nice (older
  kernels print fewer: 4 before 2.6, 7, 8 or 9 later). Other lines (``intr``, ``ctxt``, ``btime`` ...)
  are kept as integers when they hold one number.
- ``/proc/<pid>/cgroup`` (kernel/cgroup/cgroup.c ``proc_cgroup_show``): ``hierarchy-ID:controllers:path``;
  the cgroup v2 line is ``0::path``; a v1 line names its controllers (``2:cpuacct:/docker/<id>``,
  ``4:cpu,cpuacct:/...``).
- cgroup v2 ``cpu.stat`` (kernel/cgroup/rstat.c ``cgroup_base_stat_cputime_show``): ``key value``
  lines, ``usage_usec``, ``user_usec``, ``system_usec`` first, then the CPU controller's throttling keys.
  cgroup v1 ``cpu.stat`` (``nr_periods`` ... without ``usage_usec``) has the same shape: ``usage_usec``
  is then absent.
- cgroup v1 ``cpuacct.usage`` (kernel/sched/cpuacct.c ``cpuusage_read``): one integer, nanoseconds.
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    is_count,
    split_lines,
)

KIND_STAT = "proc-stat"
KIND_CGROUP = "proc-cgroup"
KIND_CPU_STAT = "cgroup-cpu-stat"
KIND_CPUACCT = "cpuacct-usage"

STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
_CPU_RE = LazyPattern(r"^cpu(\d*)$")
_CGROUP_RE = LazyPattern(r"^(\d+):([^:]*):(/.*)$")


def parse_proc_stat(text):
    """``/proc/stat`` -> ``{"total": {field: ticks}, "cpus": {"cpu0": {...}}, "other": {name: int}}``.

    Counters a kernel does not print are absent from the dicts (never guessed as 0).
    """
    total = None
    cpus = {}
    other = {}
    for no, line in enumerate(split_lines(text), 1):
        fields = line.split()
        if not fields:
            continue
        match = _CPU_RE.match(fields[0])
        if match:
            values = fields[1:]
            if not 4 <= len(values) <= len(STAT_FIELDS) or not all(is_count(v) for v in values):
                raise ParseError(KIND_STAT, "a cpu line holds 4 to 10 tick counters", no, line)
            counters = {STAT_FIELDS[i]: int(v) for i, v in enumerate(values)}
            if match.group(1):
                cpus[fields[0]] = counters
            else:
                total = counters
        elif len(fields) == 2 and is_count(fields[1]):
            other[fields[0]] = int(fields[1])
        elif not re.match(r"^[a-z_]+$", fields[0]):
            raise ParseError(KIND_STAT, "not a /proc/stat line", no, line)
    if total is None:
        raise ParseError(KIND_STAT, "no 'cpu' line (the all-CPU counters)")
    return {"total": total, "cpus": cpus, "other": other}


def parse_proc_cgroup(text):
    """``/proc/<pid>/cgroup`` -> ``{"v2": path or None, "v1": {controller: path}}``."""
    v1 = {}
    v2 = None
    seen = False
    for no, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        match = _CGROUP_RE.match(line.strip())
        if not match:
            raise ParseError(KIND_CGROUP, "expected 'hierarchy-ID:controllers:path'", no, line)
        seen = True
        hid, controllers, path = match.groups()
        if hid == "0" and controllers == "":
            v2 = path
            continue
        for controller in controllers.split(","):
            if controller:
                v1[controller] = path
    if not seen:
        raise ParseError(KIND_CGROUP, "empty output")
    return {"v2": v2, "v1": v1}


def parse_cgroup_cpu_stat(text):
    """cgroup ``cpu.stat`` -> ``{key: int}`` (``usage_usec`` ... on cgroup v2)."""
    out = {}
    for no, line in enumerate(split_lines(text), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2 or not is_count(fields[1]) or not re.match(r"^[a-z_]+$", fields[0]):
            raise ParseError(KIND_CPU_STAT, "expected 'key value' with a non-negative integer", no, line)
        if fields[0] in out:
            raise ParseError(KIND_CPU_STAT, "key %s given twice" % fields[0], no, line)
        out[fields[0]] = int(fields[1])
    if not out:
        raise ParseError(KIND_CPU_STAT, "empty output")
    return out


def parse_cpuacct_usage(text):
    """cgroup v1 ``cpuacct.usage`` -> ``{"usage_nsec": int}``."""
    lines = [line.strip() for line in split_lines(text) if line.strip()]
    if len(lines) != 1 or not is_count(lines[0]):
        raise ParseError(KIND_CPUACCT, "expected one integer (nanoseconds)", 1 if lines else 0,
                         lines[0] if lines else None)
    return {"usage_nsec": int(lines[0])}


PARSERS = {KIND_STAT: parse_proc_stat, KIND_CGROUP: parse_proc_cgroup, KIND_CPU_STAT: parse_cgroup_cpu_stat,
           KIND_CPUACCT: parse_cpuacct_usage}
