"""The breaks of the checks that need a node's own network namespace (``links``), applied in a container lab.

One source of truth for tests/integration/test_conformance_breaks_sim.py (its coverage test counts these rows) and
for tests/lab/run_lab_breaks.py (Molecule's verify applies them in the converged lab). Each row: what an operator
does (``text``), on which side of the first pair (``side``: the GPU host or its DPU), the commands that break and
undo it (argv lists run with ``docker exec``), and the checks that must fail (``fails``: check id with its host in
brackets -> words of the message, or a tuple of words of which the message has one). Placeholders, from the
inventory: ``{host}`` the first GPU host, ``{dpu}`` its DPU, ``{peer_host}`` the other GPU host, ``{peer}`` the
other DPU, ``{peer_vtep}`` / ``{peer_uplink}`` that DPU's VTEP and fabric addresses (without prefix length). A row
with ``pending`` is not yet shown failing in the lab (the reason says why); the runner lists it as NOT PROVEN and
fails.
"""

from __future__ import annotations

# strongSwan's IKE and CHILD SAs of the pair, negotiated again (installs the kernel's SAs and policies anew)
SWANCTL_CONF = "/etc/swanctl/conf.d/bluefleet.conf"
# the kubelet's static-pod folder on a DPU and DOCA Telemetry Service's manifest in it (domain/_doca.py)
KUBELET_DIR = "/etc/kubelet.d"
DTS_MANIFEST = "doca_telemetry_standalone.yaml"
# an operator's routing table and rule for the peer's VTEP, ahead of strongSwan's (rule 220, table 220)
BYPASS_TABLE, BYPASS_PREF = "120", "120"
IP = "/usr/sbin/ip"  # iproute2 itself, not the twin's front-end first on PATH
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
        "text": "a route for the peer's VTEP over the fabric, looked up before strongSwan's table 220, on a DPU "
                "(the VXLAN traffic leaves in clear)",
        "side": "dpu",
        # Not `ip xfrm policy flush`: the lab's strongSwan (kernel-libipsec) keeps SAs and policies in userspace and
        # routes the peer's VTEP into its TUN device through routing table 220 (rule 220); the kernel's xfrm lists
        # are empty (src/dpusim/tools/ip.py), so the flush changes nothing there. An operator's static route for
        # the peer VTEP's /32 via the peer's fabric address, in a table whose rule comes first, sends the kernel
        # VXLAN netdev's packets out of p0 unencrypted, which the capture on that DPU's p0 shows. What happens to
        # them next is the fabric's: Docker's --internal network drops a packet whose source is outside its subnet
        # (DOCKER-ISOLATION-STAGE-1 `! -s SUBNET -o br-... -j DROP`, with bridge-nf-call-iptables=1), and the VTEPs
        # are, so there the peer's host gets no answer (its DPU: "ping ... failed"); on an engine that bridges
        # them, the peer's p0 sees the cleartext too (its DPU: "cleartext ...").
        "break": [[IP, "route", "add", "{peer_vtep}/32", "via", "{peer_uplink}", "dev", "p0", "table", BYPASS_TABLE],
                  [IP, "rule", "add", "to", "{peer_vtep}/32", "lookup", BYPASS_TABLE, "pref", BYPASS_PREF]],
        "undo": [[IP, "rule", "del", "pref", BYPASS_PREF], [IP, "route", "flush", "table", BYPASS_TABLE]],
        "fails": {"test_ipsec.py::test_fabric_carries_only_esp[{dpu}]": "cleartext on the fabric port",
                  "test_ipsec.py::test_fabric_carries_only_esp[{peer}]": ("100% packet loss",
                                                                          "cleartext on the fabric port")},
    },
    "test_firewall.py::test_allowed_port_connects_and_blocked_port_does_not": {
        "text": "`nft flush table netdev bluefleet_firewall` on a DPU",
        "side": "dpu",
        "break": [["nft", "flush", "table", "netdev", "bluefleet_firewall"]],
        # then wait out the test listeners the broken run started on the GPU hosts (test_firewall.py's _LISTEN
        # lives 25 s): the re-check's own listeners cannot bind while they listen, and when they exit during its
        # probe the allowed port answers "refused" (seen in lab c4: the re-check failed 2 runs of 3 without it)
        "undo": [["nft", "-f", "/etc/nftables.d/bluefleet-firewall.nft"], ["sleep", "26"]],
        "fails": {**{f"test_firewall.py::test_allowed_port_connects_and_blocked_port_does_not[{h}]":
                     "which firewall_networks allows, is closed"
                     for h in ("{host}", "{peer_host}")}},
    },
    "test_services.py::test_telemetry_metrics_answer": {
        "text": "DTS's static-pod manifest moved out of /etc/kubelet.d on a DPU (the kubelet stops the pod)",
        "side": "dpu",
        # NVIDIA's DTS guide: "Removing the .yaml file from this path stops the automatic DTS boot"; the kubelet
        # (the lab's: dpusim kubelet serve) removes the pod and its process within one pass (2 s), and creates it
        # anew when the file is back. Not `crictl stop`: the kubelet restarts a stopped container of a static pod
        # (restartPolicy Always) before the check's scrape has given up, on a card as in the twin.
        "break": [["mv", f"{KUBELET_DIR}/{DTS_MANIFEST}", f"/root/{DTS_MANIFEST}"], ["sleep", "5"]],
        "undo": [["mv", f"/root/{DTS_MANIFEST}", f"{KUBELET_DIR}/{DTS_MANIFEST}"], ["sleep", "5"]],
        "fails": {"test_services.py::test_telemetry_metrics_answer[{dpu}]": "metrics endpoint on port"},
    },
}
