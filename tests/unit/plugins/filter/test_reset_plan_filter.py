"""Filter bluefleet.dpu.reset_plan: fw_reset's plan (domain/_reset_plan.card_plan) from a dpu_info read. The same
plan as the module on the twin: tests/integration/test_reset_plan_sim.py; here, what the read must hold and what the
filter refuses."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _reset_plan

PLUGIN = Path(__file__).resolve().parents[4] / "plugins" / "filter" / "reset_plan.py"
_spec = importlib.util.spec_from_file_location("bluefleet_filter_reset_plan", PLUGIN)
reset_plan_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reset_plan_module)
reset_plan = reset_plan_module.reset_plan

MST = "/dev/mst/mt41692_pciconf0"
NIC = [{"kind": "nic_firmware", "name": "nic_firmware", "before": "32.41.1000", "after": "32.43.1014"}]


def read(**overrides):
    """One entry of dpu_info's devices with the three sections (a BlueField-3 in DPU mode, nothing pending)."""
    card = {
        "mst": MST, "device_type": "BlueField3", "side": "dpu",
        "firmware": {"available": True, "flashed": "32.41.1000", "running": "32.41.1000"},
        "nvconfig": {"available": True, "pending": [], "params": {
            "INTERNAL_CPU_OFFLOAD_ENGINE": {"default": "ENABLED(0)", "current": "ENABLED(0)",
                                            "next_boot": "ENABLED(0)"},
            "NUM_OF_VFS": {"default": "16", "current": "16", "next_boot": "16"}}},
        "reset_levels": {"available": True, "tool": "mlxfwreset", "level3": True, "sync1": True},
    }
    for key, value in overrides.items():
        card[key] = value
    return card


def test_a_nic_burn_on_a_dpu_mode_bluefield_is_one_firmware_reset():
    plan = reset_plan(read(), changes=NIC)
    assert (plan["reset"], plan["method"], plan["changed"], plan["device"], plan["side"]) == (
        "firmware_reset", "mlxfwreset", True, MST, "dpu")
    assert plan["plan"][0] == "%s: 1 change(s); reset: firmware_reset" % MST
    assert plan["pending"] == {"nvconfig": [], "firmware": False}


def test_it_is_card_plan_on_the_state_fw_reset_would_read():
    card = read()
    card["nvconfig"]["params"]["NUM_OF_VFS"]["next_boot"] = "8"
    card["firmware"]["flashed"] = "32.43.1014"
    state, level3 = _reset_plan.state_from_read(card)
    assert state == {"device_type": "BlueField3", "bluefield": True, "mode": "dpu",
                     "nvconfig": {"NUM_OF_VFS": ("16", "8")},
                     "firmware": {"flashed": "32.43.1014", "running": "32.41.1000"}}
    assert level3 is True
    options = {"firmware_reset": True, "reboot_command": [], "power_cycle_method": "none"}
    assert reset_plan(card) == _reset_plan.card_plan(MST, "dpu", state, True, options)
    assert reset_plan(card)["pending"] == {"nvconfig": ["NUM_OF_VFS"], "firmware": True}


def test_nic_mode_is_read_from_the_offload_engine_parameter():
    card = read()
    card["nvconfig"]["params"]["INTERNAL_CPU_OFFLOAD_ENGINE"]["current"] = "DISABLED(1)"
    assert _reset_plan.state_from_read(card)[0]["mode"] == "nic"


@pytest.mark.parametrize("broken", [
    {"reset_levels": {"available": False, "reason": "mlxfwreset not found on PATH", "level3": False, "sync1": False}},
    {"nvconfig": {"available": False, "reason": "mlxconfig not found on PATH"}},
    {"firmware": None},
])
def test_a_read_that_cannot_answer_is_refused_not_guessed(broken):
    with pytest.raises(AnsibleFilterError, match="lacks a section"):
        reset_plan(read(**broken), changes=NIC)


def test_without_mlxfwreset_allowed_and_no_power_cycle_method_it_fails_as_fw_reset_does():
    with pytest.raises(AnsibleFilterError, match="reset the card failed: a power cycle of the server is needed to "
                                                 "activate nic_firmware: 32.41.1000 -> 32.43.1014, and "
                                                 "power_cycle_method is none"):
        reset_plan(read(), changes=NIC, firmware_reset=False)
    plan = reset_plan(read(), changes=NIC, firmware_reset=False, power_cycle_method="command",
                      power_cycle_command=["ipmitool", "chassis", "power", "cycle"])
    assert (plan["reset"], plan["method"]) == ("power_cycle", "command")


@pytest.mark.parametrize("kwargs, words", [
    ({"power_cycle_method": "command"}, "missing: power_cycle_command"),
    ({"power_cycle_method": "ipmitool"}, "plan with bluefleet.dpu.fw_reset"),
    ({"side": "arm"}, "side must be host or dpu"),
    ({"changes": "nic_firmware"}, "changes must be a list"),
])
def test_options_the_module_would_refuse_are_refused(kwargs, words):
    with pytest.raises(AnsibleFilterError, match=words):
        reset_plan(read(), **kwargs)


def test_the_read_is_not_changed():
    card = read()
    before = copy.deepcopy(card)
    reset_plan(card, changes=NIC)
    assert card == before
