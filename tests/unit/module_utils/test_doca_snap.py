"""_doca.check_snap: SNAP storage settings that do not hang together fail with a message naming the entry,
what is wrong and the variables to fix."""

from __future__ import annotations

import copy

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _doca

TARGETS = [{"name": "nvme0", "address": "192.0.2.10", "port": 4420, "nqn": "nqn.2026-01.org.example:s0"}]
CONTROLLERS = [{"name": "NVMeCtrl1", "pf_id": 0}]
NAMESPACES = [{"bdev": "nvme0n1", "nsid": 1, "controller": "NVMeCtrl1", "size_bytes": 10 ** 12}]


def test_good_settings_pass():
    assert _doca.check_snap(TARGETS, CONTROLLERS, NAMESPACES) is None
    assert _doca.check_snap([], CONTROLLERS, []) is None


def _bad(part, index, **change):
    data = {"targets": copy.deepcopy(TARGETS), "controllers": copy.deepcopy(CONTROLLERS),
            "namespaces": copy.deepcopy(NAMESPACES)}
    data[part][index].update(change)
    for key, value in change.items():
        if value is None:
            del data[part][index][key]
    return data


@pytest.mark.parametrize("data, words", [
    (_bad("namespaces", 0, controller="NVMeCtrl9"),
     ["doca_services_snap_namespaces[0] (nsid 1)", "'NVMeCtrl9'", "declared controllers: NVMeCtrl1"]),
    (_bad("namespaces", 0, controller=None), ["controller None is not declared"]),
    (_bad("namespaces", 0, size_bytes=-5), ["size_bytes -5 must be a positive integer"]),
    (_bad("namespaces", 0, size_bytes="1T"), ["size_bytes '1T'"]),
    (_bad("namespaces", 0, bdev="nvme7n1"), ["bdev 'nvme7n1' is not <target>n<N> of a declared target",
                                             "targets: nvme0"]),
    (_bad("namespaces", 0, nsid=0), ["nsid must be a positive integer"]),
    (_bad("targets", 0, nqn=None), ["doca_services_snap_targets[0] (nvme0) has no nqn"]),
    (_bad("targets", 0, nqn="iqn.2026-01.example"), ["must start with 'nqn.'"]),
    (_bad("controllers", 0, pf_id="zero"), ["pf_id 'zero' must be a non-negative integer"]),
])
def test_bad_settings_name_the_entry_and_the_fix(data, words):
    with pytest.raises(_doca.DocaError) as err:
        _doca.check_snap(data["targets"], data["controllers"], data["namespaces"])
    for word in words + ["fix doca_services_snap_targets / doca_services_snap_controllers"]:
        assert word in str(err.value), str(err.value)


def test_duplicate_nsid_and_controller():
    with pytest.raises(_doca.DocaError, match="nsid 1 is used twice"):
        _doca.check_snap(TARGETS, CONTROLLERS, NAMESPACES + [dict(NAMESPACES[0])])
    with pytest.raises(_doca.DocaError, match="'NVMeCtrl1' is declared twice"):
        _doca.check_snap(TARGETS, CONTROLLERS * 2, NAMESPACES)
