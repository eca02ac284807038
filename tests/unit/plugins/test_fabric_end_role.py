"""The fabric roles end (meta: end_role) where preflight's read answered every check and nothing differs: the plans
and the facts the plays after them read come first, and a plan that was not made counts as not in state.

The sim tests show the behaviour (tests/integration/test_fabric_plan_sim.py, test_gpu_fabric_read_sim.py); this
keeps the order and the defaults of the task files.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
PLAN_FACT = re.compile(r"(__\w+_plan)\.in_state")


def _tasks(role, name):
    return yaml.safe_load((ROLES / role / "tasks" / name).read_text(encoding="utf-8"))


def _conditions(task):
    when = task.get("when", [])
    return " and ".join(when) if isinstance(when, list) else when


def _sets(task):
    return set(task.get("ansible.builtin.set_fact", {}))


# role, task file, the facts set before the end (read after the role: playbooks/fabric.yml, the NCCL role, docs)
@pytest.mark.parametrize("role, file, kept", [
    ("roce_qos", "configure.yml", {"roce_qos_facts"}),
    ("gpu_host", "configure.yml", {"gpu_host_nic_affinity", "gpu_host_changed_at_start"}),
    ("nccl", "derive.yml", {"nccl_settings"}),
])
def test_the_role_ends_after_its_plans_and_facts_and_only_on_plans_in_state(role, file, kept):
    tasks = _tasks(role, file)
    (end,) = [i for i, t in enumerate(tasks) if t.get("ansible.builtin.meta") == "end_role"]
    before = set().union(*(_sets(t) for t in tasks[:end]))
    assert kept <= before, kept - before
    plans = set(PLAN_FACT.findall(_conditions(tasks[end])))
    assert plans and plans <= before, plans
    # one task makes every plan (one result per host)
    assert [t for t in tasks[:end] if _sets(t) & plans] == [tasks[end - 1]]
    # a plan not made (tags, a stage alone, a stale read) is not in state
    assert len(re.findall(r"\.in_state \| default\(false\)", _conditions(tasks[end]))) == len(
        re.findall(r"\.in_state", _conditions(tasks[end])))
    # every module task after the end runs only where its plan is not in state, or does not depend on one
    for task in tasks[end + 1:]:
        for plan in PLAN_FACT.findall(_conditions(task)):
            assert plan in plans, (task["name"], plan)


def test_the_gpu_host_role_ends_only_without_ats_and_with_the_topology_read():
    tasks = _tasks("gpu_host", "configure.yml")
    (end,) = [t for t in tasks if t.get("ansible.builtin.meta") == "end_role"]
    assert "gpu_host_ats is none" in end["when"]  # ATS has no plan: nvconfig runs wherever it is asked for
    assert "bluefleet_gpu_info.topology.available | default(false)" in end["when"]


def test_opensm_ends_only_where_neither_part_applies_and_the_settings_pass_the_check():
    tasks = _tasks("opensm", "preflight.yml")
    block, late_check, check = tasks  # late_check: the inputs where the play planned first (test_plan_first_roles)
    assert "ansible.builtin.validate_argument_spec" in late_check
    (end,) = block["block"]
    assert end["ansible.builtin.meta"] == "end_role"
    assert end["when"] == check["ansible.builtin.assert"]["that"]  # the same list: the check would pass
    assert block["when"] == "not (__opensm_link_type_here or __opensm_sm_here)"
    main = _tasks("opensm", "main.yml")
    assert [t.get("when") for t in main[1:]] == ["__opensm_link_type_here", "__opensm_sm_here"]
