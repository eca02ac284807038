"""`bluefleet run` end to end against the twin: exit codes 0 / 1 / 3, the run folder, the report and drift.

One simulated pair keeps it short: preflight + facts + the preflight checks (exit 0), then the card
disappears from the DPU (a dpusim fault) and the same run again (exit 1, the failing cell, drift against
the first run), and a pair on a closed ssh port (exit 3).
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from conftest import BIN, ansible_env, make_sim_inventory, run_playbook


def bluefleet_run(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "bluefleet"), "run", *args], capture_output=True, text=True,
                          env=ansible_env(), cwd=str(cwd), timeout=600, check=False)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    base = tmp_path_factory.mktemp("run-report")
    return {"base": base, "inventory": make_sim_inventory(base / "inventory", nodes=1), "runs": base / "runs"}


def test_preflight_run_ends_with_the_report_path(fleet, collection_link):
    first = fleet["runs"] / "20261202T100000Z"
    proc = bluefleet_run("-i", str(fleet["inventory"]), "--stage", "preflight", "--run-dir", str(first),
                         cwd=fleet["base"])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == str(first / "report.html")
    assert "preflight play: Preflight and facts on GPU hosts and DPUs" in proc.stdout  # the live view, plain
    assert "preflight finished | hosts 2/2 done, 0 changed, 0 failed, 0 unreachable" in proc.stdout
    for name in ("summary.json", "facts.json", "evidence.json", "junit.xml", "report.html", "report.md",
                 "report.json"):
        assert (first / name).is_file(), name
    assert list((first / "runner" / "artifacts").glob("*/job_events/*.json")), "ansible-runner events"
    junit = (first / "junit.xml").read_text()
    assert 'name="stage" value="preflight"' in junit and "failures=\"0\"" in junit
    model = json.loads((first / "report.json").read_text())
    assert [h["name"] for h in model["hosts"]] == ["sim01", "sim01-dpu", "(fleet)"]
    checks = {c["id"] for c in model["checks"]}
    assert {"playbook", "test_mst_shows_card", "test_pairing_vars", "test_pair_sees_one_card"} <= checks
    assert {c["stage"] for c in model["checks"]} == {"playbook", "preflight"}  # --stage preflight: its checks
    cell = model["cells"]["sim01-dpu"]["test_mst_shows_card"]
    assert cell["status"] == "passed" and cell["commands"][0]["command"] == "mst status -v"
    assert "BlueField3" in cell["commands"][0]["stdout"]
    versions = model["versions"]["rows"]
    assert versions["sim01-dpu"]["NIC firmware running"]["value"]
    assert versions["sim01"]["GPU driver"]["value"]
    # one read per node: the GPU host's GPUs came in its card read's run, kept apart as gpu_info
    facts = json.loads((first / "facts.json").read_text())
    assert sorted(h for h in facts if "gpu_info" in facts[h]) == ["sim01"]
    assert facts["sim01"]["gpu_info"]["gpus"]["devices"] and "gpu_info" not in facts["sim01"]["dpu_info"]
    assert model["run"]["exit_code"] == 0


def test_broken_card_fails_the_cell_and_shows_drift(fleet, collection_link):
    first = fleet["runs"] / "20261202T100000Z"
    assert (first / "report.json").is_file(), "needs test_preflight_run_ends_with_the_report_path first"
    dpu_root = fleet["inventory"].parent / "state" / "sim01-dpu"
    subprocess.run([str(BIN / "dpusim"), "--root", str(dpu_root), "fault", "set", "device_missing"], check=True,
                   capture_output=True, timeout=60)
    second = fleet["runs"] / "20261202T110000Z"
    proc = bluefleet_run("-i", str(fleet["inventory"]), "--stage", "preflight", "--run-dir", str(second),
                         cwd=fleet["base"])
    # a missing card is a preflight problem: the gate stops every host before any change (exit 2, issue #16), and
    # the run still ends with the report of the checks
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "sim01-dpu: no BlueField or ConnectX card found" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == str(second / "report.html")
    model = json.loads((second / "report.json").read_text())
    cell = model["cells"]["sim01-dpu"]["test_mst_shows_card"]
    assert cell["status"] == "failed"
    assert "sim01-dpu" in cell["message"] and "lists no device" in cell["message"]
    assert model["drift"]["previous"] == str(first)
    assert {"host": "sim01-dpu", "check": "test_mst_shows_card", "before": "passed", "after": "failed"} in \
        model["drift"]["cells"]
    assert "sim01" not in {c["host"] for c in model["drift"]["cells"] if c["check"] == "test_mst_shows_card"}
    md = (second / "report.md").read_text()
    assert "| sim01-dpu | test_mst_shows_card | failed |" in md
    assert "sim01-dpu `test_mst_shows_card`: passed -> failed" in md


def test_validate_playbook_fails_on_the_broken_card(fleet, collection_link):
    """playbooks/validate.yml (site.yml stage 7) runs the same suite and fails with the check's message;
    bluefleet_validate=false turns it off (Molecule, bluefleet run)."""
    dpu_root = fleet["inventory"].parent / "state" / "sim01-dpu"
    state = subprocess.run([str(BIN / "dpusim"), "--root", str(dpu_root), "fault", "list"], capture_output=True,
                           text=True, check=True, timeout=60).stdout
    assert re.search(r"^on\s+device_missing", state, re.M), "needs test_broken_card_fails_the_cell_and_shows_drift"
    run = run_playbook("playbooks/validate.yml", fleet["inventory"], "-e", "validate_stages=preflight",
                       check=False)
    assert run["rc"] != 0
    assert "FAILED tests/validation/test_wiring.py::test_mst_shows_card[sim01-dpu]" in run["stdout"]
    assert "the conformance suite failed" in run["stdout"]
    off = run_playbook("playbooks/validate.yml", fleet["inventory"], "-e", "bluefleet_validate=false")
    assert off["stats"].get("skipped", {}).get("localhost") == 3


def test_unreachable_hosts_exit_3(fleet, collection_link):
    inv = fleet["base"] / "unreachable.yml"
    inv.write_text(
        "all:\n"
        "  vars: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 1, ansible_user: nobody}\n"
        "  children:\n"
        "    gpu_hosts:\n      hosts:\n        ghost: {bluefleet_dpus: [ghost-dpu]}\n"
        "    dpus:\n      hosts:\n        ghost-dpu: {bluefleet_host: ghost, bluefleet_rshim: rshim0}\n")
    run_dir = fleet["runs"] / "unreachable"
    proc = bluefleet_run("-i", str(inv), "--stage", "preflight", "--no-validate", "--run-dir", str(run_dir),
                         cwd=fleet["base"])
    assert proc.returncode == 3, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "UNREACHABLE ghost" in proc.stdout and "exit code 3 (hosts unreachable)" in proc.stdout
    model = json.loads((run_dir / "report.json").read_text())
    assert model["cells"]["ghost"]["playbook"]["status"] == "unreachable"
    assert model["cells"]["ghost-dpu"]["playbook"]["status"] == "unreachable"
    assert not model["suite"]["ran"]


def test_bad_arguments_exit_2_and_run_nothing(fleet):
    proc = bluefleet_run("-i", str(fleet["inventory"]), "--stage", "nope", cwd=fleet["base"])
    assert proc.returncode == 2 and "unknown stage 'nope'" in proc.stderr
    proc = bluefleet_run("-i", str(fleet["base"] / "missing.yml"), cwd=fleet["base"])
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    assert not (fleet["base"] / "runs-default").exists() and not (fleet["base"] / "runs" / "nope").exists()
