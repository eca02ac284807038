"""bluefleet.dpu.ipsec_peers: topologies, and every bad input is an error naming the host and the variable."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.bluefleet.dpu.plugins.filter.ipsec_peers import FilterModule, ipsec_peers


def fleet(n, **over):
    hv = {}
    for i in range(1, n + 1):
        hv[f"d{i}"] = {"bluefleet_uplink_address": f"192.168.50.{i}/24", "bluefleet_vtep_address": f"172.30.0.{i}/32",
                       "bluefleet_host": f"h{i}"}
        hv[f"h{i}"] = {"bluefleet_host_overlay_address": f"10.10.0.{i}/24"}
    for key, value in over.items():
        name, var = key.split("__")
        hv[name][var] = value
    return hv


def members(n):
    return [f"d{i}" for i in range(1, n + 1)]


def names(peers):
    return {k: [p["name"] for p in v] for k, v in peers.items()}


def test_registered():
    assert FilterModule().filters()["ipsec_peers"] is ipsec_peers


def test_pairs_in_name_order_with_addresses_and_one_initiator():
    out = ipsec_peers(fleet(4), members(4))
    assert names(out) == {"d1": ["d2"], "d2": ["d1"], "d3": ["d4"], "d4": ["d3"]}
    assert out["d1"][0] == {"name": "d2", "uplink_ip": "192.168.50.2", "vtep": "172.30.0.2/32",
                            "local_uplink_ip": "192.168.50.1", "local_vtep": "172.30.0.1/32", "initiator": True}
    assert out["d2"][0]["initiator"] is False


def test_explicit_pairs_mesh_and_hub():
    assert names(ipsec_peers(fleet(4), members(4), pairs=[["d1", "d3"], ["d4", "d2"]])) == {
        "d1": ["d3"], "d3": ["d1"], "d4": ["d2"], "d2": ["d4"]}
    mesh = names(ipsec_peers(fleet(3), members(3), topology="mesh"))
    assert {k: sorted(v) for k, v in mesh.items()} == {"d1": ["d2", "d3"], "d2": ["d1", "d3"], "d3": ["d1", "d2"]}
    hub = names(ipsec_peers(fleet(3), members(3), topology="hub", hub="d2"))
    assert hub == {"d1": ["d2"], "d2": ["d1", "d3"], "d3": ["d2"]}


@pytest.mark.parametrize("hv, kwargs, text", [
    (fleet(3), {}, "odd number"),
    (fleet(2), {"topology": "ring"}, "not one of pairs, mesh, hub"),
    (fleet(2), {"topology": "hub"}, "needs ipsec_hub"),
    (fleet(2), {"topology": "hub", "hub": "d9"}, "ipsec_hub='d9' is not a DPU"),
    (fleet(2), {"pairs": [["d1", "d9"]]}, "names 'd9', which is not a DPU"),
    (fleet(4), {"pairs": [["d1", "d2"], ["d1", "d3"]]}, "names d1 twice"),
    (fleet(2, d2__bluefleet_uplink_address=""), {}, "d2 has no bluefleet_uplink_address"),
    (fleet(2, d1__bluefleet_uplink_address="192.168.50.300/24"), {}, "not a valid address"),
    (fleet(2, d1__bluefleet_uplink_address="192.168.50.1"), {}, "with a prefix length"),
    (fleet(2, d1__bluefleet_vtep_address="172.30.0.5/24"), {}, "must be a /32"),
    (fleet(2, d2__bluefleet_vtep_address="172.30.0.1/32"), {}, "same bluefleet_vtep_address"),
    (fleet(2, d2__bluefleet_uplink_address="192.168.50.1/24"), {}, "same bluefleet_uplink_address"),
    (fleet(2, d1__bluefleet_vtep_address="192.168.50.77/32"), {}, "lies in the fabric subnet"),
    (fleet(2, h1__bluefleet_host_overlay_address="192.168.50.10/24"), {}, "overlaps d1's fabric subnet"),
    (fleet(2, d1__bluefleet_uplink_address="192.168.50.0/24"), {}, "network or broadcast"),
])
def test_bad_input_names_the_fix(hv, kwargs, text):
    with pytest.raises(AnsibleFilterError) as err:
        ipsec_peers(hv, members(len([k for k in hv if k.startswith("d")])), **kwargs)
    assert text in str(err.value)


def test_empty_group_is_an_error():
    with pytest.raises(AnsibleFilterError, match="no DPU"):
        ipsec_peers({}, [])
