"""Preflight's read answers eswitch's check: dpu_info's section eswitch with its devlink ports (eswitch_ports) and the
filter bluefleet.dpu.eswitch_plan.

The filter must agree with the module: on the same DPU (fake tool outputs: the BlueField-3 Arm ``mst status -v``
fixture; ``devlink dev eswitch show`` in the text layout of corpus/devlink/cx6-eswitch-show-switchdev.txt for
dpu_info and the JSON of test_eswitch for the module, both printing the same state; the ports of test_eswitch) the
plan is in state exactly when the module in check mode changes nothing, and gives the same result keys (the VFs a
mode change unbinds excepted: the read does not look at them, the plan says null). Wherever the module fails - a
netdev that is no port of a device, a device without an eswitch, options it refuses - the plan does not answer, and
neither does a read that no longer holds or lacks the section or the ports.
"""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.bluefleet.dpu.plugins.filter.eswitch_plan import eswitch_plan
from ansible_collections.bluefleet.dpu.plugins.modules import dpu_info, eswitch
from fake_tools import FakeRunner, fixture_text
from test_eswitch import PF0, PF1, PORT_JSON, make_vfs

MST = ("mst", "status", "-v")
TEXT_SHOW = ("devlink", "dev", "eswitch", "show")
JSON_SHOW = ("devlink", "-j", "dev", "eswitch", "show")
PORTS = ("devlink", "-j", "port", "show")
SWITCHDEV = ("switchdev", "none", "basic")
LEGACY = ("legacy", "none", "basic")
# what the module's check mode returns with netdevs, besides cmd, tool_version and check_mode_prediction
KEYS = ("changed", "eswitches", "before", "vfs", "reset_required", "diff")


def machine(devices=None, ports=PORT_JSON):
    """Tool answers of a BlueField Arm side whose devlink devices have the eswitch ``devices`` (handle -> (mode,
    inline mode, encap mode)), in devlink's text and JSON forms."""
    devices = {PF0: SWITCHDEV, PF1: SWITCHDEV} if devices is None else devices
    text = "".join("%s: mode %s inline-mode %s encap-mode %s\n" % ((handle,) + state)
                   for handle, state in devices.items())
    data = {"dev": {handle: {"mode": mode, "inline-mode": inline, "encap-mode": encap}
                    for handle, (mode, inline, encap) in devices.items()}}
    return {MST: (0, fixture_text("mst-status", "bf3-arm-mst-status-v"), ""), TEXT_SHOW: (0, text, ""),
            JSON_SHOW: (0, json.dumps(data), ""), PORTS: (0, ports, ""),
            ("devlink", "-V"): (0, "devlink utility, iproute2-6.1.0\n", "")}


def read_eswitch(run_module, answers, eswitch_ports=True, missing=()):
    failed, result = run_module(dpu_info, {"filter": ["eswitch"], "eswitch_ports": eswitch_ports},
                                FakeRunner(answers, missing=missing))
    assert not failed, result
    return result


def check(run_module, answers, options):
    return run_module(eswitch, options, FakeRunner(answers), check_mode=True)


CASES = {
    "both switchdev, switchdev asked": ({}, {}),
    "p1's device legacy": ({PF1: LEGACY}, {}),
    "both legacy": ({PF0: LEGACY, PF1: LEGACY}, {}),
    "legacy asked": ({}, {"mode": "legacy"}),
    "inline mode transport asked": ({}, {"inline_mode": "transport"}),
    "encap none asked, one device has it": ({PF0: ("switchdev", "none", "none")}, {"encap_mode": "none"}),
    "encap basic asked, one device has none": ({PF0: ("switchdev", "none", "none")}, {"encap_mode": "basic"}),
    "p0 alone, p1 legacy": ({PF1: LEGACY}, {"netdevs": ["p0"]}),
    "p1 and p0, in that order, p0 legacy": ({PF0: LEGACY}, {"netdevs": ["p1", "p0"]}),
    "a representor and its uplink (one device)": ({}, {"netdevs": ["pf0hpf", "p0"]}),
}


def options_of(tmp_path, **extra):
    """The switchdev role's options; an extra None leaves the option out (the module counts a key given as null
    among its exclusive options)."""
    options = dict({"netdevs": ["p0", "p1"], "mode": "switchdev", "fs_root": str(tmp_path), "timeout": 60}, **extra)
    return {key: value for key, value in options.items() if value is not None or key not in extra}


def agree(plan, module):
    """The plan's keys are the module's; ``vfs`` null (not read) only where the mode changes."""
    def read_keys(result):
        return {key: ([{k: v for k, v in e.items() if k != "vfs"} for e in result[key]] if key == "eswitches"
                      else result[key]) for key in KEYS if key != "vfs"}

    assert read_keys(plan) == read_keys(module)
    for mine, theirs in zip(plan["eswitches"], module["eswitches"], strict=True):
        mode_changes = mine["before"]["mode"] != mine["eswitch"]["mode"]
        assert mine["vfs"] == (None if mode_changes else theirs["vfs"]), mine
    assert plan["vfs"] == (None if None in [e["vfs"] for e in plan["eswitches"]] else module["vfs"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_plan_from_the_read_is_eswitch_check(run_module, tmp_path, case):
    states, extra = CASES[case]
    answers = machine(dict({PF0: SWITCHDEV, PF1: SWITCHDEV}, **states))
    read = read_eswitch(run_module, answers)
    options = options_of(tmp_path, **extra)
    failed, module = check(run_module, answers, options)
    assert not failed, module
    plan = eswitch_plan(read, options)
    assert plan["answered"] is True and plan["why"] == "", plan
    assert plan["in_state"] is (not module["changed"])
    agree(plan, module)
    assert (case in ("both switchdev, switchdev asked", "p0 alone, p1 legacy",
                     "a representor and its uplink (one device)")) is plan["in_state"]


def test_the_vfs_a_mode_change_unbinds_are_left_to_the_module(run_module, tmp_path):
    """The read does not look at sysfs: where the mode changes the plan says null, the module names the VFs (and
    reads them again when it sets the mode)."""
    make_vfs(tmp_path, pf="0000:03:00.1", vfs=("0000:03:00.3",), bound=(True,))
    answers = machine({PF0: SWITCHDEV, PF1: LEGACY})
    read = read_eswitch(run_module, answers)
    failed, module = check(run_module, answers, options_of(tmp_path))
    plan = eswitch_plan(read, options_of(tmp_path))
    assert not failed and module["vfs"] == ["0000:03:00.3"]
    assert plan["vfs"] is None and [e["vfs"] for e in plan["eswitches"]] == [[], None]
    assert [e["vfs"] for e in module["eswitches"]] == [[], ["0000:03:00.3"]]
    agree(plan, module)


def test_the_read_runs_the_port_query_once_only_when_asked(run_module):
    answers = machine()
    runner = FakeRunner(answers)
    failed, read = run_module(dpu_info, {"filter": ["eswitch"], "eswitch_ports": True}, runner)
    assert not failed and runner.cmd == [list(MST), list(TEXT_SHOW), list(PORTS)]
    assert read["devices"][0]["eswitch"]["ports"] == {"p0": PF0, "pf0hpf": PF0, "p1": PF1}
    runner = FakeRunner(answers)
    failed, read = run_module(dpu_info, {"filter": ["eswitch"]}, runner)
    assert not failed and runner.cmd == [list(MST), list(TEXT_SHOW)] and "ports" not in read["devices"][0]["eswitch"]
    plan = eswitch_plan(read, options_of("/"))
    assert plan["answered"] is False
    assert plan["why"] == "the read has no devlink ports (dpu_info's eswitch_ports was not asked)"


@pytest.mark.parametrize("devices, netdevs, words", [
    ({PF0: SWITCHDEV}, ["p0", "p1"], "devlink shows no eswitch for pci/0000:03:00.1 (the device of netdev p1)"),
    (None, ["p0", "ens9"], "netdev 'ens9' is not a port of any devlink device"),
])
def test_where_the_module_fails_the_plan_does_not_answer(run_module, tmp_path, devices, netdevs, words):
    answers = machine(devices)
    read = read_eswitch(run_module, answers)
    failed, module = check(run_module, answers, options_of(tmp_path, netdevs=netdevs))
    assert failed and words in module["msg"] and "nothing was changed" in module["msg"]
    plan = eswitch_plan(read, options_of(tmp_path, netdevs=netdevs))
    assert plan["answered"] is False and plan["in_state"] is False and words in plan["why"], plan


def test_a_port_on_no_card_is_left_to_the_module(run_module, tmp_path):
    """An SF's netdev is a port of an auxiliary device, no card's PCI function: the read keeps no port of it."""
    ports = json.dumps({"port": dict(json.loads(PORT_JSON)["port"], **{
        "auxiliary/mlx5_core.sf.2/229409": {"type": "eth", "netdev": "en3f0pf0sf0", "flavour": "pcisf"}})})
    answers = machine(ports=ports)
    read = read_eswitch(run_module, answers)
    assert "en3f0pf0sf0" not in read["devices"][0]["eswitch"]["ports"]
    plan = eswitch_plan(read, options_of(tmp_path, netdevs=["en3f0pf0sf0"]))
    assert plan["answered"] is False and "not a port of any devlink device" in plan["why"]


@pytest.fixture
def in_state(run_module, tmp_path):
    read = read_eswitch(run_module, machine())
    assert eswitch_plan(read, options_of(tmp_path))["in_state"] is True
    return read


@pytest.mark.parametrize("extra, kwargs, words", [
    ({}, {"reset": True}, "the card or its driver was reset in this run after the read"),
    ({"netdevs": []}, {}, "eswitch refuses the options: set eswitch failed: netdevs is empty"),
    ({"netdev": "p0"}, {}, "eswitch refuses the options: parameters are mutually exclusive: device|netdev|netdevs"),
    ({"netdevs": None}, {}, "eswitch refuses the options: one of the following is required: device, netdev, netdevs"),
    ({"mode": "offload"}, {}, "eswitch refuses the options: value of mode must be one of: legacy, switchdev"),
    ({"device": "0000:03:00.2", "netdevs": None}, {},
     "set eswitch failed: no devlink device pci/0000:03:00.2 on this machine"),
])
def test_a_read_that_cannot_answer_says_why(in_state, tmp_path, extra, kwargs, words):
    plan = eswitch_plan(in_state, options_of(tmp_path, **extra), **kwargs)
    assert plan["answered"] is False and plan["in_state"] is False and words in plan["why"], plan


def test_a_change_after_the_read_makes_it_stale(in_state, tmp_path):
    at = in_state["read_at"]
    assert eswitch_plan(in_state, options_of(tmp_path), changed_at=at - 5)["in_state"] is True
    for changed_at in (at, at + 0.001):
        plan = eswitch_plan(in_state, options_of(tmp_path), changed_at=changed_at)
        assert plan["answered"] is False and "a bluefleet module changed the node after the read" in plan["why"]
    assert "there is no read" in eswitch_plan({}, options_of(tmp_path))["why"]
    with pytest.raises(AnsibleFilterError, match="the options must be eswitch's options"):
        eswitch_plan(in_state, ["p0"])


def test_one_device_by_its_address_or_netdev(run_module, tmp_path):
    answers = machine({PF0: SWITCHDEV, PF1: LEGACY})
    read = read_eswitch(run_module, answers)
    for option in ({"device": "03:00.1"}, {"netdev": "p1"}):
        options = dict(option, mode="switchdev", fs_root=str(tmp_path))
        failed, module = check(run_module, answers, options)
        plan = eswitch_plan(read, options)
        assert not failed and plan["answered"] is True and module["changed"] is True
        assert {k: plan[k] for k in ("changed", "device", "eswitch", "before", "previous", "diff")} == \
            {k: module[k] for k in ("changed", "device", "eswitch", "before", "previous", "diff")}


def test_no_eswitch_section_answers_nothing(run_module, tmp_path):
    answers = machine()
    read = read_eswitch(run_module, answers, missing={"devlink"})
    assert read["devices"][0]["eswitch"] == {"available": False, "reason": "devlink not found on PATH"}
    plan = eswitch_plan(read, options_of(tmp_path))
    assert plan["why"] == "the read has no eswitch section: devlink not found on PATH"
    assert eswitch_plan(dict(read, devices=[]), options_of(tmp_path))["why"] == "the read lists no card"
    # the port query failed: the read keeps why, the task does not fail
    failing = {**answers, PORTS: (1, "", "devlink answers: Operation not permitted\n")}
    read = read_eswitch(run_module, failing)
    section = read["devices"][0]["eswitch"]
    assert section["ports"] is None and "Operation not permitted" in section["ports_reason"]
    plan = eswitch_plan(read, options_of(tmp_path))
    assert plan["answered"] is False and "the read has no devlink ports: find the device of each netdev" in plan["why"]


def test_an_omitted_option_is_left_out_as_for_the_module(in_state, tmp_path):
    """The role shares one dict of options between the module and the plan: ``omit`` (ansible-core's sentinel, or the
    older placeholder string) leaves the key out of both; an explicit null is what the module refuses."""
    from ansible._internal._templating._utils import Omit

    for omit in (Omit, "__omit_place_holder__d41d8cd98f00b204e9800998ecf8427e"):
        plan = eswitch_plan(in_state, options_of(tmp_path, inline_mode=omit, encap_mode=omit))
        assert plan["answered"] is True and plan["in_state"] is True, plan
    plan = eswitch_plan(in_state, dict(options_of(tmp_path), inline_mode=None))
    assert plan["answered"] is False and "value of inline_mode must be one of" in plan["why"]
