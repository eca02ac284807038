"""Conformance: the GPU host / DPU pairs are wired and the card answers on both sides.

Grows with every capability; this module is the base everything else stands on. Each failure
names the host and what to do.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.stage("preflight")

ROLES = Path(__file__).resolve().parents[2] / "roles"
# The netdevs each side must have, named by the variables of the roles that use them (the inventory's value, else
# the role's default): never a constant of the lab.
HOST_NETDEV_VARS = (("host_overlay", "host_overlay_interface"),)  # the GPU host's netdev on the card
DPU_NETDEV_VARS = (("ovs", "ovs_host_representor"), ("ipsec", "ipsec_uplink_interface"))  # representor, uplink
# A device row of `mst status -v` (corpus: mst/bf3-arm-mst-status-v.txt, mst/bf2-host-mst-status-v-fixture.txt).
_MST_ROW = re.compile(r"^(?P<type>\S+)\s+(?P<dev>/dev/mst/mt\d+_pciconf\d+)\s", re.M)
_FIX_LAB = "fix: in the lab run `bluefleet lab up` (or `bluefleet lab wire`); on hardware check the cabling and driver"


def _tail(res) -> str:
    return (res.stderr or res.stdout).strip()[-300:]


def _netdevs(node, role_vars) -> list[str]:
    out = []
    for role, var in role_vars:
        value = node.vars.get(var)
        if value is None:
            value = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text(encoding="utf-8"))[var]
        assert value, f"{node.name}: {var} is {value!r}, expected the name of a netdev; fix: the inventory"
        out.append(str(value))
    return out


def _link(node, name: str) -> dict | None:
    res = node.run(f"ip -j link show dev {name}")
    if res.rc != 0:
        return None
    data = json.loads(res.stdout or "[]")
    return data[0] if data else None


def _mst_devices(node) -> list[tuple[str, str]]:
    res = node.read("mst status -v")
    assert res.rc == 0, (f"{node.name}: `mst status -v` failed (rc={res.rc}): {_tail(res)}. Fix: install MFT/mstflint "
                         "and run `mst start` (the twin: `dpusim env` and `dpusim init` in this host's root)")
    return [(m["type"], m["dev"]) for m in _MST_ROW.finditer(res.stdout)]


def _flint_query(node, dev: str) -> dict[str, str]:
    """`flint -d DEV q` as key -> value (layout: corpus flint/*.txt); continuation lines are ignored."""
    res = node.read(f"flint -d {dev} q")
    assert res.rc == 0, f"{node.name}: `flint -d {dev} q` failed (rc={res.rc}): {_tail(res)}"
    fields = {}
    for line in res.stdout.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and not key.startswith(" "):
            fields[key.strip()] = value.strip()
    return fields


def test_selection_has_hosts(fleet):
    """A run with nothing to check is a failure, not a pass."""
    assert fleet.names("gpu_hosts") or fleet.names("dpus"), (
        f"the inventory selection {fleet.selected} has no host in gpu_hosts or dpus: check --hosts and "
        "--ansible-inventory (lab: `bluefleet lab up` writes inventories/lab)")


def test_pairing_vars(node, fleet):
    """A DPU names its host and rshim; the host lists it back (DESIGN.md, Names)."""
    gpu_hosts, dpus = fleet.runner.get_hosts("gpu_hosts"), fleet.runner.get_hosts("dpus")
    problems = []
    if node.role == "dpu":
        host = node.vars.get("bluefleet_host")
        if host not in gpu_hosts:
            problems.append(f"bluefleet_host={host!r} is not a host of gpu_hosts")
        elif node.name not in (fleet.runner.get_variables(host).get("bluefleet_dpus") or []):
            problems.append(f"its host {host} does not list it in bluefleet_dpus")
        if not node.vars.get("bluefleet_rshim"):
            problems.append("bluefleet_rshim is not set")
    else:
        listed = node.vars.get("bluefleet_dpus") or []
        if not listed:
            problems.append("bluefleet_dpus is empty")
        for d in listed:
            if d not in dpus:
                problems.append(f"bluefleet_dpus names {d!r}, which is not in dpus")
            elif fleet.runner.get_variables(d).get("bluefleet_host") != node.name:
                problems.append(f"{d} does not name it as bluefleet_host")
    assert not problems, f"{node.name}: pairing variables disagree (fix the inventory): " + "; ".join(problems)


@pytest.mark.links
def test_gpu_host_netdev_up(gpu_host):
    """The GPU host's netdev on the card (host_overlay_interface) exists and is up."""
    problems = []
    for netdev in _netdevs(gpu_host, HOST_NETDEV_VARS):
        link = _link(gpu_host, netdev)
        if link is None:
            problems.append(f"{gpu_host.name}: netdev {netdev} (host_overlay_interface) does not exist")
        elif "UP" not in link.get("flags", []) or link.get("operstate") != "UP":
            problems.append(f"{gpu_host.name}: {netdev} is not up (flags {link.get('flags', [])}, operstate "
                            f"{link.get('operstate')})")
    assert not problems, "; ".join(problems) + f"; {_FIX_LAB}"


@pytest.mark.links
def test_dpu_netdev_present(dpu):
    """The host representor (ovs_host_representor) and the uplink (ipsec_uplink_interface) exist and are up."""
    problems = []
    for netdev in _netdevs(dpu, DPU_NETDEV_VARS):
        link = _link(dpu, netdev)
        if link is None:
            problems.append(f"{dpu.name}: netdev {netdev} does not exist")
        elif "UP" not in link.get("flags", []):
            problems.append(f"{dpu.name}: {netdev} is administratively down (flags {link.get('flags', [])})")
    assert not problems, "; ".join(problems) + f"; {_FIX_LAB}"


def test_mst_shows_card(node):
    devices = _mst_devices(node)
    assert devices, (f"{node.name}: `mst status -v` lists no device: the card is not visible. Fix: check the card is "
                     "seated and `mst start` ran (the twin: re-run `dpusim init`)")


@pytest.mark.twin
def test_twin_role_matches_group(node):
    res = node.run("dpusim state")
    assert res.rc == 0, (f"{node.name}: `dpusim state` failed (rc={res.rc}): {_tail(res)}. Fix: initialise the twin "
                         "(`bluefleet lab wire` in the lab, `dpusim init` elsewhere)")
    role = json.loads(res.stdout)["node"]["role"]
    group = "dpus" if node.role == "dpu" else "gpu_hosts"
    assert role == node.role, (f"{node.name} is in group {group} but its twin has role {role!r}; fix the inventory "
                               f"group or re-run `dpusim init --role {node.role}`")


def test_pair_sees_one_card(pair):
    """The GPU host and its DPU see the same card: same PSID and base GUID from flint."""
    seen = {}
    for side in (pair.host, pair.dpu):
        devices = _mst_devices(side)
        assert devices, (f"{side.name}: `mst status -v` lists no device, so its card cannot be compared with "
                         f"{pair.dpu.name if side is pair.host else pair.host.name}'s; fix: install MFT/mstflint and "
                         "run `mst start` (the twin: `dpusim env`)")
        q = _flint_query(side, devices[0][1])
        assert q.get("PSID") and q.get("Base GUID"), f"{side.name}: flint q printed no PSID/Base GUID: {q!r}"
        seen[side.name] = (q["PSID"], q["Base GUID"].split()[0])
    assert seen[pair.host.name] == seen[pair.dpu.name], (
        f"{pair.host.name} and {pair.dpu.name} do not see the same card (PSID, base GUID): {seen}. Fix the pairing "
        "(bluefleet_host / bluefleet_dpus) or, in the lab, the shared card volume")
