"""bench/fleet/run.py at N=4 so the fleet benchmark cannot rot. One stage (preflight, the cheapest) keeps it
short; the counting is checked against what is known exactly: the floor runs 15 module tasks on each of the
8 inventory hosts, the no-op re-run changes nothing, and the twin's tools were measured apart (their CPU is
part of the run's CPU, never more)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, ansible_env


def test_fleet_bench_runs_at_four_pairs(tmp_path, collection_link):
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "fleet" / "run.py"), "--nodes", "4",
                           "--playbook", "playbooks/preflight.yml", "--floor-runs", "1", "--profile",
                           "--json", str(out)],
                          capture_output=True, text=True, timeout=1800, env=ansible_env(), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    hosts = ["sim%02d" % i for i in range(1, 5)] + ["sim%02d-dpu" % i for i in range(1, 5)]
    floor = result["runs"]["floor_before"]
    assert floor["module_runs_per_host"] == dict.fromkeys(hosts, 15)
    assert floor["twin_tool_calls"] <= 1  # at most the inventory's `dpusim tools`: `true` is no twin tool
    first, rerun = result["runs"]["first"], result["runs"]["rerun"]
    assert sorted(first["module_runs_per_host"]) == sorted(hosts)
    assert first["module_runs"] > 0 and first["module_runs_per_pair"] == first["module_runs"] / 4
    assert rerun["changed"] == 0, "the no-op re-run changed something"
    for run in (first, rerun):
        assert run["twin_tool_calls"] > 0, "the accounting front-ends were not used"
        assert 0 < run["twin_cpu_seconds"] < run["cpu_seconds"]
        assert abs(run["cpu_seconds_excluding_twin"] - (run["cpu_seconds"] - run["twin_cpu_seconds"])) < 0.02
        assert abs(run["cpu_vs_floor"] - run["cpu_seconds_excluding_twin"] / result["floor"]["cpu_seconds"]) < 0.01
    assert [stage["stage"] for stage in first["stages"]] == ["preflight"]
    assert first["stages"][0]["module_runs"] == first["module_runs"]
    assert "no-op re-run / first run" in proc.stdout
    # --profile: ansible-playbook's own CPU, its workers' and their module processes' (twin tools taken out by the
    # worker each one logged) account for the run's CPU excluding the twin; the floor's 15 x 8 command tasks are
    # 120 workers that each ran a module process
    for run in (first, rerun):
        prof = run["profile"]
        parts = prof["ansible_playbook_cpu"] + prof["workers_cpu"] + prof["module_processes_cpu_excluding_twin"]
        assert prof["ansible_playbook_cpu"] > 0 and prof["workers_cpu"] > 0
        assert prof["module_processes_cpu_excluding_twin"] > 0
        assert abs(parts - run["cpu_seconds_excluding_twin"]) < 0.1 * run["cpu_seconds_excluding_twin"], (parts, run)
        assert sum(kind["results"] for kind in prof["by_kind"].values()) == prof["results"] > 0
        assert prof["tasks"] and prof["tasks"][0]["worker_cpu"] + prof["tasks"][0]["module_cpu"] >= max(
            t["worker_cpu"] + t["module_cpu"] for t in prof["tasks"])
        # the workers' template compilation is a part of their own CPU, and preflight's templates compile in them
        assert 0 < prof["workers_template_compile_cpu"] < prof["workers_cpu"], prof
    assert list(floor["profile"]["by_kind"]) == ["with a module process"]
    assert floor["profile"]["results"] == 120
    assert "profile of the first run" in proc.stdout and "(template compilation " in proc.stdout
