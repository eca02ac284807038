"""bench/rolling_upgrade/run.py at N=4 so the benchmark cannot rot: it runs, upgrades every node, and its
figures are consistent (the makespan cannot beat the ideal ceil(N/B) x T: each batch waits for the twin's T)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, ansible_env


def test_bench_runs_at_four_nodes(tmp_path):
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "rolling_upgrade" / "run.py"), "--nodes", "4",
                           "--batch", "2", "--flash-seconds", "2", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, env=ansible_env(), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    assert result["upgraded"] == 4
    assert result["batches"] == 2
    assert result["ideal_seconds"] == 4.0
    assert result["makespan_seconds"] >= result["ideal_seconds"]
    # makespan is reported to 0.01 s and the ratio from the unrounded figure: equal within that rounding
    assert abs(result["ratio"] - result["makespan_seconds"] / result["ideal_seconds"]) < 0.01 / result["ideal_seconds"]
    assert "makespan / ideal" in proc.stdout
    # CPU of the run (ansible and its children): positive, and per node is a quarter of it (both rounded)
    assert result["cpu_seconds"] > 0 and abs(result["cpu_seconds_per_node"] * 4 - result["cpu_seconds"]) < 0.06


def test_under_mitogen_each_sim_host_gets_an_interpreter_of_its_own(tmp_path):
    """Mitogen keys a local connection's interpreter by its Python path alone: the bench gives every sim host its own
    path to the same Python, or the hosts of a batch would run their tasks one after another."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rolling_run", ROOT / "bench" / "rolling_upgrade" / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    inventory = tmp_path / "inventory" / "fleet.sim.yml"
    inventory.parent.mkdir()
    run.separate_interpreters(inventory, 3)
    paths = {f.stem: f.read_text().split(": ", 1)[1].strip() for f in (inventory.parent / "host_vars").glob("*.yml")}
    assert sorted(paths) == ["sim01", "sim01-dpu", "sim02", "sim02-dpu", "sim03", "sim03-dpu"]
    assert len(set(paths.values())) == 6
    assert {str(Path(p).resolve()) for p in paths.values()} == {str(Path(sys.executable).resolve())}
