"""The offload dividend's arithmetic (domain/_dividend) on real counters.

Samples: tests/unit/fixtures/parsers/proc-stat/vm-2cpu-kernel-6.18{,-after-50M} and cpuacct-usage/docker-container
{,-after-50M}: /proc/stat and a container's cpuacct.usage read before and after a 50 MiB iperf3 loopback transfer
(iperf3-json/iperf-3.18-tcp-50M) in the lab's GPU-host image.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _dividend as d
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._cpuacct import parse_cpuacct_usage, parse_proc_stat
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._iperf3 import parse_iperf3_json

from bluefleet.parse import strip_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsers"


def fixture_text(kind, name):
    return strip_header((FIXTURES / kind / (name + ".txt")).read_text(encoding="utf-8"))


STAT_1 = parse_proc_stat(fixture_text("proc-stat", "vm-2cpu-kernel-6.18"))
STAT_2 = parse_proc_stat(fixture_text("proc-stat", "vm-2cpu-kernel-6.18-after-50M"))
USAGE_1 = parse_cpuacct_usage(fixture_text("cpuacct-usage", "docker-container"))
USAGE_2 = parse_cpuacct_usage(fixture_text("cpuacct-usage", "docker-container-after-50M"))
REPORT = parse_iperf3_json(fixture_text("iperf3-json", "iperf-3.18-tcp-50M"))


def test_proc_stat_busy_seconds_are_user_nice_system_irq_softirq():
    got = d.stat_seconds(STAT_1, STAT_2)
    # cpu: user 52504 -> 52778, system 15837 -> 15874, nice/irq/softirq unchanged (USER_HZ 100)
    assert got["busy"] == pytest.approx((274 + 37) / 100)
    assert got["user"] == pytest.approx(2.74) and got["system"] == pytest.approx(0.37) and got["softirq"] == 0
    # per CPU: cpu0 user +135 system +20, cpu1 user +138 system +17
    assert got["cpus"] == {"cpu0": pytest.approx(1.55), "cpu1": pytest.approx(1.55)}


def test_cgroup_seconds_v1_nanoseconds_and_v2_microseconds():
    assert d.cgroup_seconds(USAGE_1, USAGE_2) == pytest.approx((235284298 - 36098319) / 1e9)
    assert d.cgroup_seconds({"usage_usec": 1_000_000}, {"usage_usec": 3_500_000}) == pytest.approx(2.5)
    with pytest.raises(d.DividendError, match="no common usage counter"):
        d.cgroup_seconds({"usage_usec": 1}, {"usage_nsec": 2})


def test_per_gb_and_throughput_of_the_real_transfer():
    cpu = d.cgroup_seconds(USAGE_1, USAGE_2)
    assert d.per_gb(cpu, REPORT["bytes_received"]) == pytest.approx(0.199185979 / 0.0524288)
    assert d.gbps(REPORT["bytes_received"], REPORT["seconds"]) == pytest.approx(52428800 * 8 / 1.007579 / 1e9)


def test_counters_that_go_backwards_are_an_error_not_a_negative_cost():
    with pytest.raises(d.DividendError, match="went backwards"):
        d.stat_seconds(STAT_2, STAT_1)
    with pytest.raises(d.DividendError, match="went backwards"):
        d.cgroup_seconds(USAGE_2, USAGE_1)


def test_no_bytes_or_no_time_is_undefined():
    with pytest.raises(d.DividendError, match="no bytes"):
        d.per_gb(1.0, 0)
    with pytest.raises(d.DividendError, match="no time"):
        d.gbps(10, 0)


def test_pair_figures_ratio_and_fleet_total():
    dpu = d.path_figures(0.5, 0.5, 2 * 10**9, 20.0)
    host = d.path_figures(2.0, 2.0, 10**9, 40.0)
    assert dpu["cpu_s_per_gb"] == 0.5 and host["cpu_s_per_gb"] == 4.0
    assert dpu["throughput_gbps"] == 0.8 and host["throughput_gbps"] == 0.2
    assert d.ratio(dpu, host) == 8.0
    fleet = d.fleet_total([{"dpu": dpu, "host": host}, {"dpu": dpu, "host": None}])
    assert fleet["pairs"] == 1 and fleet["ratio"] == 8.0 and fleet["saved_cpu_s_per_gb"] == 3.5
    two = d.fleet_total([{"dpu": dpu, "host": host}, {"dpu": d.path_figures(1, 1, 10**9, 1), "host": host}])
    # sums, not an average of ratios: (1 + 2) CPU-s over 3 GB through the DPU, 8 CPU-s over 2 GB through the host
    assert two["dpu"]["cpu_s_per_gb"] == 1.0 and two["host"]["cpu_s_per_gb"] == 4.0 and two["ratio"] == 4.0
    assert d.fleet_total([{"dpu": None, "host": None}]) is None
