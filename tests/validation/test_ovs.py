"""Conformance: the DPU's Open vSwitch bridge and the host-to-host data path through it (stage offload).

What the bluefleet.dpu.ovs and host_overlay roles set, read back: ``ovs-vsctl show`` (the bridge with the
host representor and the overlay port, no interface errors), ``ovs-vsctl get Open_vSwitch . other_config``
(hw-offload "true"), and a GPU host reaching its peer host's overlay address (ping with a full-size DF frame,
and TCP). Needs the node's own network namespace and Open vSwitch: lab containers and real machines.
"""

from __future__ import annotations

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._ovs import parse_vsctl_get_map, parse_vsctl_show

pytestmark = pytest.mark.stage("offload")

FIX = "fix: {what} / playbooks/offload.yml (bluefleet.dpu.ovs)"


def _ok(node, cmd: str) -> str:
    res = node.run(cmd)
    assert res.rc == 0, (f"{node.name}: `{cmd}` failed (rc={res.rc}): {(res.stderr or res.stdout).strip()[-300:]}; "
                         "fix: Open vSwitch installed and running (playbooks/offload.yml starts it)")
    return res.stdout


@pytest.mark.links
def test_bridge_ports_and_hw_offload(dpu):
    bridge = dpu.vars.get("ovs_bridge", "br-sfc")
    want_ports = {dpu.vars.get("ovs_host_representor", "pf0hpf"), dpu.vars.get("ovs_vxlan_name", "vxlan0")}
    show = parse_vsctl_show(_ok(dpu, "ovs-vsctl show"))
    assert bridge in show["bridges"], (f"{dpu.name}: no OVS bridge {bridge} (have {sorted(show['bridges'])}); "
                                       + FIX.format(what="ovs_bridge"))
    ports = show["bridges"][bridge]["ports"]
    missing = sorted(want_ports - set(ports))
    assert not missing, (f"{dpu.name}: bridge {bridge} lacks port(s) {missing} (has {sorted(ports)}); "
                         + FIX.format(what="ovs_host_representor / ovs_vxlan_name"))
    errors = {i: d["error"] for p in ports.values() for i, d in p["interfaces"].items() if d.get("error")}
    assert not errors, f"{dpu.name}: OVS reports interface errors on {bridge}: {errors}"
    other = parse_vsctl_get_map(_ok(dpu, "ovs-vsctl get Open_vSwitch . other_config"))["map"]
    assert other.get("hw-offload") == "true", (f"{dpu.name}: other_config:hw-offload is {other.get('hw-offload')!r}, "
                                               "expected 'true'; " + FIX.format(what="ovs_other_config"))


@pytest.mark.links
def test_host_reaches_peer_host_through_the_dpus(gpu_host, fleet):
    mine = gpu_host.vars.get("bluefleet_host_overlay_address")
    assert mine, (f"{gpu_host.name}: no bluefleet_host_overlay_address in the inventory; fix: the inventory "
                  "(bluefleet lab up writes it)")
    mtu = int(gpu_host.vars.get("bluefleet_host_overlay_mtu", 1300))
    others = [h for h in fleet.runner.get_hosts("gpu_hosts") if h != gpu_host.name
              and fleet.runner.get_variables(h).get("bluefleet_host_overlay_address")]
    assert others, f"{gpu_host.name}: no other GPU host with an overlay address to reach; fix: the inventory"
    dpu = (gpu_host.vars.get("bluefleet_dpus") or [""])[0]
    peer_dpu = None
    for dname in fleet.runner.get_hosts("dpus"):
        if fleet.runner.get_variables(dname).get("bluefleet_host") in others:
            peer_dpu = dname
            break
    target = str(fleet.runner.get_variables(others[0])["bluefleet_host_overlay_address"]).split("/", maxsplit=1)[0]
    res = gpu_host.run(f"ping -c 3 -W 2 -M do -s {mtu - 28} {target}")
    assert res.rc == 0, (f"{gpu_host.name}: ping {target} ({others[0]}) with {mtu}-byte DF frames through {dpu} and "
                         f"{peer_dpu} failed: {res.stdout.strip()[-300:]}; fix: playbooks/offload.yml (ipsec, ovs, "
                         "host overlay MTU bluefleet_host_overlay_mtu)")
    link = gpu_host.run("ip -o link show dev " + gpu_host.vars.get("host_overlay_interface", "ens1f0np0")).stdout
    assert f"mtu {mtu} " in link, (f"{gpu_host.name}: overlay netdev MTU is not {mtu}: {link.strip()}; "
                                   "fix: bluefleet_host_overlay_mtu / playbooks/offload.yml (host_overlay)")
