"""A stage playbook run alone (no preflight before it) still refuses a bad role input before anything changes.

The stage playbooks of site.yml import their roles plan first (rolespec_validate false, __bluefleet_plan_first): the
role's argument check comes after its plans, where a node has something to do (tests/unit/plugins/
test_plan_first_roles.py keeps that order). Here each stage playbook runs on a fresh sim node with one bad input of
one of its roles: the run fails in that role's own check, naming the variable, and the twins are as they were. With
the check left out of the role (or the role imported without it), the bad value would reach a module or a template
instead, and the failing task and message would differ.
"""

from __future__ import annotations

import pytest
from conftest import make_sim_inventory, run_playbook, twin_snapshot

LATE_CHECK = "Check the role's inputs (meta/argument_specs.yml) where the play planned first"
HOSTS = ["sim01", "sim01-dpu"]


@pytest.mark.parametrize("playbook, role, variable, value", [
    ("playbooks/offload.yml", "switchdev", "switchdev_mode", "bogus"),
    ("playbooks/services.yml", "doca_services", "doca_services_wait_timeout", "soon"),
    ("playbooks/fabric.yml", "roce_qos", "roce_qos_mtu", "jumbo"),
    ("playbooks/zero_trust.yml", "zero_trust", "zero_trust_host_level", "bogus"),
])
def test_a_stage_alone_refuses_a_bad_input_in_the_role_check(tmp_path, collection_link, playbook, role, variable,
                                                             value):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    before = twin_snapshot(inventory, HOSTS)
    run = run_playbook(playbook, inventory, "-e", "%s=%s" % (variable, value), check=False)
    assert run["rc"] != 0, run["stdout"][-3000:]
    failed = [e["event_data"] for e in run["events"] if e.get("event") == "runner_on_failed"]
    assert failed, run["stdout"][-3000:]
    first = failed[0]
    assert (first["role"], first["task"]) == (role, LATE_CHECK), (first["role"], first["task"], first["res"])
    assert variable in first["res"]["msg"], first["res"]["msg"]
    assert twin_snapshot(inventory, HOSTS) == before


@pytest.mark.parametrize("extra, variable", [
    ("preflight_timeout=soon", "preflight_timeout"),
    ("preflight_check_pairing=maybe", "preflight_check_pairing"),
    ("'{\"preflight_input_roles\": {\"firmware\": true}}'", "preflight_input_roles"),  # quoted: runner splits
])
def test_preflight_alone_checks_its_own_inputs_with_every_roles(tmp_path, collection_link, extra, variable):
    """playbooks/preflight.yml turns ansible-core's argument check off: preflight's own inputs are checked in the one
    validation of every role's inputs, first, before any task reads them (a non-bool preflight_check_pairing would
    otherwise break the pairing check's condition), and the message names the role and the variable."""
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    run = run_playbook("playbooks/preflight.yml", inventory, "-e", extra, check=False)
    assert run["rc"] != 0, run["stdout"][-3000:]
    failed = [e["event_data"] for e in run["events"] if e.get("event") == "runner_on_failed"]
    assert failed, run["stdout"][-3000:]
    assert {(e["host"], e["task"]) for e in failed} == {(h, "Every role's inputs are valid") for h in HOSTS}, \
        [(e["host"], e["task"], e["res"].get("msg")) for e in failed]
    for event in failed:
        assert "preflight: " in event["res"]["msg"] and variable in event["res"]["msg"], event["res"]["msg"]
    ran = {e["event_data"]["task"] for e in run["events"] if e.get("event") == "runner_on_ok"}
    assert not any(task.startswith("Validating arguments") for task in ran), ran  # one check, not ansible-core's too
