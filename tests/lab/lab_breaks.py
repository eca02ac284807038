"""The breaks of the checks that need a node's own network namespace (``links``), applied in a container lab.

One source of truth for tests/integration/test_conformance_breaks_sim.py (its coverage test counts these rows) and
for tests/lab/run_lab_breaks.py (Molecule's verify applies them in the converged lab). Each row: what an operator
does (``text``), on which side of the first pair (``side``: the GPU host or its DPU), the commands that break and
undo it (argv lists run with ``docker exec``), and the checks that must fail (``fails``: check id with its host in
brackets -> words of the message). Placeholders, from the inventory: ``{host}`` the first GPU host, ``{dpu}`` its
DPU, ``{peer_host}`` the other GPU host, ``{peer}`` the other DPU. A row with ``pending`` is not yet shown failing in
the lab (the reason says why); the runner lists it as such and does not count it as proven.
"""

from __future__ import annotations

# strongSwan's IKE and CHILD SAs of the pair, negotiated again (installs the kernel's SAs and policies anew)
SWANCTL_CONF = "/etc/swanctl/conf.d/bluefleet.conf"
RENEGOTIATE = [["swanctl", "--terminate", "--ike", "bf-{peer}"], ["swanctl", "--initiate", "--child", "bf-{peer}-vtep"]]

LAB_BREAKS = {
    "test_wiring.py::test_gpu_host_netdev_up": {
        "text": "`ip link set ens1f0np0 down` on a GPU host",
        "side": "host",
        "break": [["ip", "link", "set", "ens1f0np0", "down"]],
        "undo": [["ip", "link", "set", "ens1f0np0", "up"]],
        "fails": {"test_wiring.py::test_gpu_host_netdev_up[{host}]": "ens1f0np0 is not up"},
    },
    "test_wiring.py::test_dpu_netdev_present": {
        "text": "`ip link set pf0hpf down` on a DPU",
        "side": "dpu",
        "break": [["ip", "link", "set", "pf0hpf", "down"]],
        "undo": [["ip", "link", "set", "pf0hpf", "up"]],
        "fails": {"test_wiring.py::test_dpu_netdev_present[{dpu}]": "pf0hpf is administratively down"},
    },
    "test_ovs.py::test_bridge_ports_and_hw_offload": {
        "text": "`ovs-vsctl del-port br-sfc pf0hpf` on a DPU",
        "side": "dpu",
        "break": [["ovs-vsctl", "del-port", "br-sfc", "pf0hpf"]],
        "undo": [["ovs-vsctl", "add-port", "br-sfc", "pf0hpf"]],
        "fails": {"test_ovs.py::test_bridge_ports_and_hw_offload[{dpu}]": "lacks port(s) ['pf0hpf']"},
    },
    "test_ovs.py::test_host_reaches_peer_host_through_the_dpus": {
        "text": "`ip link set ens1f0np0 mtu 1500` on a GPU host",
        "side": "host",
        # iproute2 itself: in the lab the first `ip` on PATH is the twin's front-end, which also records the MTU
        # as the card netdev's (RoCE 9000, test_roce_mtu); the veth's overlay MTU (1300) is the real link's alone
        "break": [["/usr/sbin/ip", "link", "set", "ens1f0np0", "mtu", "1500"]],
        "undo": [["/usr/sbin/ip", "link", "set", "ens1f0np0", "mtu", "1300"]],
        "fails": {"test_ovs.py::test_host_reaches_peer_host_through_the_dpus[{host}]":
                  "overlay netdev MTU is not 1300"},
    },
    "test_ipsec.py::test_sas_installed_and_offloaded": {
        "text": "`hw_offload = packet` taken out of the DPU's swanctl connection, loaded and negotiated again",
        "side": "dpu",
        "break": [["sed", "-i", "s/hw_offload = packet/hw_offload = no/", SWANCTL_CONF],
                  ["swanctl", "--load-conns"], *RENEGOTIATE],
        "undo": [["sed", "-i", "s/hw_offload = no/hw_offload = packet/", SWANCTL_CONF],
                 ["swanctl", "--load-conns"], *RENEGOTIATE],
        "fails": {"test_ipsec.py::test_sas_installed_and_offloaded[{dpu}]": "offload"},
    },
    "test_ipsec.py::test_fabric_carries_only_esp": {
        "text": "`ip xfrm policy flush` on a DPU (traffic leaves in clear)",
        "side": "dpu",
        # not yet shown in the lab: there strongSwan's kernel-libipsec keeps SAs and policies in userspace (the
        # kernel's xfrm lists are empty, src/dpusim/tools/ip.py), so the flush changes nothing and the check passed;
        # the lab's equivalent (the peer VTEP's /32 routed off the IPsec TUN device) is still to write and prove
        "pending": "ip xfrm policy flush did not make the check fail in the lab (kernel-libipsec: no kernel policy)",
        "break": [["ip", "xfrm", "policy", "flush"]],
        "undo": RENEGOTIATE,
        "fails": {"test_ipsec.py::test_fabric_carries_only_esp[{dpu}]": "cleartext on the fabric port"},
    },
    "test_firewall.py::test_allowed_port_connects_and_blocked_port_does_not": {
        "text": "`nft flush table netdev bluefleet_firewall` on a DPU",
        "side": "dpu",
        "break": [["nft", "flush", "table", "netdev", "bluefleet_firewall"]],
        "undo": [["nft", "-f", "/etc/nftables.d/bluefleet-firewall.nft"]],
        "fails": {**{f"test_firewall.py::test_allowed_port_connects_and_blocked_port_does_not[{h}]":
                     "which firewall_networks allows, is closed"
                     for h in ("{host}", "{peer_host}")}},
    },
    "test_services.py::test_telemetry_metrics_answer": {
        "text": "`crictl stop <doca-telemetry-service>` on a DPU",
        "side": "dpu",
        # not yet shown in the lab: the twin's crictl answers ps, pods, images and exec only (no stop), and
        # `dpusim kubelet crash ... --stay-down` has no undo short of a converge
        "pending": "the twin's crictl has no `stop`; the break needs one (or a kubelet-side undo)",
        "break": [["sh", "-c", "crictl stop $(crictl ps -q --name doca-telemetry-service)"]],
        "undo": [],
        "fails": {"test_services.py::test_telemetry_metrics_answer[{dpu}]": "metrics"},
    },
}
