"""The offload dividend on the device twin: a twin host moves no real bytes, so the measurement says
"not measurable on a twin" (no number), builds no comparison tunnel, and the report says so per pair.
The real measurement is tests/integration/test_dividend_lab.py (container lab)."""

from __future__ import annotations

from pathlib import Path

from conftest import make_sim_inventory, run_playbook

from bluefleet.report_dividend import dividend_section, markdown


def _results(run, task, events=("runner_on_ok",)):
    return {e["event_data"]["host"]: e["event_data"].get("res") or {} for e in run["events"]
            if e.get("event") in events and (e.get("event_data") or {}).get("task") == task}


def test_twin_says_not_measurable(tmp_path):
    inventory = make_sim_inventory(tmp_path / "inv", nodes=2)
    run = run_playbook("playbooks/fabric_benchmark.yml", inventory, "--tags", "dividend")
    sent = _results(run, "Send through the DPU path")
    assert set(sent) == {"sim01"}
    assert sent["sim01"]["measurable"] is False and sent["sim01"]["cpu_s_per_gb"] is None
    assert "not measurable on a twin" in sent["sim01"]["reason"]
    assert sent["sim01"]["cmd"] == []  # no iperf3 ran on the machine the twin runs on
    assert not _results(run, "Build the comparison tunnel on the sending end and negotiate it")
    assert not _results(run, "Build the comparison tunnel on the receiving end")
    assert "sim01: not measurable on a twin" in run["stdout"]
    # the report's section: the pair, not measured, and why; no fleet figure
    runner_dir = next(Path(inventory.parent).glob("runner-*"))
    section = _section_from(runner_dir)
    assert section is not None and section["fleet"] is None
    (pair,) = section["pairs"]
    assert pair["pair"] == "sim01->sim02" and pair["dpu"] is None and pair["ratio"] is None
    text = "\n".join(markdown(section))
    assert "| sim01->sim02 | n/a | n/a | n/a | n/a | n/a | not measured: sim01: not measurable on a twin" in text


def _section_from(runner_dir: Path):
    """The report reads a run folder's runner/ artifacts: lay the test's runner folder out the same way."""
    run_dir = runner_dir.parent / "run"
    (run_dir / "runner").mkdir(parents=True)
    (run_dir / "runner" / "artifacts").symlink_to(runner_dir / "artifacts")
    return dividend_section(run_dir)


def test_check_mode_measures_nothing(tmp_path):
    inventory = make_sim_inventory(tmp_path / "inv", nodes=2)
    run = run_playbook("playbooks/fabric_benchmark.yml", inventory, "--tags", "dividend", "--check")
    assert not _results(run, "Send through the DPU path")
    assert set(_results(run, "Send through the DPU path", ("runner_on_skipped",))) == {"sim01", "sim02"}
