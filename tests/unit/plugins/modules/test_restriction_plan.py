"""Preflight's read answers host_restriction's check: dpu_info's section privilege and the filter
bluefleet.dpu.restriction_plan.

The filter must agree with the module: on the same DPU (fake tool outputs: the BlueField-3 Arm ``mst status -v``
fixture and the ``mlxprivhost q`` layouts of test_host_restriction) the plan is in state exactly when the module in
check mode changes nothing, and gives the same result keys. A read that cannot answer (not one card, no privilege
section, another device, the node changed after it, options the module refuses) answers nothing, so the module runs.
"""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.bluefleet.dpu.plugins.filter.restriction_plan import restriction_plan
from ansible_collections.bluefleet.dpu.plugins.modules import dpu_info, host_restriction
from fake_tools import FakeRunner, fixture_text
from test_host_restriction import PRIVILEGED, RESTRICTED, RESTRICTED_ALL, with_flags

BF3 = "/dev/mst/mt41692_pciconf0"
MST = ("mst", "status", "-v")
QUERY = ("mlxprivhost", "-d", BF3, "q")
# what the module's check mode returns about the card, besides cmd, tool_version and check_mode_prediction
KEYS = ("changed", "device", "level", "previous_level", "port_functions", "reset_required", "reset_required_by",
        "diff")


def machine(query, mst="bf3-arm-mst-status-v"):
    """Tool answers of a BlueField Arm side whose mlxprivhost prints ``query``."""
    return {MST: (0, fixture_text("mst-status", mst), ""), QUERY: (0, query, ""),
            ("mlxprivhost", "-v"): (0, "mlxprivhost 4.30.0\n", "")}


def read_privilege(run_module, answers, **args):
    failed, result = run_module(dpu_info, dict({"filter": ["privilege"]}, **args), FakeRunner(answers))
    assert not failed, result
    return result


def check(run_module, answers, options, missing=()):
    return run_module(host_restriction, options, FakeRunner(answers, missing=missing), check_mode=True)


STATES = {
    "privileged": PRIVILEGED,
    "restricted, no flag": RESTRICTED,
    "restricted, every flag": RESTRICTED_ALL,
    "restricted, tracer and port owner": with_flags(RESTRICTED, disable_tracer=True, disable_port_owner=True),
}
ALL_ON = {"disable_rshim": True, "disable_tracer": True, "disable_counter_rd": True, "disable_port_owner": True}
OPTIONS = {
    "restricted, keep the flags": {"state": "restricted"},
    "zero trust (every flag)": dict(ALL_ON, state="restricted"),
    "restricted, tracer on and rshim off": {"state": "restricted", "disable_tracer": True, "disable_rshim": False},
    "privileged": {"state": "privileged"},
    "privileged, flags false": {"state": "privileged", "disable_rshim": False, "disable_tracer": None},
}


@pytest.mark.parametrize("options", sorted(OPTIONS))
@pytest.mark.parametrize("state", sorted(STATES))
def test_the_plan_from_the_read_is_host_restriction_check(run_module, state, options):
    answers = machine(STATES[state])
    read = read_privilege(run_module, answers)
    failed, module = check(run_module, answers, OPTIONS[options])
    assert not failed, module
    plan = restriction_plan(read, dict(OPTIONS[options], timeout=120))
    assert plan["answered"] is True and plan["why"] == "", plan
    assert plan["in_state"] is (not module["changed"])
    assert {key: plan[key] for key in KEYS} == {key: module[key] for key in KEYS}


def test_the_cases_cover_both_answers(run_module):
    """The agreement above is tested where the module changes something and where it does not."""
    answers = machine(RESTRICTED_ALL)
    read = read_privilege(run_module, answers)
    assert restriction_plan(read, dict(ALL_ON, state="restricted"))["in_state"] is True
    plan = restriction_plan(read, {"state": "privileged"})
    assert plan["in_state"] is False and plan["reset_required"] == "power_cycle"
    assert plan["reset_required_by"] == {"disable_rshim": "power_cycle", "disable_tracer": "firmware_reset",
                                         "disable_counter_rd": "firmware_reset", "disable_port_owner": "none"}


def test_the_device_the_module_would_query_is_the_read_card(run_module):
    read = read_privilege(run_module, machine(PRIVILEGED))
    assert restriction_plan(read, {"state": "privileged", "device": BF3})["in_state"] is True
    plan = restriction_plan(read, {"state": "privileged", "device": "0000:03:00.0"})
    assert plan["answered"] is False
    assert plan["why"] == "the read queried %s, host_restriction would query 0000:03:00.0" % BF3


@pytest.fixture
def in_state(run_module):
    read = read_privilege(run_module, machine(PRIVILEGED))
    assert restriction_plan(read, {"state": "privileged"})["in_state"] is True
    return read


@pytest.mark.parametrize("options, kwargs, words", [
    ({"state": "privileged"}, {"reset": True}, "the card or its driver was reset in this run after the read"),
    ({}, {}, "host_restriction refuses the options: missing required arguments: state"),
    ({"state": "zero"}, {}, "host_restriction refuses the options: value of state must be one of"),
    ({"state": "privileged", "disable_rshim": True}, {},
     "host_restriction refuses the options: set host privilege failed: disable_rshim apply only with state=restricted"),
    ({"state": "privileged", "speed": 1}, {},
     "host_restriction refuses the options: speed. Supported parameters include"),
])
def test_a_read_that_cannot_answer_says_why(in_state, options, kwargs, words):
    plan = restriction_plan(in_state, options, **kwargs)
    assert plan["answered"] is False and plan["in_state"] is False and words in plan["why"], plan


def test_a_change_after_the_read_makes_it_stale(in_state):
    at = in_state["read_at"]
    assert restriction_plan(in_state, {"state": "privileged"}, changed_at=at - 5)["in_state"] is True
    for changed_at in (at, at + 0.001):
        plan = restriction_plan(in_state, {"state": "privileged"}, changed_at=changed_at)
        assert plan["answered"] is False and "a bluefleet module changed the node after the read" in plan["why"]
    no_time = {k: v for k, v in in_state.items() if k != "read_at"}
    assert "there is no read of the node from this run" in restriction_plan(no_time, {"state": "privileged"})["why"]
    assert "there is no read" in restriction_plan({}, {"state": "privileged"})["why"]
    with pytest.raises(AnsibleFilterError, match="the options must be host_restriction's options"):
        restriction_plan(in_state, None)


def test_no_privilege_section_answers_nothing(run_module):
    # mlxprivhost missing: the read says so; the module would run mstprivhost instead (when installed)
    answers = machine(PRIVILEGED)
    read = read_privilege(run_module, answers)
    read_missing = run_module(dpu_info, {"filter": ["privilege"]}, FakeRunner(answers, missing={"mlxprivhost"}))[1]
    assert read_missing["devices"][0]["privilege"]["available"] is False
    plan = restriction_plan(read_missing, {"state": "privileged"})
    assert plan == {"answered": False, "in_state": False,
                    "why": "the read has no privilege section: mlxprivhost not found on PATH"}
    # the GPU host side: mlxprivhost is not run there
    host = read_privilege(run_module, {MST: (0, fixture_text("mst-status", "bf2-host-mst-status-v-fixture"), "")})
    assert "the read has no privilege section: mlxprivhost runs on the DPU's Arm side" in \
        restriction_plan(host, {"state": "privileged"})["why"]
    # the section not asked for
    del read["devices"][0]["privilege"]
    assert restriction_plan(read, {"state": "privileged"})["why"] == "the read has no privilege section"


def test_two_cards_answer_nothing(run_module):
    read = read_privilege(run_module, {MST: (0, fixture_text("mst-status", "cx7-mst-status-v-container-ocp"), "")},
                          side="dpu")
    assert len(read["devices"]) == 2
    plan = restriction_plan(read, {"state": "privileged"})
    assert plan["answered"] is False and plan["why"] == "the read lists 2 cards, not one"
    assert restriction_plan(dict(read, devices=[]), {"state": "privileged"})["why"] == "the read lists 0 cards, not one"


def test_a_query_the_module_refuses_answers_nothing(run_module):
    """The module fails on a query without the flags; the plan leaves it to the module to say so."""
    text = PRIVILEGED.split("\n\nPort", maxsplit=1)[0] + "\n"
    answers = machine(text)
    read = read_privilege(run_module, answers)
    plan = restriction_plan(read, {"state": "privileged"})
    failed, module = check(run_module, answers, {"state": "privileged"})
    assert failed and "'disable_rshim' is None, expected TRUE or FALSE" in module["msg"]
    assert plan["answered"] is False and plan["why"] == module["msg"]


def test_mstflint_only_has_no_read_to_answer_from(run_module):
    """With mstflint's mstprivhost alone the module queries the PCI address; dpu_info has no privilege read."""
    answers = {**machine(PRIVILEGED), ("mstprivhost", "-d", "0000:03:00.0", "q"): (0, PRIVILEGED, ""),
               ("mstprivhost", "-v"): (0, "mstprivhost 1.0.0\n", "")}
    failed, module = check(run_module, answers, {"state": "privileged"}, missing={"mlxprivhost"})
    assert not failed and module["device"] == "0000:03:00.0"
    read = run_module(dpu_info, {"filter": ["privilege"]}, FakeRunner(answers, missing={"mlxprivhost"}))[1]
    assert restriction_plan(read, {"state": "privileged"})["answered"] is False
