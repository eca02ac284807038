"""The stage playbooks of site.yml after preflight import each role with its argument check turned off
(rolespec_validate false) and __bluefleet_plan_first set; the role checks its inputs itself, after its plans and the
end of the role where nothing differs, before its first change. A no-op re-run then goes through no argument check
on a node with nothing to do (preflight checked every role's inputs in this run); any other node is checked as a play
that lists the role under roles: checks it, before its first change.

The sim tests show the behaviour (tests/integration/test_plan_first_sim.py); this keeps the wiring and the order.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLES = ROOT / "roles"
STAGES = ["offload.yml", "services.yml", "fabric.yml", "zero_trust.yml"]
LATE_CHECK = "ansible.builtin.validate_argument_spec"
# modules that only read (the role's plan may run them before the check, as preflight does)
READS = ("bluefleet.dpu.dpu_info", "bluefleet.dpu.gpu_info", "ansible.builtin.command")
NOT_MODULES = ("ansible.builtin.set_fact", "ansible.builtin.assert", "ansible.builtin.debug", "ansible.builtin.meta",
               "ansible.builtin.fail", LATE_CHECK)


def _load(path):
    return yaml.safe_load(path.read_text(encoding="utf-8")) or []


def _imports(tasks_from=False):
    """(playbook, play, import task) for every role a stage playbook imports: its main entry point, or with
    ``tasks_from`` the imports of another task file of a role."""
    for name in STAGES:
        for play in _load(ROOT / "playbooks" / name):
            for task in play.get("tasks", []):
                if "ansible.builtin.import_role" in task:
                    if bool(task["ansible.builtin.import_role"].get("tasks_from")) == tasks_from:
                        yield name, play, task


def _flat(role, name="main.yml"):
    """The role's tasks in order, imports and includes of its own task files expanded, blocks opened."""
    out = []
    for task in _load(ROLES / role / "tasks" / name):
        inner = task.get("ansible.builtin.import_tasks") or task.get("ansible.builtin.include_tasks")
        if isinstance(inner, dict):
            inner = inner["file"]
        if inner:
            out.extend(_flat(role, inner))
        elif "block" in task:
            out.extend(task["block"])
        else:
            out.append(task)
    return out


def _action(task):
    return next((k for k in task if "." in k and k.split(".")[0] in ("ansible", "bluefleet", "community")), None)


PLAN_FIRST = sorted({found[2]["ansible.builtin.import_role"]["name"].split(".")[-1] for found in _imports()})


def test_an_import_of_other_tasks_of_a_role_has_no_argument_check_of_its_own():
    """offload.yml's IPsec inputs play imports the ipsec role's preflight tasks (tasks_from): that entry point has no
    argument spec, so ansible-core puts no check before them, and they only check (the role's main entry point, in
    the play after, checks the inputs as the others do)."""
    found = [(task["ansible.builtin.import_role"]["name"], task["ansible.builtin.import_role"]["tasks_from"])
             for _name, _play, task in _imports(tasks_from=True)]
    assert found == [("bluefleet.dpu.ipsec", "preflight.yml")]
    specs = _load(ROLES / "ipsec" / "meta" / "argument_specs.yml")["argument_specs"]
    assert "preflight" not in specs and "main" in specs
    assert {_action(task) for task in _flat("ipsec", "preflight.yml")} <= set(NOT_MODULES)


def test_every_stage_role_after_preflight_is_imported_plan_first():
    plays = [(name, play) for name in STAGES for play in _load(ROOT / "playbooks" / name)]
    for name, play in plays:
        assert "roles" not in play, (name, play["name"])  # roles: would check the inputs before the plans
    found = list(_imports())
    assert len(found) == 11, [entry[2]["name"] for entry in found]
    for name, play, task in found:
        assert task["ansible.builtin.import_role"]["rolespec_validate"] is False, (name, play["name"])
        assert task["vars"] == {"__bluefleet_plan_first": True}, (name, play["name"])
    assert PLAN_FIRST == ["doca_services", "firewall", "gpu_host", "host_overlay", "ipsec", "nccl", "opensm", "ovs",
                          "roce_qos", "switchdev", "zero_trust"]


@pytest.mark.parametrize("role", PLAN_FIRST)
def test_the_role_checks_its_inputs_after_its_end_and_before_its_first_change(role):
    tasks = _flat(role)
    checks = [i for i, t in enumerate(tasks) if LATE_CHECK in t]
    assert len(checks) == 1, role
    (check,) = checks
    task = tasks[check]
    assert task["when"] == "__bluefleet_plan_first | default(false)"  # a play with roles: has checked already
    assert task["tags"] == ["always"]  # as the check that roles: prepends: every tag selection goes through it
    args = task[LATE_CHECK]
    assert "argument_specs.main.options" in args["argument_spec"]
    assert args["validate_args_context"]["name"] == role
    ends = [i for i, t in enumerate(tasks) if t.get("ansible.builtin.meta") == "end_role"]
    assert ends and max(ends) < check, role  # every end of the role comes first: a node it ends is not checked
    for t in tasks[:check]:
        action = _action(t)
        assert action in NOT_MODULES or action in READS, (role, t.get("name"), action)  # nothing changes before it


def test_the_late_check_loads_the_spec_ansible_prepends():
    """The file and key the task reads hold the options ansible-core's own check uses (the main entry point)."""
    for role in PLAN_FIRST:
        spec = _load(ROLES / role / "meta" / "argument_specs.yml")["argument_specs"]
        assert list(spec) == ["main"], role
        assert spec["main"]["options"], role
