"""bluefleet.dpu.netdev: addresses, MTU, link state and kernel VXLAN netdevs through `ip -j`; check mode; bad input."""

from __future__ import annotations

import json

from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import netdev


class FakeIp:
    """iproute2 with -j: links {name: {mtu, up, addrs, vxlan}}; JSON keys as iproute2 6.x prints them."""

    def __init__(self, links):
        self.links = links
        self.cmd = []
        self.writes = 0

    def run(self, argv, timeout=None):
        self.cmd.append(list(argv))
        if argv[:5] == ["ip", "-d", "-j", "link", "show"]:
            link = self.links.get(argv[6])
            if link is None:
                return CommandResult(argv, 1, "", f'Device "{argv[6]}" does not exist.\n')
            out = {"ifname": argv[6], "mtu": link["mtu"], "flags": ["BROADCAST", "UP"] if link["up"] else ["BROADCAST"]}
            if link.get("vxlan"):
                vx = link["vxlan"]
                out["linkinfo"] = {"info_kind": "vxlan", "info_data": {"id": vx["id"], "local": vx["local"],
                                                                       "remote": vx["remote"], "port": vx["dstport"]}}
            return CommandResult(argv, 0, json.dumps([out]), "")
        if argv[:5] == ["ip", "-j", "-4", "addr", "show"]:
            link = self.links[argv[6]]
            info = [{"family": "inet", "local": a.split("/")[0], "prefixlen": int(a.split("/")[1])}
                    for a in link["addrs"]]
            return CommandResult(argv, 0, json.dumps([{"ifname": argv[6], "addr_info": info}]), "")
        self.writes += 1
        if argv[:3] == ["ip", "addr", "add"]:
            self.links[argv[5]]["addrs"].append(argv[3])
        elif argv[:3] == ["ip", "link", "add"]:
            vx = {"id": int(argv[7]), "local": argv[9], "remote": argv[11], "dstport": int(argv[13])}
            self.links[argv[3]] = {"mtu": 1450, "up": False, "addrs": [], "vxlan": vx}
        elif argv[:3] == ["ip", "link", "del"]:
            del self.links[argv[4]]
        elif argv[:3] == ["ip", "link", "set"] and argv[5] == "mtu":
            self.links[argv[4]]["mtu"] = int(argv[6])
        elif argv[:3] == ["ip", "link", "set"]:
            self.links[argv[4]]["up"] = argv[5] == "up"
        else:
            raise AssertionError(f"unexpected {argv}")
        return CommandResult(argv, 0, "", "")


def test_address_and_mtu_applied_once(run_module):
    ip = FakeIp({"ens1f0np0": {"mtu": 1500, "up": True, "addrs": []}})
    args = {"name": "ens1f0np0", "addresses": ["10.10.0.1/24"], "mtu": 1300}
    failed, res = run_module(netdev, args, ip)
    assert not failed and res["changed"]
    assert [c for c in res["cmd"] if c[1] in ("addr", "link") and c[2] in ("add", "set")] == [
        ["ip", "link", "set", "dev", "ens1f0np0", "mtu", "1300"],
        ["ip", "addr", "add", "10.10.0.1/24", "dev", "ens1f0np0"]]
    assert res["interface"] == {"addresses": ["10.10.0.1/24"], "mtu": 1300, "up": True, "vxlan": None}
    failed, again = run_module(netdev, args, ip)
    assert not failed and not again["changed"] and ip.writes == 2


def test_check_mode_changes_nothing(run_module):
    ip = FakeIp({"lo": {"mtu": 65536, "up": True, "addrs": ["127.0.0.1/8"]}})
    failed, res = run_module(netdev, {"name": "lo", "addresses": ["172.30.0.1/32"]}, ip, check_mode=True)
    assert not failed and res["changed"] and ip.writes == 0
    assert res["diff"]["after"]["addresses"] == ["127.0.0.1/8", "172.30.0.1/32"]


def test_vxlan_created_and_recreated_when_its_remote_changes(run_module):
    ip = FakeIp({})
    args = {"name": "vxlan0", "vxlan": {"id": 100, "local": "172.30.0.1", "remote": "172.30.0.2"}}
    failed, res = run_module(netdev, args, ip)
    assert not failed and res["changed"] and ip.links["vxlan0"]["up"]
    assert ip.links["vxlan0"]["vxlan"] == {"id": 100, "local": "172.30.0.1", "remote": "172.30.0.2", "dstport": 4789}
    assert not run_module(netdev, args, ip)[1]["changed"]
    args["vxlan"]["remote"] = "172.30.0.3"
    failed, res = run_module(netdev, args, ip)
    assert not failed and res["changed"] and ["ip", "link", "del", "dev", "vxlan0"] in res["cmd"]
    assert ip.links["vxlan0"]["vxlan"]["remote"] == "172.30.0.3"


def test_unknown_interface_is_an_error_before_anything_changes(run_module):
    ip = FakeIp({})
    failed, res = run_module(netdev, {"name": "p9", "addresses": ["192.168.50.1/24"]}, ip)
    assert failed and "interface p9 does not exist" in res["msg"] and ip.writes == 0


def test_bad_address_mtu_vni_refused_before_any_command(run_module):
    for args, text in (({"name": "p0", "addresses": ["192.168.50.1"]}, "prefix length"),
                       ({"name": "p0", "addresses": ["300.1.1.1/24"]}, "is not valid"),
                       ({"name": "p0", "mtu": 20}, "out of range"),
                       ({"name": "vx", "vxlan": {"id": 0, "local": "1.1.1.1", "remote": "1.1.1.2"}}, "vxlan.id"),
                       ({"name": "vx", "vxlan": {"id": 5, "local": "x", "remote": "1.1.1.2"}}, "vxlan.local")):
        ip = FakeIp({"p0": {"mtu": 1500, "up": True, "addrs": []}})
        failed, res = run_module(netdev, args, ip)
        assert failed and text in res["msg"] and ip.cmd == [], (args, res)
