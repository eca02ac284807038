"""Conformance: lossless RoCE on every GPU host and DPU (stage fabric).

What the bluefleet.dpu.roce_qos role sets, read back with the tools a person would use: ``mlnx_qos -i``
(trust, PFC), ``cma_roce_mode`` / ``cma_roce_tos`` (RoCE v2, ToS), the mlx5 sysfs (ECN per priority, MTU),
``show_gids`` (a RoCE v2 GID to use), and the boot-time unit that applies it all again after a reboot.
Expected values are the inventory's ``bluefleet_roce_*`` (the role's defaults when unset). Every failure names
the host, the netdev, the setting, what was found and the fix.
"""

from __future__ import annotations

import shlex

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlnx_qos import parse_mlnx_qos
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rdma import (
    parse_cma_roce_mode,
    parse_cma_roce_tos,
    parse_ibdev2netdev,
    parse_show_gids,
)
from fleet_roots import card_path, files_root

pytestmark = pytest.mark.stage("fabric")

FIX = "fix: bluefleet_roce_{var} / playbooks/fabric.yml (bluefleet.dpu.roce_qos)"
UNIT = "bluefleet-roce-qos.service"


def _fix(var: str) -> str:
    return FIX.format(var=var)


def expected(node) -> dict:
    """The settings the role applies on this node (inventory bluefleet_roce_*, else the role defaults)."""
    v = node.vars
    priority = int(v.get("bluefleet_roce_priority", 3))
    dscp = int(v.get("bluefleet_roce_dscp", 26))
    return {"priority": priority, "dscp": dscp, "tos": dscp << 2, "mtu": int(v.get("bluefleet_roce_mtu", 9000)),
            "trust": v.get("bluefleet_roce_trust", "dscp"), "mode": v.get("bluefleet_roce_mode", "v2"),
            "cnp_dscp": int(v.get("bluefleet_roce_cnp_dscp", 48))}


def _sysfs(node) -> str:
    """Where the mlx5 sysfs files are: / on a machine, the twin root in the sim and the lab (the role's
    roce_qos_sysfs_root default)."""
    return card_path(node, "/sys/class/net")


def _ok(node, cmd: str, what: str) -> str:
    res = node.read(cmd)
    assert res.rc == 0, (f"{node.name}: `{cmd}` failed (rc={res.rc}): {(res.stderr or res.stdout).strip()[-300:]}; "
                         f"cannot read {what}. Fix: install mlnx-tools / rdma-core (the twin: `dpusim env`)")
    return res.stdout


def roce_ports(node) -> list[dict]:
    """The RoCE ports (ibdev, port, netdev) the role configures: bluefleet_roce_netdevs, else ibdev2netdev's."""
    links = parse_ibdev2netdev(_ok(node, "ibdev2netdev", "the RDMA netdevs"))["links"]
    wanted = node.vars.get("bluefleet_roce_netdevs") or [link["netdev"] for link in links]
    ports = [link for link in links if link["netdev"] in wanted]
    assert ports, (f"{node.name}: no RoCE netdev found (ibdev2netdev lists {[x['netdev'] for x in links]}, "
                   f"bluefleet_roce_netdevs is {node.vars.get('bluefleet_roce_netdevs')!r}); {_fix('netdevs')}")
    return ports


_READ: dict[tuple[str, str], dict] = {}  # one read per port and run: the checks only look


def read_port(node, port: dict) -> dict:
    """What a RoCE port has now: trust, PFC priorities, ECN (np/rp) priorities, mode, ToS, MTU."""
    key = (node.name, port["netdev"])
    if key not in _READ:
        _READ[key] = _read_port(node, port)
    return _READ[key]


def _read_port(node, port: dict) -> dict:
    netdev, ibdev, num = port["netdev"], port["ibdev"], port["port"]
    qos = parse_mlnx_qos(_ok(node, f"mlnx_qos -i {shlex.quote(netdev)}", f"the QoS of {netdev}"))
    mode = parse_cma_roce_mode(_ok(node, f"cma_roce_mode -d {ibdev} -p {num}", f"the RoCE mode of {ibdev}"))
    tos = parse_cma_roce_tos(_ok(node, f"cma_roce_tos -d {ibdev} -p {num}", f"the RoCE ToS of {ibdev}"))
    base = f"{_sysfs(node)}/{netdev}"
    ecn = {}
    for proto in ("roce_np", "roce_rp"):
        out = _ok(node, f"cat {base}/ecn/{proto}/enable/0 {base}/ecn/{proto}/enable/1 {base}/ecn/{proto}/enable/2 "
                        f"{base}/ecn/{proto}/enable/3 {base}/ecn/{proto}/enable/4 {base}/ecn/{proto}/enable/5 "
                        f"{base}/ecn/{proto}/enable/6 {base}/ecn/{proto}/enable/7", f"ECN {proto} of {netdev}")
        ecn[proto] = [p for p, flag in enumerate(out.split()) if flag.strip() == "1"]
    mtu = int(_ok(node, f"cat {base}/mtu", f"the MTU of {netdev}").strip())
    enabled = qos["pfc"]["enabled"] or [0] * 8
    return {"trust": qos["trust"], "pfc": [p for p, on in enumerate(enabled) if on], "ecn": ecn,
            "dscp_priority": qos["dscp2prio"], "roce_mode": "v%d" % mode["roce_version"], "tos": tos["tos"],
            "mtu": mtu}


def _check_each(node, check) -> None:
    problems = []
    for port in roce_ports(node):
        problem = check(port["netdev"], read_port(node, port), expected(node))
        if problem:
            problems.append(f"{node.name}: {port['netdev']} {problem}")
    assert not problems, "; ".join(problems)


def test_roce_trust_dscp(node):
    """Priority trust is DSCP (routed RoCE keeps its priority across L3 hops), and the data DSCP maps to the
    RoCE priority."""
    def check(netdev, got, want):
        if got["trust"] != want["trust"]:
            return f"trust is {got['trust']}, expected {want['trust']}; {_fix('trust')}"
        prio = got["dscp_priority"].get(str(want["dscp"]))
        if want["trust"] == "dscp" and prio != want["priority"]:
            return (f"DSCP {want['dscp']} maps to priority {prio}, expected {want['priority']}; "
                    f"{_fix('dscp')}")
        return None
    _check_each(node, check)


def test_roce_pfc_on_priority(node):
    """PFC is on exactly the RoCE priority."""
    def check(netdev, got, want):
        if got["pfc"] != [want["priority"]]:
            return f"PFC is on priorities {got['pfc']}, expected [{want['priority']}]; {_fix('priority')}"
        return None
    _check_each(node, check)


def test_roce_ecn_on_priority(node):
    """ECN (DCQCN) is on for the RoCE priority as notification and reaction point."""
    def check(netdev, got, want):
        bad = {proto: prios for proto, prios in got["ecn"].items() if want["priority"] not in prios}
        if bad:
            return (f"ECN is off on priority {want['priority']} ({', '.join(f'{k} on {v}' for k, v in bad.items())}); "
                    f"{_fix('priority')}")
        return None
    _check_each(node, check)


def test_roce_mode_v2(node):
    """RDMA-CM uses RoCE v2 (routable) by default."""
    def check(netdev, got, want):
        if got["roce_mode"] != want["mode"]:
            return f"RoCE mode is {got['roce_mode']}, expected {want['mode']}; {_fix('mode')}"
        return None
    _check_each(node, check)


def test_roce_tos(node):
    """RDMA-CM marks RoCE traffic with the data DSCP (ToS = DSCP x 4)."""
    def check(netdev, got, want):
        if got["tos"] != want["tos"]:
            return f"RoCE ToS is {got['tos']}, expected {want['tos']} (DSCP {want['dscp']} x 4); {_fix('dscp')}"
        return None
    _check_each(node, check)


def test_roce_mtu(node):
    """The RoCE netdevs carry the fabric MTU."""
    def check(netdev, got, want):
        if got["mtu"] != want["mtu"]:
            return f"MTU is {got['mtu']}, expected {want['mtu']}; {_fix('mtu')}"
        return None
    _check_each(node, check)


def _conforms(got: dict, want: dict, key: str) -> bool:
    return {"trust": got["trust"] == want["trust"], "pfc": got["pfc"] == [want["priority"]],
            "ecn": all(want["priority"] in prios for prios in got["ecn"].values()),
            "roce_mode": got["roce_mode"] == want["mode"], "tos": got["tos"] == want["tos"],
            "mtu": got["mtu"] == want["mtu"]}[key]


def test_roce_link_ends_agree(pair):
    """Both ends of each host<->DPU link (host port N, DPU uplink N) have the same trust, PFC, ECN, RoCE mode,
    ToS and MTU: a lossless class that one hop drops is not lossless. An end that differs from its own expected
    value fails that setting's own check; this one catches ends that each follow an inventory that disagrees
    (bluefleet_roce_* set differently for the host and its DPU)."""
    host_ports = roce_ports(pair.host)
    dpu_ports = roce_ports(pair.dpu)
    assert len(host_ports) == len(dpu_ports), (
        f"{pair.host.name} has {len(host_ports)} RoCE ports, {pair.dpu.name} has {len(dpu_ports)}; both ends of "
        f"every link need the QoS; {_fix('netdevs')}")
    want_h, want_d = expected(pair.host), expected(pair.dpu)
    problems = []
    for hport, dport in zip(host_ports, dpu_ports, strict=True):
        got_h, got_d = read_port(pair.host, hport), read_port(pair.dpu, dport)
        for key in ("trust", "pfc", "ecn", "roce_mode", "tos", "mtu"):
            if got_h[key] != got_d[key] and _conforms(got_h, want_h, key) and _conforms(got_d, want_d, key):
                problems.append(f"{key} differs on the link {pair.host.name}:{hport['netdev']} "
                                f"({got_h[key]}) <-> {pair.dpu.name}:{dport['netdev']} ({got_d[key]}) because the "
                                "inventory asks for different values")
    assert not problems, "; ".join(problems) + "; fix: set bluefleet_roce_* once for hosts and DPUs (group_vars/all)"


def test_roce_gid_index(node):
    """Every RoCE port has a RoCE v2 GID (NCCL_IB_GID_INDEX), and the one of bluefleet_roce_address when set."""
    gids = parse_show_gids(_ok(node, "show_gids", "the GID tables"))["gids"]
    address = node.vars.get("bluefleet_roce_address") or ""
    problems = []
    for port in roce_ports(node):
        v2 = [g for g in gids if g["netdev"] == port["netdev"] and (g["ver"] or "").lower() == "v2"]
        if not v2:
            problems.append(f"{node.name}: {port['netdev']} has no RoCE v2 GID (show_gids); fix: bring the "
                            "netdev up with RoCE enabled, then rerun playbooks/fabric.yml")
    if address and not any(g["ipv4"] == address and (g["ver"] or "").lower() == "v2" for g in gids):
        problems.append(f"{node.name}: no RoCE v2 GID holds {address}; fix: set that address on a RoCE netdev "
                        "or bluefleet_roce_address")
    assert not problems, "; ".join(problems)


def test_roce_boot_unit(node):
    """The settings come back after a reboot: the unit and its settings file are installed; in the lab and on
    machines (systemd) the unit is enabled too."""
    root = files_root(node.vars)
    for path in (f"{root}/etc/systemd/system/{UNIT}", f"{root}/etc/bluefleet/roce-qos.env",
                 f"{root}/usr/local/sbin/bluefleet-roce-qos"):
        res = node.run(f"test -s {shlex.quote(path)}")
        assert res.rc == 0, (f"{node.name}: {path} is missing, so a reboot loses the RoCE QoS; "
                             "fix: playbooks/fabric.yml (bluefleet.dpu.roce_qos, roce_qos_boot_unit)")
    env = node.run(f"cat {shlex.quote(root + '/etc/bluefleet/roce-qos.env')}").stdout
    want = expected(node)
    for key, value in (("ROCE_MTU", want["mtu"]), ("ROCE_TOS", want["tos"]), ("ROCE_TRUST", want["trust"])):
        assert f"{key}={value}\n" in env, (f"{node.name}: the boot-time settings file has no {key}={value}, so a "
                                           f"reboot would apply other values; fix: rerun playbooks/fabric.yml")
    if not node.sim:  # twins on the local connection share this machine's systemd
        res = node.run(f"systemctl is-enabled {UNIT}")
        assert res.stdout.strip() == "enabled", (
            f"{node.name}: {UNIT} is {res.stdout.strip() or 'unknown'}, expected enabled, so a reboot loses the "
            "RoCE QoS; fix: playbooks/fabric.yml with bluefleet_linux_services true")
