"""The firmware role's task files agree with each other where YAML cannot say it once.

- The plans that run a module are in tasks/plans.yml, included only where one of them runs, and the reads after a
  write with the check that nothing is pending in tasks/checks.yml: each include's condition must hold wherever a
  task of its file would run (a plan left out of it would silently never run); the reads' other condition, that
  this run touched the card, is one that holds wherever they ran before, and the check runs wherever the include
  does.
- The BFB install and the NIC burn take the arguments of their plans (an anchor does not cross files).
- tests/integration/conftest.py names the tasks after the plans (FIRMWARE_AFTER_THE_PLANS): every task of the role
  after its ``end_role`` that reports a result.
"""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "firmware" / "tasks"


def load(name):
    return yaml.safe_load((TASKS / name).read_text())


def conditions(task):
    when = task.get("when", [])
    return [" ".join(c.split()) for c in ([when] if isinstance(when, str) else when)]


def include_of(tasks, file):
    (task,) = [t for t in tasks if (t.get("ansible.builtin.include_tasks") or {}).get("file") == file]
    return task


def module_args(task):
    (module,) = [k for k in task if k.startswith("bluefleet.dpu.")]
    return task[module]


# Conditions of an included task that the include need not repeat: each only narrows where the task runs within it.
NARROWING = {"checks.yml": ("__firmware_touched | bool",)}


def test_each_include_runs_wherever_a_task_of_its_file_would():
    for parent, file in (("configure.yml", "plans.yml"), ("verify.yml", "checks.yml")):
        include = " ".join(conditions(include_of(load(parent), file)))
        for task in load(file):
            for condition in conditions(task):
                if condition in NARROWING.get(file, ()):
                    continue
                # the include's condition is a disjunction whose terms are these conditions (or their conjunction)
                assert condition in include, (file, task["name"], condition, include)
        # the included tasks carry the role's tags (an include's own tags are not inherited)
        assert include_of(load(parent), file)["ansible.builtin.include_tasks"]["apply"]["tags"], file


def test_the_writes_take_their_plans_arguments():
    plans = {t["name"]: t for t in load("plans.yml")}
    writes = {t["name"]: t for t in load("configure.yml")}
    for plan, write in (("Plan the BFB install from the host (nothing is pushed)",
                         "Install the BFB from the host over rshim (the DPU reboots itself)"),
                        ("Plan the NIC firmware burn (nothing is written)",
                         "Burn the NIC firmware (it runs after the reset below)")):
        assert module_args(plans[plan]) == module_args(writes[write]), (plan, write)
        assert plans[plan]["check_mode"] is True and "check_mode" not in writes[write]


def after_the_plans():
    """Names of the tasks after the role's end_role that report a result (not meta), in order."""
    names, after = [], False
    for file in ("configure.yml", "apply.yml", "verify.yml"):
        for task in load(file):
            if "ansible.builtin.meta" in task:
                after = after or task["ansible.builtin.meta"] == "end_role"
                continue
            if after:
                names.append(task["name"])
                include = task.get("ansible.builtin.include_tasks")
                if include:
                    names.extend(t["name"] for t in load(include["file"]))
    return names


def test_the_integration_tests_name_every_task_after_the_plans():
    tree = ast.parse((ROOT / "tests" / "integration" / "conftest.py").read_text())
    (value,) = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["FIRMWARE_AFTER_THE_PLANS"]]
    assert list(ast.literal_eval(value)) == after_the_plans()
