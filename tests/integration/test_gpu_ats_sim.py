"""ATS of the card as configured (issue #7): ``gpu_host_ats`` through playbooks/fabric.yml ``--tags ats``.

One pair of the twin: check (changed, twin untouched), apply (changed, Next Boot ATS_ENABLED set, Current
unchanged, the firmware reset named), apply again (changed=0), check again (changed=0); then
playbooks/firmware.yml activates it (firmware reset) and ``false`` goes through the same four runs; the default
(``gpu_host_ats`` unset) leaves the card alone.
"""

from __future__ import annotations

import json

from conftest import make_sim_inventory, run_playbook, twin_state

TAGS = "--tags ats"
HOST = "sim01"


def _ats(state):
    """(current, next) ATS_ENABLED of the GPU host's card in the twin."""
    cards = twin_state(state / HOST)["cards"]
    assert len(cards) == 1, cards
    cfg = cards[0]["mlxconfig"]
    return cfg["current"]["ATS_ENABLED"], cfg["next"]["ATS_ENABLED"]


def _changed(run):
    return {h: n for h, n in (run["stats"].get("changed") or {}).items() if n}


def _nvconfig_results(run):
    return [e["event_data"]["res"] for e in run["events"]
            if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == "Set ATS of the card"]


def _four_runs(inventory, state, value, before):
    extra_file = inventory.parent / ("ats-%s.json" % str(value).lower())
    extra_file.write_text(json.dumps({"gpu_host_ats": value}))
    extra = ("-e", "@%s" % extra_file)
    check = run_playbook("playbooks/fabric.yml", inventory, TAGS, *extra, "--check", "--diff")
    assert _changed(check) == {HOST: 1}, check["stdout"][-3000:]
    assert "ATS_ENABLED" in check["stdout"], check["stdout"][-3000:]
    assert _ats(state) == before, "check mode changed the twin: %s" % (_ats(state),)

    apply = run_playbook("playbooks/fabric.yml", inventory, TAGS, *extra)
    assert _changed(apply) == {HOST: 1}, apply["stdout"][-3000:]
    # Next Boot only: Current changes on the firmware reset, which this play does not do
    assert _ats(state) == (before[0], int(value)), _ats(state)
    res = _nvconfig_results(apply)
    assert len(res) == 1 and res[0]["changed"], res
    assert res[0]["reset_required"] == "firmware_reset", res[0]
    assert "reset required: firmware_reset" in apply["stdout"], apply["stdout"][-3000:]

    again = run_playbook("playbooks/fabric.yml", inventory, TAGS, *extra)
    assert _changed(again) == {}, again["stdout"][-3000:]
    check2 = run_playbook("playbooks/fabric.yml", inventory, TAGS, *extra, "--check", "--diff")
    assert _changed(check2) == {}, check2["stdout"][-3000:]
    assert _ats(state) == (before[0], int(value))


def test_ats_true_then_false(tmp_path):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    state = tmp_path / "inventory" / "state"
    # unset (the role default null): the ATS tasks do not run, nothing changes (this run also makes the twin)
    unset = run_playbook("playbooks/fabric.yml", inventory, TAGS)
    assert _changed(unset) == {} and _nvconfig_results(unset) == [], unset["stdout"][-3000:]
    assert _ats(state) == (0, 0), "the twin's card starts with ATS off"

    _four_runs(inventory, state, True, (0, 0))
    # the role says playbooks/firmware.yml applies it: that stage finds ATS pending and resets the card once
    firmware = run_playbook("playbooks/firmware.yml", inventory)
    assert "ATS_ENABLED: False(0) -> True(1) (needs firmware_reset" in firmware["stdout"], firmware["stdout"][-3000:]
    assert _ats(state) == (1, 1), _ats(state)
    # then ATS off is again a pending change
    _four_runs(inventory, state, False, (1, 1))
