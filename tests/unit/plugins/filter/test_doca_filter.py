"""bluefleet.dpu.snap_settings: SNAP settings that hang together come back unchanged; others fail with
check_snap's message (the entry, what is wrong, the variables to fix) as an AnsibleFilterError."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.bluefleet.dpu.plugins.filter.doca import FilterModule, snap_settings

TARGETS = [{"name": "nvme0", "address": "192.0.2.10", "port": 4420, "nqn": "nqn.2026-01.org.example:s0"},
           {"name": "nvme1", "address": "192.0.2.11", "nqn": "nqn.2026-01.org.example:s1"}]
CONTROLLERS = [{"name": "NVMeCtrl1", "pf_id": 0}, {"name": "NVMeCtrl2", "pf_id": 1}]
NAMESPACES = [{"bdev": "nvme0n1", "nsid": 1, "controller": "NVMeCtrl1", "size_bytes": 10 ** 12},
              {"bdev": "nvme1n2", "nsid": 2, "controller": "NVMeCtrl2"}]
FIX = "fix doca_services_snap_targets / doca_services_snap_controllers / doca_services_snap_namespaces"


def test_registered_under_its_name():
    assert FilterModule().filters()["snap_settings"] is snap_settings


def test_settings_that_hang_together_pass_through_unchanged():
    targets = copy.deepcopy(TARGETS)
    out = snap_settings(targets, CONTROLLERS, NAMESPACES)
    assert out is targets and out == TARGETS
    # the role's defaults: no targets, one controller, no namespaces
    assert snap_settings([], [{"name": "NVMeCtrl1", "pf_id": 0}], []) == []
    assert snap_settings(None) is None


def _with(part, index, **change):
    data = {"targets": copy.deepcopy(TARGETS), "controllers": copy.deepcopy(CONTROLLERS),
            "namespaces": copy.deepcopy(NAMESPACES)}
    for key, value in change.items():
        if value is None:
            del data[part][index][key]
        else:
            data[part][index][key] = value
    return data


@pytest.mark.parametrize("data, words", [
    # issue #8: a SNAP target without an NQN
    (_with("targets", 1, nqn=None), ["doca_services_snap_targets[1] (nvme1) has no nqn"]),
    (_with("targets", 0, nqn="iqn.2026-01.org.example:s0"), ["(nvme0): NQN 'iqn.2026-01.org.example:s0' must start"]),
    (_with("targets", 0, address=None), ["doca_services_snap_targets[0] (nvme0) has no address"]),
    (_with("namespaces", 1, controller="NVMeCtrl9"),
     ["doca_services_snap_namespaces[1] (nsid 2): controller 'NVMeCtrl9' is not declared",
      "declared controllers: NVMeCtrl1, NVMeCtrl2"]),
    (_with("namespaces", 0, bdev="nvme7n1"),
     ["bdev 'nvme7n1' is not <target>n<N> of a declared target (targets: nvme0, nvme1)"]),
    (_with("namespaces", 1, nsid=1), ["doca_services_snap_namespaces[1] (nsid 1): nsid 1 is used twice"]),
    (_with("namespaces", 0, size_bytes="1T"), ["size_bytes '1T' must be a positive integer"]),
    (_with("controllers", 1, name="NVMeCtrl1"), ["controller 'NVMeCtrl1' is declared twice"]),
])
def test_bad_settings_fail_with_check_snaps_message(data, words):
    with pytest.raises(AnsibleFilterError) as err:
        snap_settings(data["targets"], data["controllers"], data["namespaces"])
    text = str(err.value)
    assert text.startswith("snap_settings: "), text
    for word in words + [FIX]:
        assert word in text, text


@pytest.mark.parametrize("args, var", [
    (({"name": "nvme0"}, CONTROLLERS, []), "doca_services_snap_targets"),
    ((TARGETS, "NVMeCtrl1", NAMESPACES), "doca_services_snap_controllers"),
    ((TARGETS, CONTROLLERS, 5), "doca_services_snap_namespaces"),
])
def test_a_value_that_is_not_a_list_names_its_variable(args, var):
    with pytest.raises(AnsibleFilterError, match="snap_settings: %s must be a list of mappings" % var):
        snap_settings(*args)
