"""_roce: the derivations (ToS, PFC vector, ETS shares) and the validation of a lossless-RoCE set.

Examples for the documented cases, hypothesis for the properties: a derivation round-trips, ETS always sums to
100 with the share on the RoCE TC, and validation never raises, only lists problems.
"""

from __future__ import annotations

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._roce import (
    MLX5_MAX_MTU,
    RoceError,
    default_dscp_priority,
    dscp_from_tos,
    ets_bandwidth,
    pfc_priorities,
    pfc_vector,
    tos_from_dscp,
    validate,
)
from hypothesis import given
from hypothesis import strategies as st

GOOD = {"trust": "dscp", "pfc": [3], "ecn": [3], "dscp": 26, "cnp_dscp": 48, "dscp_priority": 3,
        "prio_tc": list(range(8)), "tsa": ["ets"] * 8, "tc_bw": [8, 7, 7, 50, 7, 7, 7, 7], "roce_mode": "v2",
        "tos": 104, "mtu": 9000}


def test_tos_is_dscp_shifted_left_two():
    assert tos_from_dscp(26) == 104 and tos_from_dscp(48) == 192 and tos_from_dscp(0) == 0
    assert dscp_from_tos(106) == 26  # the ECN bits do not change the DSCP


@pytest.mark.parametrize("bad", [-1, 64, 3.0, "26", True, None])
def test_tos_rejects_a_dscp_out_of_range(bad):
    with pytest.raises(RoceError, match="0..63"):
        tos_from_dscp(bad)


def test_default_dscp_table_priority():
    assert default_dscp_priority(26) == 3 and default_dscp_priority(48) == 6 and default_dscp_priority(7) == 0


def test_pfc_vector():
    assert pfc_vector([3]) == [0, 0, 0, 1, 0, 0, 0, 0]
    assert pfc_vector([]) == [0] * 8
    assert pfc_vector([0, 7]) == [1, 0, 0, 0, 0, 0, 0, 1]
    with pytest.raises(RoceError, match="PFC priority 8 is out of range: use 0..7"):
        pfc_vector([8])


def test_ets_bandwidth_examples():
    assert ets_bandwidth(3, 50) == [8, 7, 7, 50, 7, 7, 7, 7]
    assert ets_bandwidth(0, 50) == [50, 8, 7, 7, 7, 7, 7, 7]
    assert ets_bandwidth(5, 100) == [0, 0, 0, 0, 0, 100, 0, 0]
    with pytest.raises(RoceError, match="ETS share 0"):
        ets_bandwidth(3, 0)
    with pytest.raises(RoceError, match="priority 8"):
        ets_bandwidth(8, 50)


def test_a_good_set_has_no_problem():
    assert validate(GOOD) == []
    assert validate({}) == []  # nothing managed, nothing wrong


@pytest.mark.parametrize("change, words", [
    ({"pfc": [8]}, "pfc priority 8 is out of range: use 0..7"),
    ({"ecn": [-1]}, "ecn priority -1 is out of range"),
    ({"dscp_priority": 9}, "priority 9 is out of range"),
    ({"cnp_dscp": 26}, "dscp and cnp_dscp are both 26"),
    ({"dscp": 64}, "dscp 64 is out of range: use 0..63"),
    ({"mtu": 12000}, "mtu 12000 is above what the port supports (max 9978): lower bluefleet_roce_mtu"),
    ({"mtu": 60}, "mtu 60 is below the minimum 68"),
    ({"trust": "vlan"}, "trust 'vlan' is not one of pcp, dscp"),
    ({"tc_bw": [10] * 8}, "must sum to 100, they sum to 80"),
    ({"tc_bw": [50, 50]}, "tc_bw must have 8 items, got 2"),
    ({"tsa": ["ets"] * 7 + ["wfq"]}, "tsa must be 8 items"),
    ({"tsa": ["strict"] + ["ets"] * 7, "tc_bw": [8, 7, 7, 50, 7, 7, 7, 7]}, "tc_bw must be 0 on strict/vendor"),
    ({"roce_mode": "v3"}, "roce_mode 'v3' is not one of v1, v2"),
    ({"tos": 256}, "tos 256 is out of range: use 0..255"),
])
def test_each_bad_value_is_named(change, words):
    problems = validate(dict(GOOD, **change))
    assert len(problems) >= 1 and any(words in p for p in problems), problems


def test_max_mtu_is_the_callers():
    assert validate({"mtu": 9000}, max_mtu=4200) == [
        "mtu 9000 is above what the port supports (max 4200): lower bluefleet_roce_mtu"]
    assert validate({"mtu": MLX5_MAX_MTU}) == []


@given(st.integers(0, 63))
def test_tos_round_trips(dscp):
    tos = tos_from_dscp(dscp)
    assert 0 <= tos <= 252 and tos % 4 == 0 and dscp_from_tos(tos) == dscp
    assert validate({"dscp": dscp, "tos": tos}) == []


@given(st.lists(st.integers(0, 7), max_size=10))
def test_pfc_vector_round_trips(prios):
    vector = pfc_vector(prios)
    assert len(vector) == 8 and set(vector) <= {0, 1}
    assert pfc_priorities(vector) == sorted(set(prios))


@given(st.integers(0, 7), st.integers(1, 100))
def test_ets_always_sums_to_100_with_the_share_on_the_roce_tc(priority, share):
    bw = ets_bandwidth(priority, share)
    assert len(bw) == 8 and sum(bw) == 100 and bw[priority] == share and min(bw) >= 0
    others = [b for tc, b in enumerate(bw) if tc != priority]
    assert max(others) - min(others) <= 6  # the rest is even, but for the remainder on one TC
    assert validate({"tsa": ["ets"] * 8, "tc_bw": bw, "prio_tc": list(range(8))}) == []


@given(st.integers(0, 63), st.integers(0, 63))
def test_data_and_cnp_dscp_must_differ(dscp, cnp):
    problems = validate({"dscp": dscp, "cnp_dscp": cnp})
    assert bool(problems) == (dscp == cnp)


SETTING = st.fixed_dictionaries({}, optional={
    "trust": st.one_of(st.sampled_from(["pcp", "dscp", "x"]), st.none()),
    "pfc": st.lists(st.integers(-3, 10)), "ecn": st.lists(st.integers(-3, 10)),
    "dscp": st.integers(-5, 70), "cnp_dscp": st.integers(-5, 70), "dscp_priority": st.integers(-2, 9),
    "prio_tc": st.lists(st.integers(-1, 9), max_size=9), "tc_bw": st.lists(st.integers(-5, 120), max_size=9),
    "tsa": st.lists(st.sampled_from(["ets", "strict", "vendor", "bad"]), max_size=9),
    "roce_mode": st.sampled_from(["v1", "v2", "v9"]), "tos": st.integers(-5, 300),
    "mtu": st.integers(0, 20000),
})


@given(SETTING)
def test_validate_never_raises_and_problems_are_sentences(settings):
    problems = validate(settings)
    assert isinstance(problems, list) and all(isinstance(p, str) and p for p in problems)
    if not problems and "mtu" in settings:
        assert 68 <= settings["mtu"] <= MLX5_MAX_MTU
