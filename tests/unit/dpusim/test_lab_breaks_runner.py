"""tests/lab/run_lab_breaks.py without a lab: a row still marked ``pending`` makes the runner fail (exit 1, its
reason printed), so CI shows a lab break that is not proven; and the table itself has no such row left."""

from __future__ import annotations

import sys
from pathlib import Path

LAB = Path(__file__).resolve().parents[2] / "lab"
sys.path.insert(0, str(LAB))

import lab_breaks  # noqa: E402
import run_lab_breaks  # noqa: E402

INVENTORY = ({"gpu_hosts": {"hosts": ["node1", "node2"]}, "dpus": {"hosts": ["node1-dpu", "node2-dpu"]}},
             {"node1": {"bluefleet_dpus": ["node1-dpu"]}, "node2": {"bluefleet_dpus": ["node2-dpu"]},
              "node1-dpu": {"bluefleet_vtep_address": "172.30.0.1/32", "bluefleet_uplink_address": "192.168.75.1/24"},
              "node2-dpu": {"bluefleet_vtep_address": "172.30.0.2/32", "bluefleet_uplink_address": "192.168.75.2/24"}})


def test_a_pending_row_fails_the_runner(monkeypatch, capsys):
    row = {"text": "an operator's break", "side": "dpu", "pending": "not yet shown failing", "break": [["true"]],
           "undo": [], "fails": {"test_x.py::test_y[{dpu}]": "words"}}
    monkeypatch.setattr(run_lab_breaks, "_inventory", lambda _path: INVENTORY)
    monkeypatch.setattr(run_lab_breaks, "LAB_BREAKS", {"test_x.py::test_y": row})
    ran = []
    monkeypatch.setattr(run_lab_breaks, "prove", lambda *a, **k: ran.append(a) or [])
    assert run_lab_breaks.main(["--inventory", "unused.yml"]) == 1
    out = capsys.readouterr().out
    assert "NOT PROVEN test_x.py::test_y" in out
    assert "test_x.py::test_y: not proven in the lab: not yet shown failing" in out
    assert not ran  # a pending row is not applied


def test_a_proven_row_alone_passes_the_runner(monkeypatch, capsys):
    row = {"text": "an operator's break", "side": "dpu", "break": [["true"]], "undo": [],
           "fails": {"test_x.py::test_y[{dpu}]": "words"}}
    monkeypatch.setattr(run_lab_breaks, "_inventory", lambda _path: INVENTORY)
    monkeypatch.setattr(run_lab_breaks, "LAB_BREAKS", {"test_x.py::test_y": row})
    ran = []
    monkeypatch.setattr(run_lab_breaks, "prove", lambda *a, **k: ran.append(a[2]["dpu"]) or [])
    assert run_lab_breaks.main(["--inventory", "unused.yml"]) == 0
    assert ran == ["node1-dpu"]
    assert "ok   test_x.py::test_y" in capsys.readouterr().out


def test_the_pair_names_the_peer_dpu_addresses():
    pair = run_lab_breaks._pair(*INVENTORY)
    assert (pair["host"], pair["dpu"], pair["peer"], pair["peer_host"]) == ("node1", "node1-dpu", "node2-dpu", "node2")
    assert (pair["peer_vtep"], pair["peer_uplink"]) == ("172.30.0.2", "192.168.75.2")


def test_no_lab_break_is_left_pending():
    pending = {check: row["pending"] for check, row in lab_breaks.LAB_BREAKS.items() if row.get("pending")}
    assert not pending, f"lab breaks not proven in the lab (tests/lab/lab_breaks.py): {pending}"


def test_every_lab_break_has_an_undo():
    lacking = [check for check, row in lab_breaks.LAB_BREAKS.items() if not row["undo"]]
    assert not lacking, f"lab breaks without an undo (they would leave the lab broken): {lacking}"


def _prove_with(monkeypatch, words, message):
    """prove() of one row whose break makes the suite fail with ``message``; the undo makes it pass."""
    pair = run_lab_breaks._pair(*INVENTORY)
    row = {"text": "t", "side": "dpu", "break": [["true"]], "undo": [["true"]],
           "fails": {"test_x.py::test_y[{peer}]": words}}
    runs = []
    monkeypatch.setattr(run_lab_breaks, "_exec", lambda container, argv: runs.append((container, argv)))
    outcomes = iter(["failed", "passed"])

    def suite(_inventory, _checks, _workdir):
        outcome = next(outcomes)
        return {"test_x.py::test_y[node2-dpu]": {"outcome": outcome, "message": message if outcome == "failed" else ""}}

    monkeypatch.setattr(run_lab_breaks, "_suite", suite)
    problems = run_lab_breaks.prove("test_x.py::test_y", row, pair, "inv.yml", Path("."))
    assert runs == [("node1-dpu", ["true"]), ("node1-dpu", ["true"])]  # break and undo, on the first pair's DPU
    return problems


def test_a_finding_given_as_alternatives_needs_one_of_them(monkeypatch):
    message = "node2: ping through node2-dpu failed: 100% packet loss; fix: playbooks/offload.yml"
    assert _prove_with(monkeypatch, ("100% packet loss", "cleartext"), message) == []
    problems = _prove_with(monkeypatch, ("cleartext", "only 0 ESP"), message)
    assert len(problems) == 1 and "does not name what was found ('cleartext' or 'only 0 ESP')" in problems[0]


def test_a_message_without_host_or_fix_is_a_problem(monkeypatch):
    problems = _prove_with(monkeypatch, "packet loss", "ping failed: 100% packet loss")
    assert any("does not name the host ('node2-dpu')" in p for p in problems)
    assert any("does not name the fix ('fix')" in p for p in problems)
