"""The diff helper shared by modules."""

from __future__ import annotations

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import changed_keys, make_diff


def test_equal_dicts_have_no_changes():
    assert changed_keys({"a": 1, "b": {"c": 2}}, {"b": {"c": 2}, "a": 1}) == []


def test_changed_added_removed_and_nested_keys():
    before = {"mode": "legacy", "gone": 1, "nv": {"SRIOV_EN": "False(0)", "NUM_OF_VFS": 0}}
    after = {"mode": "switchdev", "new": 2, "nv": {"SRIOV_EN": "True(1)", "NUM_OF_VFS": 0}}
    assert changed_keys(before, after) == ["gone", "mode", "new", "nv.SRIOV_EN"]


def test_dict_replaced_by_scalar_is_one_change():
    assert changed_keys({"a": {"b": 1}}, {"a": None}) == ["a"]


def test_none_and_absent_differ():
    assert changed_keys({"a": None}, {}) == ["a"]


def test_non_dicts_are_refused():
    with pytest.raises(TypeError, match="compares two dicts"):
        changed_keys([], {})


def test_make_diff_with_and_without_headers():
    assert make_diff({"a": 1}, {"a": 2}) == {"before": {"a": 1}, "after": {"a": 2}}
    assert make_diff({}, {}, "before.json", "after.json") == {
        "before": {}, "after": {}, "before_header": "before.json", "after_header": "after.json"}
