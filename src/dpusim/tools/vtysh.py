# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the real tool's output)
"""``vtysh -c 'show ip route json'`` of DOCA HBN (FRR) in its container on the BlueField.

What it answers comes from the twin state: the routes HBN's NVUE startup configuration declares
(``<root>/var/lib/hbn/etc/nvue.d/startup.yaml``, written by roles/doca_services) and that zebra would
install: ``interface.<if>.ip.address.<cidr>`` -> a ``connected`` route of the network,
``vrf.<vrf>.router.static.<prefix>.via.<ip>`` -> a ``static`` route (distance 1). The configuration may be
NVUE's list of ``- set: {...}`` documents or the tree itself.

Layout: FRR zebra/zebra_vty.c (FRRouting/frr) route JSON keys; printed like a real FRR 9 capture of
``vtysh -c "show ip route json"`` (tests/unit/fixtures/frr/show-ip-route-json.txt, provenance there):
``{`` then one ``"prefix":[route,...]`` entry per prefix, compact JSON, entries joined by newline + comma,
a newline and ``}`` at the end. Interface indexes are the twin's (order of appearance, from 2).
When the HBN container does not run, no FRR daemon answers: vtysh prints
``Exiting: failed to connect to any daemons.`` (FRR vtysh/vtysh_main.c) and exits 1.
Only ``show ip route json`` is modelled; anything else is refused naming what the twin knows.
"""

from __future__ import annotations

import ipaddress
import json

from dpusim import kubelet, state
from dpusim.tools._common import ToolExit, check_arm_up, emit, run_tool

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

NAMES = ("vtysh",)
CONTAINER = "doca-hbn"
STARTUP = ("var", "lib", "hbn", "etc", "nvue.d", "startup.yaml")


def running(node: state.Node, name: str) -> bool:
    kub = kubelet.sync(node)
    for pod in kub["pods"].values():
        for ctr in pod["containers"]:
            if ctr["name"] == name and ctr["state"] == "CONTAINER_RUNNING":
                return True
    return False


def _merge(into: dict[str, Any], tree: Any) -> None:
    if not isinstance(tree, dict):
        return
    for key, value in tree.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value if not isinstance(value, dict) else dict(value)


def nvue_tree(text: str) -> dict[str, Any]:
    """The NVUE configuration tree of a startup.yaml (list of ``set:`` documents or the tree)."""
    import yaml
    doc = yaml.safe_load(text) or {}
    tree: dict[str, Any] = {}
    if isinstance(doc, list):
        for item in doc:
            if isinstance(item, dict):
                _merge(tree, item.get("set") or {})
    elif isinstance(doc, dict):
        _merge(tree, doc.get("set") if isinstance(doc.get("set"), dict) else doc)
    return tree


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def routes(tree: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """prefix -> FRR route entries (default VRF only: what ``show ip route json`` prints)."""
    table: dict[str, list[dict[str, Any]]] = {}
    ifindex = 2
    for ifname, conf in _d(tree.get("interface")).items():
        for cidr in _d(_d(_d(conf).get("ip")).get("address")):
            try:
                net = ipaddress.ip_interface(str(cidr)).network
            except ValueError:
                continue
            if net.version != 4:
                continue
            table.setdefault(str(net), []).append({
                "prefix": str(net), "prefixLen": net.prefixlen, "protocol": "connected", "vrfId": 0,
                "vrfName": "default", "selected": True, "destSelected": True, "distance": 0, "metric": 0,
                "installed": True, "table": 254, "uptime": "00:00:05",
                "nexthops": [{"flags": 3, "fib": True, "directlyConnected": True, "interfaceIndex": ifindex,
                              "interfaceName": str(ifname), "active": True, "weight": 1}]})
        ifindex += 1
    static = _d(_d(_d(_d(tree.get("vrf")).get("default")).get("router")).get("static"))
    for prefix, conf in static.items():
        try:
            net = ipaddress.ip_network(str(prefix), strict=False)
        except ValueError:
            continue
        if net.version != 4:
            continue
        hops = [{"flags": 3, "fib": True, "ip": str(via), "afi": "ipv4", "active": True, "weight": 1}
                for via in _d(_d(conf).get("via"))]
        if not hops:
            continue
        table.setdefault(str(net), []).append({
            "prefix": str(net), "prefixLen": net.prefixlen, "protocol": "static", "vrfId": 0, "vrfName": "default",
            "selected": True, "destSelected": True, "distance": 1, "metric": 0, "installed": True, "table": 254,
            "internalStatus": 16, "uptime": "00:00:05", "nexthops": hops})
    return dict(sorted(table.items(), key=lambda kv: ipaddress.ip_network(kv[0])))


def render(table: dict[str, list[dict[str, Any]]]) -> str:
    entries = ["%s:%s" % (json.dumps(p), json.dumps(r, separators=(",", ":"))) for p, r in table.items()]
    return "{" + "\n,".join(entries) + "\n}\n"


def body(argv: list[str], prog: str) -> int:
    command = None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("-c", "--command") and args:
            command = " ".join(args.pop(0).split())
    if command != "show ip route json":
        raise ToolExit("dpusim: %s in the twin answers only -c 'show ip route json' (got %r)" % (prog, command),
                       rc=1, stream="stderr")
    with state.open_node() as node:
        check_arm_up(node)
        if node.role != "dpu" or not running(node, CONTAINER):
            raise ToolExit("Exiting: failed to connect to any daemons.", rc=1, stream="stderr")
        path = kubelet.fs_root(node).joinpath(*STARTUP)
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    emit(render(routes(nvue_tree(text))))
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
