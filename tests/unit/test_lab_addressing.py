"""The lab's addressing in the inventory (`bluefleet lab up --fabric-subnet`): what the ipsec / ovs / host_overlay
roles read, and bad subnets refused before anything is created."""

from __future__ import annotations

import pytest

from bluefleet.lab_images import LabError
from bluefleet.lab_wiring import LAB_PSK, Topology, host_vars, inventory


def test_addresses_per_pair_from_the_fabric_subnet():
    hv = host_vars(Topology("t", 2, fabric_subnet="192.168.61.0/24"))
    assert hv["t-node2-dpu"]["bluefleet_uplink_address"] == "192.168.61.2/24"
    assert hv["t-node2-dpu"]["bluefleet_vtep_address"] == "172.30.0.2/32"
    assert hv["t-node1"]["bluefleet_host_overlay_address"] == "10.10.0.1/24"
    assert hv["t-node1"]["bluefleet_host_overlay_mtu"] == 1300
    topo = Topology("t", 2, fabric_subnet="192.168.61.0/24")
    assert topo.fabric_gateway == "192.168.61.254"
    assert inventory(topo)["all"]["vars"]["ipsec_psk"] == LAB_PSK and "password" in LAB_PSK


@pytest.mark.parametrize("subnet, text", [
    ("192.168.61.1/24", "not an IPv4 network"),
    ("nonsense", "not an IPv4 network"),
    ("192.168.61.0/30", "no room"),
    ("172.30.0.0/16", "overlaps 172.30.0.0/24"),
    ("10.0.0.0/8", "overlaps 10.10.0.0/24"),
])
def test_bad_fabric_subnet_is_refused(subnet, text):
    with pytest.raises(LabError, match=text):
        Topology("t", 2, fabric_subnet=subnet)
