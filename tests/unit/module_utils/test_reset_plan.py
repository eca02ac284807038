"""The reset planner: classes, per-change rules, context escalation, the rendered plan."""

from __future__ import annotations

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _reset_plan as rp


def test_classes_are_ordered_smallest_first():
    assert [rp.rank(r) for r in rp.RESETS] == [0, 1, 2, 3, 4]
    assert rp.largest(["firmware_reset", "none", "warm_reboot"]) == "warm_reboot"
    assert rp.largest([]) == "none"
    with pytest.raises(rp.PlanError, match="unknown reset class 'reboot'"):
        rp.rank("reboot")


@pytest.mark.parametrize("name, reset", [
    ("SRIOV_EN", "firmware_reset"),
    ("NUM_OF_VFS", "firmware_reset"),
    ("LINK_TYPE_P2", "firmware_reset"),
    ("NVME_EMULATION_ENABLE", "firmware_reset"),
    ("INTERNAL_CPU_OFFLOAD_ENGINE", "power_cycle"),
    ("INTERNAL_CPU_MODEL", "power_cycle"),
    ("INTERNAL_CPU_PAGE_SUPPLIER", "power_cycle"),
    ("INTERNAL_CPU_RSHIM", "power_cycle"),
    ("MODULE_SPLIT_M0[3]", "firmware_reset"),
    ("SOME_FUTURE_PARAM", "power_cycle"),
])
def test_mlxconfig_parameter_rules(name, reset):
    got, reason = rp.param_reset(name)
    assert got == reset
    assert reason


def test_unknown_parameter_is_conservative_and_says_so():
    reset, reason = rp.param_reset("SOME_FUTURE_PARAM")
    assert reset == "power_cycle"
    assert "conservative" in reason


@pytest.mark.parametrize("change, reset", [
    ({"kind": "mode"}, "power_cycle"),
    ({"kind": "nic_firmware"}, "firmware_reset"),
    ({"kind": "bfb_nic_firmware"}, "power_cycle"),
    ({"kind": "bfb_os"}, "none"),
    ({"kind": "runtime"}, "none"),
    ({"kind": "ovs_hw_offload"}, "driver_restart"),
    ({"kind": "privhost", "option": "restrict"}, "none"),
    ({"kind": "privhost", "option": "disable_rshim"}, "power_cycle"),
    ({"kind": "privhost", "option": "disable_tracer"}, "firmware_reset"),
])
def test_other_kinds_of_change(change, reset):
    assert rp.change_reset(change)[0] == reset


@pytest.mark.parametrize("change, message", [
    ({"kind": "flash"}, "unknown kind of change 'flash'"),
    ({"kind": "privhost", "option": "nope"}, "unknown privhost option 'nope'"),
    ({"kind": "mlxconfig"}, "needs the parameter 'name'"),
    ("SRIOV_EN", "a change is a dict"),
])
def test_bad_changes_are_named(change, message):
    with pytest.raises(rp.PlanError, match=message):
        rp.change_reset(change)


def test_escalation_by_context():
    # ConnectX on a host: firmware reset when supported, else a warm reboot reloads firmware.
    assert rp.escalate("firmware_reset")[0] == "firmware_reset"
    assert rp.escalate("firmware_reset", firmware_reset_supported=False)[0] == "warm_reboot"
    # BlueField in DPU mode: no warm reboot reloads the firmware -> power cycle.
    reset, note = rp.escalate("firmware_reset", bluefield=True, mode="dpu", side="arm",
                              firmware_reset_supported=False)
    assert reset == "power_cycle" and "DPU mode" in note
    assert rp.escalate("firmware_reset", bluefield=True, mode="dpu", side="arm")[0] == "firmware_reset"
    assert rp.escalate("warm_reboot", bluefield=True, mode="dpu")[0] == "power_cycle"
    # BlueField in NIC mode from the host: never a firmware reset.
    assert rp.escalate("firmware_reset", bluefield=True, mode="nic")[0] == "warm_reboot"
    assert rp.escalate("none", bluefield=True, mode="dpu", side="arm") == ("none", "")
    with pytest.raises(rp.PlanError, match="side must be"):
        rp.escalate("none", side="bmc")


def test_plan_picks_one_smallest_sufficient_reset():
    changes = [
        {"kind": "mlxconfig", "name": "NUM_OF_VFS", "before": 16, "after": 8},
        {"kind": "mlxconfig", "name": "SRIOV_EN", "before": "False(0)", "after": "True(1)"},
    ]
    result = rp.plan(changes, bluefield=True, mode="dpu", side="arm")
    assert result["reset_required"] == "firmware_reset"
    assert result["reset"] == "firmware_reset"
    assert [c["reset_required"] for c in result["changes"]] == ["firmware_reset", "firmware_reset"]
    result = rp.plan(changes + [{"kind": "mode", "before": "dpu", "after": "nic"}], bluefield=True, mode="dpu")
    assert result["reset_required"] == "power_cycle"
    assert result["disruption"] == rp.DISRUPTION["power_cycle"]
    assert rp.plan([])["reset"] == "none"


def test_render_lists_every_change_and_the_disruption():
    result = rp.plan([{"kind": "mlxconfig", "name": "NUM_OF_VFS", "before": 16, "after": 8}],
                     bluefield=True, mode="dpu", side="arm", firmware_reset_supported=False)
    lines = rp.render("sim01-dpu", result)
    assert lines[0] == "sim01-dpu: 1 change(s); reset: power_cycle"
    assert lines[1].startswith("  NUM_OF_VFS: 16 -> 8 (needs firmware_reset:")
    assert lines[2].startswith("  why power_cycle: mlxfwreset level 3 is not supported")
    assert lines[3] == "  expected disruption: " + rp.DISRUPTION["power_cycle"]
