"""Conformance, stage offload: the DPU firewall (roles/firewall) is in place and really filters.

* Every DPU: the ruleset is there - in the kernel (``nft list table netdev <table>``, with an egress chain on the
  host port and the fabric port of every network of the policy) on a real DPU or lab container; on a twin (local
  connection, which shares this machine's kernel and loads nothing) the rendered file under the twin's root.
* Lab / real hosts (``links``): from one GPU host to another, a TCP port the policy allows connects and a port it
  does not allow times out.

The policy is ``firewall_networks`` from the inventory, else the role's defaults. Fix: playbooks/offload.yml
(``--tags firewall``) with ``firewall_networks``.
"""

from __future__ import annotations

import ipaddress
import shlex
from pathlib import Path

import pytest
import yaml
from fleet_roots import files_path

pytestmark = pytest.mark.stage("offload")

ROOT = Path(__file__).resolve().parents[2]
_FIX = "firewall_networks / playbooks/offload.yml --tags firewall"
_DEFAULTS = yaml.safe_load((ROOT / "roles" / "firewall" / "defaults" / "main.yml").read_text(encoding="utf-8"))
_PROBE = """
import socket, sys
for port in sys.argv[2:]:
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((sys.argv[1], int(port)))
        print(port, "open")
    except OSError as exc:
        print(port, "closed", type(exc).__name__)
    finally:
        s.close()
"""
_LISTEN = """
import socket, sys, time
socks = []
for port in sys.argv[1:]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(port)))
    s.listen(8)
    socks.append(s)
print("listening", flush=True)
time.sleep(25)
"""


def _setting(node, name):
    value = node.vars.get(name)
    return _DEFAULTS[name] if value is None or "{{" in str(value) else value


def _policy(node):
    return _setting(node, "firewall_networks")


def _tail(res) -> str:
    return (res.stderr or res.stdout).strip()[-300:]


def test_ruleset_present(dpu):
    table = _setting(dpu, "firewall_table")
    networks = _policy(dpu)
    if dpu.sim:  # a twin on the local connection shares this machine's kernel: nothing is loaded
        path = Path(files_path(dpu, _setting(dpu, "firewall_file")))
        assert path.is_file(), f"{dpu.name}: firewall ruleset {path} is missing; fix: {_FIX}"
        text = path.read_text(encoding="utf-8")
        where = str(path)
    else:
        res = dpu.run(f"nft list table netdev {shlex.quote(table)}")
        assert res.rc == 0, (f"{dpu.name}: nft table netdev {table} is not loaded ({_tail(res)}); fix: {_FIX}")
        text = res.stdout
        where = f"nft table netdev {table}"
    assert f"table netdev {table} {{" in text, f"{dpu.name}: {where} does not define table netdev {table}; fix: {_FIX}"
    for net in networks:
        chains = ((net["fabric_port"], f"{net['name']}_from_host"), (net["host_port"], f"{net['name']}_to_host"))
        for port, chain in chains:
            assert f"chain {chain} {{" in text and f'hook egress device "{port}"' in text, (
                f"{dpu.name}: {where} has no egress chain {chain} on {port} for network {net['name']}; "
                f"fix: {_FIX}")


def _tcp_ports(networks, group="gpu_hosts"):
    """(a TCP port the policy opens between members of ``group`` both ways, one it does not open)."""
    allowed, covered, everything = None, set(), False
    for net in networks:
        for rule in net.get("rules", []):
            if group not in rule.get("peers", []):
                continue
            if rule.get("protocol") == "any":
                everything = True
            if rule.get("protocol") != "tcp":
                continue
            for port in rule.get("ports", []):
                low, _sep, high = str(port).partition("-")
                covered.update(range(int(low), int(high or low) + 1))
                if allowed is None and rule.get("direction", "both") == "both" and net.get("default", "drop") == "drop":
                    allowed = int(low)
    blocked = None if everything else next(p for p in (18080, 28080, 38080, 48080) if p not in covered)
    return allowed, blocked


@pytest.mark.links
def test_allowed_port_connects_and_blocked_port_does_not(gpu_host, fleet):
    peers = [fleet.node(n) for n in fleet.names("gpu_hosts") if n != gpu_host.name]
    peers = [p for p in peers if not p.sim]
    assert peers, (f"{gpu_host.name}: the firewall check needs a second GPU host in the selection to connect to; "
                   "fix: run it against the whole lab (`bluefleet lab up --pairs 2`)")
    peer = peers[0]
    dpu = fleet.node(gpu_host.vars["bluefleet_dpus"][0])
    allowed, blocked = _tcp_ports(_policy(dpu))
    assert allowed is not None, (f"{dpu.name}: firewall_networks opens no TCP port between gpu_hosts in both "
                                 f"directions, so nothing can show an allowed connection; fix: {_FIX}")
    assert blocked is not None, f"{dpu.name}: firewall_networks lets any traffic between gpu_hosts; fix: {_FIX}"
    address = str(ipaddress.ip_interface(peer.vars["bluefleet_host_overlay_address"]).ip)
    listen = peer.run(f"setsid nohup python3 -c {shlex.quote(_LISTEN)} {allowed} {blocked} >/dev/null 2>&1 & sleep 1")
    assert listen.rc == 0, f"{peer.name}: could not start the test listeners on {allowed}/{blocked}: {_tail(listen)}"
    res = gpu_host.run(f"python3 -c {shlex.quote(_PROBE)} {address} {allowed} {blocked}")
    assert res.rc == 0, f"{gpu_host.name}: the connection probe failed to run: {_tail(res)}"
    # "open": connected; "closed TimeoutError": dropped on the way; "closed ConnectionRefusedError": it got
    # through and nothing listened (the listener did not start), which proves nothing about the firewall.
    seen = {line.split()[0]: " ".join(line.split()[1:]) for line in res.stdout.splitlines() if line.strip()}
    assert seen.get(str(allowed)) == "open", (
        f"{gpu_host.name} -> {peer.name} ({address}): TCP {allowed}, which firewall_networks allows, is "
        f"{seen.get(str(allowed))}, expected open; fix: {_FIX} (and the data path: playbooks/offload.yml)")
    assert seen.get(str(blocked), "").replace("socket.", "") in ("closed TimeoutError", "closed timeout"), (
        f"{gpu_host.name} -> {peer.name} ({address}): TCP {blocked}, which firewall_networks does not allow, is "
        f"{seen.get(str(blocked))}, expected blocked; fix: {_FIX}")
