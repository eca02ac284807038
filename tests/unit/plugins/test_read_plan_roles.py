"""Roles that plan from preflight's read (the filters bluefleet.dpu.*_plan) agree on when that read no longer holds.

Each such role passes ``reset=__<role>_card_reset`` to its filter, defined in its vars/main.yml; the definitions are
the same expression (the facts of every card reset made without a bluefleet module), so a new reset fact is added to
all of them or the test fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
# The filters that answer a module's check from preflight's read (reset_plan plans a reset from a read it is given).
PLAN_CALL = re.compile(r"bluefleet\.dpu\.(?!reset_plan)\w+_plan\(")


def planning_roles():
    return sorted(p.parent.parent.name for p in ROLES.glob("*/tasks/*.yml") if PLAN_CALL.search(p.read_text()))


def test_every_planning_role_passes_the_same_card_reset():
    roles = planning_roles()
    assert "roce_qos" in roles and "firewall" in roles, roles
    expressions = {}
    for role in roles:
        tasks = "".join(p.read_text() for p in (ROLES / role / "tasks").glob("*.yml"))
        for call in re.findall(r"bluefleet\.dpu\.(?!reset_plan)\w+_plan\((.*?)\) \}\}", tasks, re.S):
            assert "reset=__%s_card_reset" % role in call, "%s: a plan without reset=__%s_card_reset" % (role, role)
            assert "changed_at=ansible_facts.bluefleet_changed_at | default(none)" in call \
                or "changed_at=__%s_changed_at" % role in call, role
        variables = yaml.safe_load((ROLES / role / "vars" / "main.yml").read_text())
        expressions[role] = " ".join(variables["__%s_card_reset" % role].split())
    assert len(set(expressions.values())) == 1, expressions
    for fact in ("bluefleet_card_reset", "firmware_card_reset", "switchdev_card_reset"):
        assert fact in next(iter(expressions.values()))


def test_each_reset_fact_is_set_where_the_reset_happens():
    paths = list(ROLES.glob("*/tasks/*.yml")) + list((ROLES.parent / "playbooks").glob("*.yml"))
    tasks = {p: p.read_text() for p in paths}
    setters = {fact: sorted(str(p.relative_to(ROLES.parent)) for p, text in tasks.items()
                            if re.search(r"^\s+%s:" % fact, text, re.M))
               for fact in ("bluefleet_card_reset", "firmware_card_reset", "switchdev_card_reset")}
    assert setters == {"bluefleet_card_reset": ["playbooks/bmc_upgrade.yml"],
                       "firmware_card_reset": ["roles/firmware/tasks/configure.yml"],
                       "switchdev_card_reset": ["roles/switchdev/tasks/driver_restart.yml"]}
