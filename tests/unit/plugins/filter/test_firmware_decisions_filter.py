"""Filter bluefleet.dpu.firmware_decisions: the firmware role's decisions after its plans, by the rules of the role's
variables (roles/firmware/vars/main.yml, which the conditions of tasks/plans.yml still read). Each case here is
decided both ways - the role's variables templated by Ansible, and the filter - and the answers must agree."""

from __future__ import annotations

import copy
import importlib.util
import itertools
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = Path(__file__).resolve().parents[4]
ROLE = ROOT / "roles" / "firmware"


def load_filter(name):
    path = ROOT / "plugins" / "filter" / (name + ".py")
    spec = importlib.util.spec_from_file_location("bluefleet_filter_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


firmware_decisions = load_filter("firmware_decisions")
reset_plan = load_filter("reset_plan")

MST = "/dev/mst/mt41692_pciconf0"
FULL_READ = {
    "mst": MST, "pci": "0000:03:00.0", "device_type": "BlueField3", "side": "dpu",
    "firmware": {"available": True, "flashed": "32.41.1000", "running": "32.41.1000"},
    "nvconfig": {"available": True, "pending": [], "params": {
        "NUM_OF_VFS": {"default": "16", "current": "16", "next_boot": "16"}}},
    "reset_levels": {"available": True, "tool": "mlxfwreset", "level3": True, "sync1": True},
}
NV_PLAN = {"changed": True, "device": MST, "changes": [
    {"kind": "nvconfig", "name": "NUM_OF_VFS", "before": "16", "after": "8"}]}
NIC_PLAN = {"changed": True, "image": {"version": "32.43.1014"}, "firmware": {"running": "32.41.1000"}}
BFB_PLAN = {"changed": True, "reset_required": "power_cycle", "versions": {"before": {"release": "bf-old"}}}
FW_RESET_PLAN = {"changed": True, "reset": "firmware_reset", "plan": ["from fw_reset"]}


def role_answers(inputs):
    """The role's variables, templated by Ansible with ``inputs`` over the role's defaults."""
    variables = dict(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()))
    variables.update({name: trust_as_template(text)
                      for name, text in yaml.safe_load((ROLE / "vars" / "main.yml").read_text()).items()})
    variables.update(inputs)
    templar = Templar(loader=DataLoader(), variables=variables)

    def value(expression):
        return templar.template(trust_as_template("{{ %s }}" % expression))

    answers = {
        "install_bfb": value("__firmware_bfb_wanted | bool and __firmware_bfb_plan is changed"),
        "burn_nic": value("__firmware_nic_burn | bool"),
        "write_nv": value("__firmware_nv_planned | bool and __firmware_nv_plan is changed"),
        "nv_asked": value("__firmware_nv_asked | bool"),
        "nic_target": value("__firmware_nic_target if __firmware_nic_wanted | bool else none"),
    }
    if value("__firmware_plan_from_read | bool"):
        answers["plan"] = reset_plan(inputs["firmware_card_state"], changes=value("__firmware_changes"),
                                     device=value("__firmware_device"),
                                     firmware_reset=variables["firmware_allow_fw_reset"],
                                     reboot_command=variables["firmware_reboot_command"],
                                     power_cycle_method=variables["firmware_power_cycle_method"],
                                     power_cycle_command=variables["firmware_power_cycle_command"])
    else:
        answers["plan"] = inputs["__firmware_plan"]
    # configure.yml's end_role: the role goes on where it installs, burns, writes or resets
    answers["writes"] = bool(answers["install_bfb"] or answers["burn_nic"] or answers["write_nv"]
                             or answers["plan"].get("reset") != "none")
    return answers


def filter_answers(inputs):
    get = inputs.get
    return firmware_decisions(
        inputs["firmware_card_state"], nic_image=get("firmware_nic_image", ""),
        nic_version=get("firmware_nic_version", ""), bfb_image=get("firmware_bfb_image", ""),
        bfb_version=get("firmware_bfb_version", ""), bfb_host="bluefleet_host" in inputs,
        nvconfig=get("firmware_nvconfig", {}), mode=get("firmware_mode", ""), device=get("firmware_device", ""),
        nv_plan=get("__firmware_nv_plan", {}), bfb_plan=get("__firmware_bfb_plan", {}),
        nic_plan=get("__firmware_nic_plan", {}), plan=get("__firmware_plan", {}),
        power_cycle_method=get("firmware_power_cycle_method", "none"),
        power_cycle_command=get("firmware_power_cycle_command", []))


def cases():
    """Inputs as the role's tasks would see them after the plans (a plan's result only where its task ran)."""
    flashed_new = copy.deepcopy(FULL_READ)
    flashed_new["firmware"]["flashed"] = "32.43.1014"
    no_levels = {k: v for k, v in FULL_READ.items() if k != "reset_levels"}
    for card, nic, nv, bfb, device, method in itertools.product(
            (FULL_READ, flashed_new, no_levels, {}), ("none", "versioned", "unversioned"), (False, True),
            (False, True), ("", MST, "0000:03:00.0", "/dev/mst/other"), ("none", "ipmitool")):
        inputs = {"firmware_card_state": card, "firmware_device": device, "firmware_power_cycle_method": method,
                  "__firmware_plan": FW_RESET_PLAN}
        if nic != "none":
            inputs["firmware_nic_image"] = "/tmp/fw.bin"
            inputs["firmware_nic_version"] = "32.43.1014" if nic == "versioned" else ""
        if nv:
            inputs["firmware_nvconfig"] = {"NUM_OF_VFS": 8}
        if bfb:
            inputs.update(firmware_bfb_image="/tmp/x.bfb", firmware_bfb_version="bf-new", bluefleet_host="gpu01",
                          __firmware_bfb_plan=BFB_PLAN)
        if nv or (not device and (nic != "none" or bfb)):  # the NV plan ran
            inputs["__firmware_nv_plan"] = NV_PLAN if nv else {"changed": False, "device": MST, "changes": []}
        if nic != "none":
            inputs["__firmware_nic_plan"] = NIC_PLAN
        yield inputs


def outcome(decide, inputs):
    """The answers, or the message of the failure (a reset that cannot be done fails both ways alike)."""
    try:
        return decide(inputs)
    except AnsibleFilterError as exc:
        return "failed: %s" % exc.message


@pytest.mark.parametrize("inputs", list(cases()))
def test_the_filter_decides_as_the_role_variables(inputs):
    assert outcome(filter_answers, inputs) == outcome(role_answers, inputs)


def test_a_reset_that_is_not_available_fails_as_reset_plan():
    mode = {"kind": "mode", "name": "INTERNAL_CPU_MODEL", "before": "EMBEDDED_CPU(1)", "after": "SEPARATED_HOST(0)"}
    inputs = {"firmware_card_state": FULL_READ, "firmware_device": MST, "firmware_nvconfig": {"NUM_OF_VFS": 8},
              "__firmware_nv_plan": dict(NV_PLAN, changes=[mode])}
    with pytest.raises(AnsibleFilterError):
        filter_answers(inputs)
