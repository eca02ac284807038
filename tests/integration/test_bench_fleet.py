"""bench/fleet/run.py at N=4 so the fleet benchmark cannot rot. One stage (preflight, the cheapest) keeps it
short; the counting is checked against what is known exactly: the floor runs 15 module tasks on each of the
8 inventory hosts, the no-op re-run changes nothing, and the twin's tools were measured apart (their CPU is
part of the run's CPU, never more)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from conftest import BIN, ROOT, ansible_env


def test_fleet_bench_runs_at_four_pairs(tmp_path, collection_link):
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "fleet" / "run.py"), "--nodes", "4",
                           "--playbook", "playbooks/preflight.yml", "--floor-runs", "1", "--profile",
                           "--repeat", "2", "--json", str(out)],
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
    for run in (first, rerun):  # the twin's CPU per tool, which gauges the machine's speed between the runs
        by_tool = run["twin_by_tool"]
        assert sum(entry[0] for entry in by_tool.values()) == run["twin_tool_calls"]
        assert abs(sum(entry[1] for entry in by_tool.values()) - run["twin_cpu_seconds"]) < 0.02
    assert 0.2 < result["rerun_machine_vs_first"] < 5
    assert abs(result["rerun_cpu_vs_first_same_machine"]
               - result["rerun_cpu_vs_first"] / result["rerun_machine_vs_first"]) < 0.01
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
    # --repeat 2: the pair above is the first repeat; the second did the same work on a fleet of its own, and the
    # medians are those of the two
    repeats = result["repeats"]
    assert len(repeats) == 2
    assert {key: repeats[0][key] for key in result["median"]} == {key: result[key] for key in result["median"]}
    for label, run in (("first", first), ("rerun", rerun)):
        assert repeats[1][label]["rc"] == 0 and repeats[1][label]["changed"] == run["changed"]
        assert repeats[1][label]["module_runs"] == run["module_runs"]
        assert repeats[1][label]["twin_tool_calls"] == run["twin_tool_calls"]
    for key in ("rerun_wall_vs_first", "rerun_cpu_vs_first", "rerun_cpu_vs_first_same_machine"):
        assert abs(result["median"][key] - (repeats[0][key] + repeats[1][key]) / 2) < 0.002, key
    assert repeats[1]["rerun"]["profile"]["workers_cpu"] > 0
    assert "median of 2 repeats" in proc.stdout


def test_accounting_front_ends_answer_as_the_twin_does(tmp_path, collection_link):
    """The bench's front-ends end their process right after logging their CPU (os._exit): what a tool prints and
    its exit status are the twin's own, and every call is logged once."""
    spec = importlib.util.spec_from_file_location("bench_fleet_run", ROOT / "bench" / "fleet" / "run.py")
    fleet = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fleet)
    env = ansible_env()
    inventory = fleet.write_fleet(tmp_path, 1)
    subprocess.run([str(BIN / "bluefleet"), "sim", "init", "-i", str(inventory)], env=env,
                   check=True, capture_output=True, timeout=600)
    root = inventory.parent / "state" / "sim01-dpu"
    calls = [["ibdev2netdev"], ["mst", "status", "-v"], ["mlxconfig", "--bogus"]]
    twin_env = dict(env, DPUSIM_ROOT=str(root), DPUSIM_TIME_SCALE="0.001")
    direct = [subprocess.run([sys.executable, "-m", "dpusim.tool", *call], env=twin_env, capture_output=True,
                             text=True, timeout=60, check=False, cwd=ROOT / "src") for call in calls]
    assert fleet.account_front_ends(inventory.parent / "state") > 0
    log = tmp_path / "twin.log"
    fronted = [subprocess.run([str(root / "bin" / call[0]), *call[1:]], env=dict(twin_env, BENCH_TWIN_CPU_LOG=str(log)),
                              capture_output=True, text=True, timeout=60, check=False) for call in calls]
    assert [(p.returncode, p.stdout, p.stderr) for p in fronted] == [(p.returncode, p.stdout, p.stderr) for p in direct]
    assert direct[0].stdout and direct[0].returncode == 0 and direct[2].returncode != 0
    assert [line.split()[2] for line in log.read_text().splitlines()] == [call[0] for call in calls]
