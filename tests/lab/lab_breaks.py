"""The breaks of the checks that need a node's own network namespace (``links``), applied in a container lab.

One source of truth for tests/integration/test_conformance_breaks_sim.py (its coverage test counts these rows) and
for tests/lab/run_lab_breaks.py (Molecule's verify applies them in the converged lab). Each row: what an operator
does (``text``), on which side of the first pair (``side``: the GPU host or its DPU), the commands that break and
undo it (argv lists run with ``docker exec``), and the checks that must fail (``fails``: check id -> words of the
message, for the first pair's host or DPU; ``{peer}`` is the other DPU's inventory name).
"""

from __future__ import annotations

LAB_BREAKS = {
    "test_wiring.py::test_gpu_host_netdev_up": {
        "text": "`ip link set ens1f0np0 down` on a GPU host",
        "side": "host",
        "break": [["ip", "link", "set", "ens1f0np0", "down"]],
        "undo": [["ip", "link", "set", "ens1f0np0", "up"]],
        "fails": {"test_wiring.py::test_gpu_host_netdev_up": "ens1f0np0 is not up"},
    },
    "test_wiring.py::test_dpu_netdev_present": {
        "text": "`ip link set pf0hpf down` on a DPU",
        "side": "dpu",
        "break": [["ip", "link", "set", "pf0hpf", "down"]],
        "undo": [["ip", "link", "set", "pf0hpf", "up"]],
        "fails": {"test_wiring.py::test_dpu_netdev_present": "pf0hpf is administratively down"},
    },
    "test_ovs.py::test_bridge_ports_and_hw_offload": {
        "text": "`ovs-vsctl del-port br-sfc pf0hpf` on a DPU",
        "side": "dpu",
        "break": [["ovs-vsctl", "del-port", "br-sfc", "pf0hpf"]],
        "undo": [["ovs-vsctl", "add-port", "br-sfc", "pf0hpf"]],
        "fails": {"test_ovs.py::test_bridge_ports_and_hw_offload": "lacks port(s) ['pf0hpf']"},
    },
    "test_ovs.py::test_host_reaches_peer_host_through_the_dpus": {
        "text": "`ip link set ens1f0np0 mtu 1500` on a GPU host",
        "side": "host",
        "break": [["ip", "link", "set", "ens1f0np0", "mtu", "1500"]],
        "undo": [["ip", "link", "set", "ens1f0np0", "mtu", "1300"]],
        "fails": {"test_ovs.py::test_host_reaches_peer_host_through_the_dpus": "overlay netdev MTU is not 1300"},
    },
    "test_ipsec.py::test_sas_installed_and_offloaded": {
        "text": "`swanctl --terminate --ike bf-<peer>` on a DPU",
        "side": "dpu",
        "break": [["swanctl", "--terminate", "--ike", "bf-{peer}"]],
        "undo": [["swanctl", "--initiate", "--child", "bf-{peer}"]],
        "fails": {"test_ipsec.py::test_sas_installed_and_offloaded": "no outbound ESP SA"},
    },
    "test_ipsec.py::test_fabric_carries_only_esp": {
        "text": "`ip xfrm policy flush` on a DPU (traffic leaves in clear)",
        "side": "dpu",
        "break": [["ip", "xfrm", "policy", "flush"]],
        "undo": [["swanctl", "--terminate", "--ike", "bf-{peer}"], ["swanctl", "--initiate", "--child", "bf-{peer}"]],
        "fails": {"test_ipsec.py::test_fabric_carries_only_esp": "cleartext on the fabric port"},
    },
    "test_firewall.py::test_allowed_port_connects_and_blocked_port_does_not": {
        "text": "`nft flush table netdev bluefleet` on a DPU",
        "side": "dpu",
        "break": [["nft", "flush", "table", "netdev", "bluefleet"]],
        "undo": [["nft", "-f", "/etc/nftables.d/bluefleet-firewall.nft"]],
        "fails": {"test_firewall.py::test_allowed_port_connects_and_blocked_port_does_not": "blocked"},
    },
    "test_services.py::test_telemetry_metrics_answer": {
        "text": "`crictl stop <doca-telemetry-service>` on a DPU",
        "side": "dpu",
        "break": [["sh", "-c", "crictl stop $(crictl ps -q --name doca-telemetry-service)"]],
        "undo": [],
        "fails": {"test_services.py::test_telemetry_metrics_answer": "metrics"},
    },
}
