#!/usr/bin/python
# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: netdev
short_description: Addresses, MTU and link state of a Linux network interface; optionally a kernel VXLAN netdev
version_added: 0.1.0
description:
  - Reads the interface with C(ip -d -j link show dev NAME) and C(ip -j addr show dev NAME), compares it with
    what is asked for, runs only the C(ip) commands needed once, and reads it again.
  - Addresses in O(addresses) are added when missing; other addresses are left alone.
  - With O(vxlan) the interface is a kernel VXLAN netdev, created when missing and created again when its VNI,
    local or remote address or port differ. Without O(vxlan) an interface that does not exist is an error
    (nothing is changed).
author:
  - bluefleet developers (!UNKNOWN)
options:
  name:
    description: The interface name.
    type: str
    required: true
  addresses:
    description: IPv4 addresses with prefix length that must be on the interface.
    type: list
    elements: str
    default: []
  mtu:
    description: The MTU wanted; null keeps the current one.
    type: int
  up:
    description: Whether the link must be administratively up.
    type: bool
    default: true
  vxlan:
    description: Make O(name) a kernel VXLAN netdev with these parameters (learning off).
    type: dict
    suboptions:
      id:
        description: The VXLAN network identifier.
        type: int
        required: true
      local:
        description: The local tunnel end point address.
        type: str
        required: true
      remote:
        description: The remote tunnel end point address.
        type: str
        required: true
      dstport:
        description: The UDP port.
        type: int
        default: 4789
  timeout:
    description: Seconds each command may run.
    type: int
    default: 30
attributes:
  check_mode:
    description: Reads the interface and reports what would change; runs no changing command.
    support: full
  diff_mode:
    description: Addresses, MTU, state and VXLAN parameters before and after.
    support: full
  platform:
    description: Linux with iproute2 (JSON output, C(-j)).
    platforms: posix
    support: full
notes:
  - C(ip) is looked up on C(PATH) of the task's environment.
"""

EXAMPLES = r"""
- name: VTEP address on the loopback
  bluefleet.dpu.netdev:
    name: lo
    addresses: [172.30.0.1/32]

- name: GPU host overlay address and MTU
  bluefleet.dpu.netdev:
    name: ens1f0np0
    addresses: [10.10.0.1/24]
    mtu: 1300

- name: Kernel VXLAN netdev between two VTEPs
  bluefleet.dpu.netdev:
    name: vxlan0
    vxlan:
      id: 100
      local: 172.30.0.1
      remote: 172.30.0.2
"""

RETURN = r"""
check_mode_prediction:
  description:
    - Only in check mode. True - the resource keys show the state the module predicts after a real run
      (what it would write), not the state before.
  returned: check mode
  type: bool
  sample: true
changed:
  description: True when something was (or, in check mode, would be) changed.
  returned: always
  type: bool
interface:
  description: The interface after the run (in check mode, as predicted) - C(addresses), C(mtu), C(up), C(vxlan).
  returned: always
  type: dict
diff:
  description: The interface before and after.
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
"""

import ipaddress
import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    run_module,
    run_tool,
    timeout_spec,
)


def _json(result, what):
    try:
        return json.loads(result.stdout or "[]")
    except ValueError as exc:
        raise ToolError("%s failed: ip did not print JSON (%s); iproute2 with -j is needed"
                        % (what, exc), result) from None


def read_netdev(runner, name):
    """The interface as a dict, or None when it does not exist."""
    what = "read interface %s" % name
    result = runner.run(["ip", "-d", "-j", "link", "show", "dev", name])
    if result.rc != 0:
        text = (result.stderr + result.stdout).lower()
        if "does not exist" in text or "cannot find device" in text:
            return None
        run_tool(runner, ["ip", "-d", "-j", "link", "show", "dev", name], what)
    links = _json(result, what)
    if not links:
        return None
    link = links[0]
    addrs = _json(run_tool(runner, ["ip", "-j", "-4", "addr", "show", "dev", name], what), what)
    addresses = sorted("%s/%s" % (a["local"], a["prefixlen"]) for entry in addrs for a in entry.get("addr_info", [])
                       if a.get("family") == "inet")
    info = link.get("linkinfo") or {}
    vxlan = None
    if info.get("info_kind") == "vxlan":
        data = info.get("info_data") or {}
        vxlan = {"id": data.get("id"), "local": data.get("local"), "remote": data.get("remote"),
                 "dstport": data.get("port")}
    return {"addresses": addresses, "mtu": link.get("mtu"), "up": "UP" in (link.get("flags") or []),
            "vxlan": vxlan}


def check_params(params):
    name = params["name"]
    for addr in params["addresses"]:
        try:
            iface = ipaddress.ip_interface(addr)
        except ValueError as exc:
            raise ToolError("configure %s failed: address %r is not valid (%s); give IPv4 CIDRs like 10.10.0.1/24"
                            % (name, addr, exc)) from None
        if "/" not in addr or iface.version != 4:
            raise ToolError("configure %s failed: address %r needs an IPv4 address with prefix length" % (name, addr))
    if params["mtu"] is not None and not 68 <= params["mtu"] <= 65535:
        raise ToolError("configure %s failed: mtu %s is out of range 68..65535" % (name, params["mtu"]))
    vx = params["vxlan"]
    if vx:
        for key in ("local", "remote"):
            try:
                ipaddress.IPv4Address(vx[key])
            except ValueError:
                raise ToolError("configure %s failed: vxlan.%s %r is not an IPv4 address"
                                % (name, key, vx[key])) from None
        if not 0 < vx["id"] < 1 << 24:
            raise ToolError("configure %s failed: vxlan.id %s is out of range 1..16777215" % (name, vx["id"]))


def _norm(addr):
    iface = ipaddress.ip_interface(addr)
    return "%s/%s" % (iface.ip, iface.network.prefixlen)


def run_netdev(runner, params, check_mode):
    check_params(params)
    name = params["name"]
    before = read_netdev(runner, name)
    vx = params["vxlan"]
    want_vx = None
    if vx:
        want_vx = {"id": vx["id"], "local": vx["local"], "remote": vx["remote"], "dstport": vx["dstport"]}
    elif before is None:
        raise ToolError("configure %s failed: interface %s does not exist on this host; check the interface name "
                        "(inventory / role variables)" % (name, name))
    cur = before or {"addresses": [], "mtu": None, "up": False, "vxlan": None}
    want = {
        "addresses": sorted(set(cur["addresses"]) | {_norm(a) for a in params["addresses"]}),
        "mtu": params["mtu"] if params["mtu"] is not None else cur["mtu"],
        "up": params["up"],
        "vxlan": want_vx if vx else cur["vxlan"],
    }
    steps = []
    recreate = bool(vx) and (before is None or before["vxlan"] != want_vx)
    if recreate:
        if before is not None:
            steps.append(["ip", "link", "del", "dev", name])
        steps.append(["ip", "link", "add", name, "type", "vxlan", "id", str(vx["id"]), "local", vx["local"],
                      "remote", vx["remote"], "dstport", str(vx["dstport"]), "nolearning"])
        have_addrs, have_mtu, have_up = [], None, False
    else:
        have_addrs, have_mtu, have_up = cur["addresses"], cur["mtu"], cur["up"]
    if params["mtu"] is not None and have_mtu != params["mtu"]:
        steps.append(["ip", "link", "set", "dev", name, "mtu", str(params["mtu"])])
    for addr in params["addresses"]:
        if _norm(addr) not in have_addrs:
            steps.append(["ip", "addr", "add", _norm(addr), "dev", name])
    if params["up"] != have_up:
        steps.append(["ip", "link", "set", "dev", name, "up" if params["up"] else "down"])
    changed = bool(steps)
    after = cur if before is not None else want
    if changed and not check_mode:
        for argv in steps:
            run_tool(runner, argv, "configure %s (%s)" % (name, " ".join(argv)))
        after = read_netdev(runner, name)
        if after is None:
            raise ToolError("configure %s failed: the interface is gone after the change" % name)
        missing = [a for a in want["addresses"] if a not in after["addresses"]]
        if missing or (params["mtu"] is not None and after["mtu"] != params["mtu"]) or after["up"] != params["up"]:
            raise ToolError("configure %s failed: read back %s, wanted %s" % (name, after, want))
    return {"changed": changed, "interface": (want if changed else cur) if check_mode else after,
            "diff": make_diff(before or {}, want if changed else (before or {}))}


def argument_spec():
    return {
        "name": {"type": "str", "required": True},
        "addresses": {"type": "list", "elements": "str", "default": []},
        "mtu": {"type": "int"},
        "up": {"type": "bool", "default": True},
        "vxlan": {"type": "dict", "options": {
            "id": {"type": "int", "required": True},
            "local": {"type": "str", "required": True},
            "remote": {"type": "str", "required": True},
            "dstport": {"type": "int", "default": 4789},
        }},
        "timeout": timeout_spec(30),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, "configure %s" % module.params["name"], ToolRunner,
               lambda runner: run_netdev(runner, module.params, module.check_mode), predicts=True)


if __name__ == "__main__":
    main()
