"""bench/rolling_upgrade/run.py at N=4 so the benchmark cannot rot: it runs, upgrades every node, and its
figures are consistent (the makespan cannot beat the ideal ceil(N/B) x T: each batch waits for the twin's T)."""

from __future__ import annotations

import json
import subprocess
import sys

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
