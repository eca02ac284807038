"""The reset plan made on the controller from a read of the card (filter ``bluefleet.dpu.reset_plan`` on
``bluefleet.dpu.dpu_info`` with ``firmware``, ``nvconfig``, ``reset_levels``) is the plan ``bluefleet.dpu.fw_reset``
makes in check mode, card state by card state on the twin, failures included: the firmware role takes either.
A read that cannot answer (a section missing or unavailable) is refused by the filter: tests/unit/plugins/filter."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import dpusim, make_sim_inventory, run_playbook

OLD_FW = "32.41.1000"
NEW_FW = "32.43.1014"
DPU = "sim01-dpu"
MST = "/dev/mst/mt41692_pciconf0"
KEYS = ("changed", "device", "side", "reset", "reset_required", "note", "disruption", "method", "plan", "changes",
        "pending", "firmware", "firmware_reset_supported", "verified")
NIC_CHANGE = [{"kind": "nic_firmware", "name": "nic_firmware", "before": OLD_FW, "after": NEW_FW}]

PLAYBOOK = """
- name: Plan the reset both ways
  hosts: %s
  gather_facts: false
  environment: "{{ bluefleet_environment | default({}) }}"
  tasks:
    - name: Read the card
      bluefleet.dpu.dpu_info:
        filter: [firmware, nvconfig, reset_levels]
      register: read

    - name: Plan with the module
      bluefleet.dpu.fw_reset:
        changes: "{{ plan_changes }}"
        firmware_reset: "{{ plan_fw_reset }}"
        power_cycle_method: "{{ plan_method }}"
        power_cycle_command: "{{ plan_command or omit }}"
      check_mode: true
      ignore_errors: true
      register: by_module

    - name: Plan from the read
      ansible.builtin.set_fact:
        by_filter: >-
          {{ read.devices[0] | bluefleet.dpu.reset_plan(side=read.side, changes=plan_changes,
                                                        firmware_reset=plan_fw_reset, power_cycle_method=plan_method,
                                                        power_cycle_command=plan_command) }}
      ignore_errors: true
""" % DPU


@pytest.fixture(scope="module")
def card(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reset-plan")
    inventory = make_sim_inventory(tmp / "inventory", nodes=1)
    image = tmp / "fw.bin"
    dpusim("make-image", "--kind", "nic-fw", "--profile", "bluefield3", "--version", NEW_FW, "-o", str(image))
    playbook = tmp / "plan.yml"
    playbook.write_text(PLAYBOOK)
    return {"dir": tmp, "inventory": inventory, "root": inventory.parent / "state" / DPU, "image": image,
            "playbook": playbook}


def tool(card, *argv):
    """Run one of the twin's tools on the DPU, as the node would."""
    root = card["root"]
    proc = subprocess.run([str(root / "bin" / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, DPUSIM_ROOT=str(root)), check=False)
    assert proc.returncode == 0, (argv, proc.stdout, proc.stderr)


def plans(card, changes=(), fw_reset=True, method="none", command=()):
    extra = card["dir"] / "extra.json"
    extra.write_text(json.dumps({"plan_changes": list(changes), "plan_fw_reset": fw_reset, "plan_method": method,
                                 "plan_command": list(command)}))
    run = run_playbook(str(card["playbook"]), card["inventory"], "-e", "@%s" % extra, check=False)
    out = {}
    for e in run["events"]:
        data = e.get("event_data", {})
        if e.get("event") in ("runner_on_ok", "runner_on_failed") and data.get("host") == DPU:
            out[data.get("task")] = (e["event"] == "runner_on_failed", data["res"])
    assert "Plan with the module" in out, run["stdout"][-3000:]
    module_failed, module = out["Plan with the module"]
    filter_failed, result = out["Plan from the read"]
    return module_failed, module, filter_failed, result.get("ansible_facts", {}).get("by_filter", result)


def assert_same(card, **kwargs):
    module_failed, module, filter_failed, plan = plans(card, **kwargs)
    assert not module_failed and not filter_failed, (module, plan)
    assert {k: plan[k] for k in KEYS} == {k: module[k] for k in KEYS}
    return plan


def test_the_plan_from_the_read_is_fw_resets_plan_state_by_state(card):
    # the factory card, a NIC burn about to be made
    plan = assert_same(card, changes=NIC_CHANGE)
    assert (plan["reset"], plan["method"]) == ("firmware_reset", "mlxfwreset")

    # an NV parameter written and not active yet (the card's own pending state, whatever wrote it)
    tool(card, "mlxconfig", "-d", MST, "-y", "set", "NUM_OF_VFS=8")
    plan = assert_same(card)
    assert plan["pending"]["nvconfig"] == ["NUM_OF_VFS"] and plan["reset"] == "firmware_reset"

    # a firmware burnt and not running yet, as well
    tool(card, "flint", "-d", MST, "-i", str(card["image"]), "-y", "burn")
    plan = assert_same(card)
    assert plan["pending"]["firmware"] is True
    assert [c["name"] for c in plan["changes"]] == ["NUM_OF_VFS", "firmware"]

    # the mode parameter pending: a power cycle, by a command
    tool(card, "mlxconfig", "-d", MST, "-y", "set", "INTERNAL_CPU_OFFLOAD_ENGINE=1")
    plan = assert_same(card, method="command", command=["true"])
    assert (plan["reset"], plan["method"]) == ("power_cycle", "command")


def test_a_reset_that_cannot_be_done_fails_both_ways_with_the_same_message(card):
    module_failed, module, filter_failed, result = plans(card, changes=NIC_CHANGE, fw_reset=False)
    assert module_failed and filter_failed, (module, result)
    assert "power_cycle_method is none" in module["msg"]
    assert module["msg"] in result["msg"], (module["msg"], result["msg"])
    # the module's required option, refused by the filter as well
    module_failed, module, filter_failed, result = plans(card, changes=NIC_CHANGE, fw_reset=False, method="command")
    assert module_failed and filter_failed
    assert "missing: power_cycle_command" in module["msg"] and "missing: power_cycle_command" in result["msg"]
