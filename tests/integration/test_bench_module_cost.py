"""bench/module_cost/run.py at one run per payload, so the module-cost benchmark cannot rot. The checkout is its own
baseline here: both sides' payloads are built and run alternately. Checked: every case ran, from a payload Ansible
built, and each run used the twin's accounting front-ends (its tools' CPU is taken out); the floor (ping) runs none."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, ansible_env

CASES = ["floor: ansible.builtin.ping", "preflight: dpu_info (DPU)", "preflight: dpu_info (GPU host)",
         "upgrade: dpu_info read versions", "upgrade: dpu_info health gate", "upgrade: nic_firmware (check mode)",
         "upgrade: fw_reset (check mode)"]


def test_module_cost_bench_runs_once(tmp_path, collection_link):
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "module_cost" / "run.py"), "--runs", "1",
                           "--baseline", str(ROOT), "--json", str(out)],
                          capture_output=True, text=True, timeout=1800, env=ansible_env(), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    assert list(result["cases"]) == CASES
    for name, case in result["cases"].items():
        for label in ("current", "baseline"):
            side = case[label]
            assert side["module_cpu"]["runs"] == 1
            assert side["module_cpu"]["median"] > 0, (name, side)
            if name.startswith("floor"):  # ping runs no tool
                assert side["twin_tool_calls"] == 0 and side["twin_cpu_median"] == 0, side
            else:
                assert side["twin_tool_calls"] > 0, "%s: the accounting front-ends were not used" % name
                assert 0 < side["twin_cpu_median"], (name, side)
            floor = result["cases"][CASES[0]][label]["module_cpu"]["median"]
            assert abs(side["above_floor_median"] - (side["module_cpu"]["median"] - floor)) < 0.001
            assert side["payload_bytes"] > 10000, "%s: not an AnsiballZ payload" % name
        assert case["current_vs_baseline"] > 0
    upgrade = result["upgrade_module_cpu"]["current"]
    upgrade_cases = [n for n in CASES if n.startswith("upgrade: ")]
    assert abs(upgrade - sum(result["cases"][n]["current"]["module_cpu"]["median"] for n in upgrade_cases)) < 0.001
    assert "one upgrade" in proc.stdout and "cur/base" in proc.stdout
