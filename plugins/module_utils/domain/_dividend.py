# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The offload dividend's arithmetic: host CPU spent per gigabyte moved, through the DPU and without it.

Inputs are parsed counters (``parsers._cpuacct``) read before and after a transfer and the transfer's
byte count and duration (``parsers._iperf3``). Definitions (README, "The offload dividend"):

- host CPU-seconds of a sample: the delta of the host's cgroup usage when the host is a container
  (cgroup v2 ``usage_usec``, cgroup v1 ``cpuacct.usage``), otherwise the delta of ``/proc/stat``'s
  busy ticks over all CPUs: user + nice + system + irq + softirq (guest time is part of user; idle,
  iowait and steal are not work done by this host) divided by USER_HZ;
- GB is 10^9 bytes, Gb/s 10^9 bit/s; CPU-s/GB = CPU-seconds / (bytes / 10^9);
- the ratio is host path CPU-s/GB over DPU path CPU-s/GB: 3.0 means the host spends three times as much
  CPU per GB when it encrypts and encapsulates itself.
"""

from __future__ import annotations

BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")
BREAKDOWN_FIELDS = ("user", "system", "softirq")
GB = 1e9


class DividendError(ValueError):
    """Counters or figures that cannot give a measurement (a counter went backwards, no bytes moved)."""


def _delta(before, after, what):
    if after < before:
        raise DividendError("%s went backwards (%d -> %d): the counters were reset during the measurement; "
                            "run it again" % (what, before, after))
    return after - before


def stat_seconds(before, after, user_hz=100):
    """CPU-seconds from two parsed ``/proc/stat`` samples: ``{"busy", "user", "system", "softirq", "cpus"}``.

    ``cpus`` is the busy seconds per CPU (``cpu0`` ...); counters the kernel does not print count 0 in both.
    """
    if user_hz <= 0:
        raise DividendError("USER_HZ must be positive, got %r" % user_hz)

    def busy(b, a, label):
        return sum(_delta(b.get(f, 0), a.get(f, 0), "%s %s" % (label, f)) for f in BUSY_FIELDS)

    out = {"busy": busy(before["total"], after["total"], "cpu") / float(user_hz)}
    for field in BREAKDOWN_FIELDS:
        ticks = _delta(before["total"].get(field, 0), after["total"].get(field, 0), "cpu " + field)
        out[field] = ticks / float(user_hz)
    out["cpus"] = {name: busy(before["cpus"][name], counters, name) / float(user_hz)
                   for name, counters in sorted(after["cpus"].items()) if name in before["cpus"]}
    return out


def cgroup_seconds(before, after):
    """CPU-seconds from two cgroup samples: ``{"usage_usec": n}`` (v2) or ``{"usage_nsec": n}`` (v1)."""
    if "usage_usec" in before and "usage_usec" in after:
        return _delta(before["usage_usec"], after["usage_usec"], "cgroup usage_usec") / 1e6
    if "usage_nsec" in before and "usage_nsec" in after:
        return _delta(before["usage_nsec"], after["usage_nsec"], "cgroup cpuacct.usage") / 1e9
    raise DividendError("the two cgroup samples have no common usage counter (usage_usec or cpuacct.usage)")


def per_gb(cpu_seconds, nbytes):
    """CPU-seconds per 10^9 bytes."""
    if not nbytes or nbytes <= 0:
        raise DividendError("no bytes were transferred: CPU per GB is undefined")
    return cpu_seconds / (nbytes / GB)


def gbps(nbytes, seconds):
    """Throughput in 10^9 bit/s."""
    if not seconds or seconds <= 0:
        raise DividendError("the transfer took no time: throughput is undefined")
    return nbytes * 8 / seconds / GB


def path_figures(client_cpu_s, server_cpu_s, nbytes, seconds):
    """One path of one pair: host CPU of both ends, per GB, and throughput."""
    total = client_cpu_s + server_cpu_s
    return {"bytes": nbytes, "seconds": round(seconds, 3), "throughput_gbps": round(gbps(nbytes, seconds), 4),
            "client_cpu_s": round(client_cpu_s, 4), "server_cpu_s": round(server_cpu_s, 4),
            "host_cpu_s": round(total, 4), "cpu_s_per_gb": round(per_gb(total, nbytes), 4)}


def ratio(dpu, host):
    """host path CPU-s/GB over DPU path CPU-s/GB (None when the DPU path used no measurable CPU)."""
    if dpu["cpu_s_per_gb"] <= 0:
        return None
    return round(host["cpu_s_per_gb"] / dpu["cpu_s_per_gb"], 2)


def fleet_total(pairs):
    """Sum over the measured pairs: CPU-seconds and bytes per path, CPU-s/GB of the sums, and the ratio.

    ``pairs`` are dicts with ``dpu`` and ``host`` path figures (``path_figures``); others are not counted.
    Returns None when no pair was measured on both paths.
    """
    done = [p for p in pairs if p.get("dpu") and p.get("host")]
    if not done:
        return None
    out = {"pairs": len(done)}
    for path in ("dpu", "host"):
        cpu = sum(p[path]["host_cpu_s"] for p in done)
        nbytes = sum(p[path]["bytes"] for p in done)
        out[path] = {"host_cpu_s": round(cpu, 4), "bytes": nbytes, "cpu_s_per_gb": round(per_gb(cpu, nbytes), 4)}
    out["ratio"] = ratio(out["dpu"], out["host"])
    out["saved_cpu_s_per_gb"] = round(out["host"]["cpu_s_per_gb"] - out["dpu"]["cpu_s_per_gb"], 4)
    return out
