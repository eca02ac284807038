#!/usr/bin/python
# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: dividend_tunnel
short_description: The host-side IPsec + VXLAN tunnel the offload dividend compares the DPU path with
version_added: 0.1.0
description:
  - With O(state=present) the host itself encrypts and encapsulates its traffic to one peer, the work the DPU
    does on the DPU path - a private strongSwan C(charon) (IKEv2 with a pre-shared key, ESP in tunnel mode,
    userspace ESP with C(kernel-libipsec), ESP in UDP port 4500) between the two hosts' own addresses, and a
    kernel VXLAN device whose underlay is carried by that SA. A firewall between the hosts must pass UDP 500 and
    4500 (the DPU firewall role's default does).
  - The tunnel's inner addresses are link-local (O(inner_local) / O(inner_peer) on C(lo), O(overlay_local) on
    the VXLAN device); nothing else on the host is touched. charon runs with its own configuration, vici socket
    and PID under O(workdir), installs no routing rule or table (the one route it needs is added by the module
    on charon's TUN device and disappears with it).
  - Every step is written to O(workdir)/state.json before it is taken, so O(state=absent) removes what an
    interrupted run left behind (charon stopped, VXLAN device and addresses deleted, O(workdir) removed) and
    leaves the host as it was. With nothing to remove it changes nothing.
  - The pre-shared key is written only to a mode-0600 file under O(workdir) and never returned.
author:
  - bluefleet developers (!UNKNOWN)
options:
  state:
    description: C(present) builds the tunnel, C(absent) removes it and any leftover of an interrupted run.
    type: str
    choices: [present, absent]
    default: present
  local_address:
    description: This host's address (IKE and ESP endpoint). Required with O(state=present).
    type: str
  peer_address:
    description: The peer host's address. Required with O(state=present).
    type: str
  inner_local:
    description: This end's VXLAN underlay address (a /32 on C(lo), link-local).
    type: str
    default: 169.254.21.1
  inner_peer:
    description: The peer's VXLAN underlay address.
    type: str
    default: 169.254.21.2
  overlay_local:
    description: This end's address on the VXLAN device, with prefix length (link-local).
    type: str
    default: 169.254.22.1/30
  vni:
    description: VXLAN network identifier.
    type: int
    default: 2121
  mtu:
    description: MTU of the VXLAN device (leave room for VXLAN and ESP under the host's own MTU).
    type: int
    default: 1150
  psk:
    description: The IKE pre-shared key, the same on both hosts (generate one per run). Required with O(state=present).
    type: str
  initiate:
    description: Start the IKE negotiation from this end (one end of the pair, after the other end is present).
    type: bool
    default: false
  interface:
    description: Name of the VXLAN netdev the module creates (not the card, which other modules call C(device)).
    type: str
    default: bfdiv0
  workdir:
    description: Folder of charon's configuration, socket, PID and the state file.
    type: path
    default: /run/bluefleet-dividend
  charon:
    description: The charon binary; by default the first of C(/usr/sbin/charon-systemd), C(/usr/lib/ipsec/charon).
    type: path
  timeout:
    description: Seconds each command may run (the IKE negotiation included).
    type: int
    default: 30
attributes:
  check_mode:
    description: Reports what it would build or remove and changes nothing.
    support: full
  diff_mode:
    description: Returns the tunnel's parts before and after.
    support: full
  platform:
    description: Linux hosts with iproute2, strongSwan (swanctl, charon, kernel-libipsec) and C(/dev/net/tun).
    platforms: posix
    support: full
seealso:
  - module: bluefleet.dpu.offload_dividend
"""

EXAMPLES = r"""
- name: Remove a tunnel an interrupted measurement left
  bluefleet.dpu.dividend_tunnel:
    state: absent

- name: Host-side tunnel on the receiving end
  bluefleet.dpu.dividend_tunnel:
    local_address: 10.10.0.2
    peer_address: 10.10.0.1
    inner_local: 169.254.21.2
    inner_peer: 169.254.21.1
    overlay_local: 169.254.22.2/30
    psk: "{{ dividend_psk }}"
"""

RETURN = r"""
changed:
  description: True when something was built or removed.
  returned: always
  type: bool
tunnel:
  description: >-
    The parts present after the run - C(charon_pid) (or null), C(device) (true when the VXLAN device exists),
    C(addresses) (the module's addresses present on the host).
  returned: always
  type: dict
  sample: {"charon_pid": 412, "device": true, "addresses": ["169.254.21.1/32", "169.254.22.1/30"]}
removed:
  description: What O(state=absent) removed (or would remove in check mode).
  returned: always
  type: list
  elements: str
tool_version:
  description: What C(swanctl --version) prints (the strongSwan of the tunnel), or null without swanctl.
  returned: success
  type: str
  sample: strongSwan swanctl 5.9.8
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
"""

import json
import os
import signal
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import write_file
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner, error_reason
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    run_module,
    timeout_spec,
)

LABEL = "build the offload-dividend comparison tunnel"
CHARONS = ("/usr/sbin/charon-systemd", "/usr/lib/ipsec/charon")
CONN = "bfdividend"


def _state_path(params):
    return os.path.join(params["workdir"], "state.json")


# strongSwan drives the tunnel: its version (swanctl prints "strongSwan swanctl 5.9.8").
SWANCTL_VERSION_ARGV = ("swanctl", "--version")


def read_state(params):
    try:
        with open(_state_path(params), encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"device": params["interface"], "addresses": [], "charon_pid": None}
    return data if isinstance(data, dict) else {"device": params["interface"], "addresses": [], "charon_pid": None}


def write_state(params, state):
    os.makedirs(params["workdir"], mode=0o700, exist_ok=True)
    write_file(_state_path(params), json.dumps(state), mode=0o600)


def _is_charon(pid):
    try:
        with open("/proc/%d/cmdline" % int(pid), "rb") as handle:
            return b"charon" in handle.read().split(b"\0")[0]
    except (OSError, ValueError, TypeError):
        return False


def _link_exists(runner, device):
    return runner.run(["ip", "-o", "link", "show", "dev", device]).rc == 0


def _lo_addresses(runner):
    result = runner.run(["ip", "-o", "-4", "addr", "show"])
    return {line.split()[3] for line in result.stdout.splitlines() if len(line.split()) > 3}


def present_parts(runner, params, state):
    """What of the tunnel exists now (from the state file, checked against the host)."""
    state = state or {}
    pid = state.get("charon_pid")
    have = _lo_addresses(runner)
    return {"charon_pid": pid if pid and _is_charon(pid) else None,
            "device": _link_exists(runner, state.get("device") or params["interface"]),
            "addresses": sorted(a for a in state.get("addresses", []) if a in have)}


def _run(runner, argv, what, result_ok=None):
    result = runner.run(argv)
    reason = error_reason(result)
    if reason and not (result_ok and result_ok(result)):
        raise ToolError("%s failed: %s: %s" % (LABEL, what, reason), result)
    return result


def removal_plan(params, parts, state):
    """What ``remove`` takes away, in its words and order."""
    plan = ["charon (pid %d)" % parts["charon_pid"]] if parts["charon_pid"] else []
    plan += ["link %s" % ((state or {}).get("device") or params["interface"])] if parts["device"] else []
    plan += ["address %s on lo" % a for a in parts["addresses"] if a.endswith("/32")]
    return plan + ([params["workdir"]] if os.path.isdir(params["workdir"]) else [])


def remove(runner, params, parts, state):
    removed = []
    if parts["charon_pid"]:
        os.kill(parts["charon_pid"], signal.SIGTERM)
        for _poll in range(50):
            if not _is_charon(parts["charon_pid"]):
                break
            time.sleep(0.1)
        else:
            os.kill(parts["charon_pid"], signal.SIGKILL)
        removed.append("charon (pid %d)" % parts["charon_pid"])
    device = (state or {}).get("device") or params["interface"]
    if parts["device"]:
        _run(runner, ["ip", "link", "del", "dev", device], "delete %s" % device)
        removed.append("link %s" % device)
    for address in parts["addresses"]:
        if address.endswith("/32"):
            _run(runner, ["ip", "addr", "del", address, "dev", "lo"], "delete %s from lo" % address)
            removed.append("address %s on lo" % address)
    if os.path.isdir(params["workdir"]):
        for name in os.listdir(params["workdir"]):
            os.unlink(os.path.join(params["workdir"], name))
        os.rmdir(params["workdir"])
        removed.append(params["workdir"])
    return removed


def strongswan_conf(params):
    sock = os.path.join(params["workdir"], "charon.vici")
    return ("# written by bluefleet.dpu.dividend_tunnel; removed with state=absent\n"
            "include /etc/strongswan.conf\n"
            "charon {\n  install_routes = no\n  routing_table = 0\n  install_virtual_ip = no\n"
            "  plugins {\n    kernel-libipsec {\n      load = yes\n      raw_esp = no\n    }\n"
            "    vici {\n      socket = unix://%s\n    }\n  }\n}\n"
            "charon-systemd {\n  journal {\n    default = -1\n  }\n}\n" % sock)


def swanctl_conf(params):
    return ("connections {\n  %(c)s {\n    version = 2\n    local_addrs = %(l)s\n    remote_addrs = %(r)s\n"
            "    encap = yes\n    local {\n      auth = psk\n      id = %(l)s\n    }\n"
            "    remote {\n      auth = psk\n      id = %(r)s\n    }\n    children {\n      %(c)s {\n"
            "        local_ts = %(il)s/32\n        remote_ts = %(ip)s/32\n        mode = tunnel\n"
            "        esp_proposals = aes256gcm16\n        start_action = none\n      }\n    }\n  }\n}\n"
            "secrets {\n  ike-%(c)s {\n    id-a = %(l)s\n    id-b = %(r)s\n    secret = \"%(k)s\"\n  }\n}\n"
            % {"c": CONN, "l": params["local_address"], "r": params["peer_address"], "il": params["inner_local"],
               "ip": params["inner_peer"], "k": params["psk"]})


def _write_private(path, text):
    write_file(path, text, mode=0o600)


def build(runner, params, state):
    """Start charon, load the connection, (initiate), add addresses, the VXLAN device and the route."""
    workdir = params["workdir"]
    env = dict(runner.environ, STRONGSWAN_CONF=os.path.join(workdir, "strongswan.conf"))
    uri = "unix://" + os.path.join(workdir, "charon.vici")
    charon = params["charon"] or next((c for c in CHARONS if os.access(c, os.X_OK)), None)
    if charon is None:
        raise ToolError("%s failed: no charon (%s): install strongSwan (charon-systemd or strongswan-charon)"
                        % (LABEL, ", ".join(CHARONS)))
    swanctl = ToolRunner(timeout=params["timeout"], environ=env)
    swanctl.cmd = runner.cmd
    write_state(params, state)
    _write_private(os.path.join(workdir, "strongswan.conf"), strongswan_conf(params))
    _write_private(os.path.join(workdir, "swanctl.conf"), swanctl_conf(params))
    if not state.get("charon_pid") or not _is_charon(state["charon_pid"]):
        # charon in its own session, detached from this module (it outlives it until state=absent)
        started = _run(swanctl, ["sh", "-c", 'setsid "$0" >>"$1" 2>&1 </dev/null & echo $!', charon,
                                 os.path.join(workdir, "charon.log")], "start " + charon)
        state["charon_pid"] = int(started.stdout.strip())
        write_state(params, state)
        sock = os.path.join(workdir, "charon.vici")
        for _poll in range(params["timeout"] * 10):
            if os.path.exists(sock) or not os.path.exists("/proc/%d" % state["charon_pid"]):
                break
            time.sleep(0.1)
        if not os.path.exists(sock):
            raise ToolError("%s failed: charon did not open its vici socket %s (see %s/charon.log)"
                            % (LABEL, sock, workdir))
    _run(swanctl, ["swanctl", "--load-all", "--noprompt", "--uri", uri, "--file",
                   os.path.join(workdir, "swanctl.conf")], "load the connection into charon")
    for address, dev in (("%s/32" % params["inner_local"], "lo"),):
        state["addresses"] = sorted(set(state.get("addresses", [])) | {address})
        write_state(params, state)
        if address not in _lo_addresses(runner):
            _run(runner, ["ip", "addr", "add", address, "dev", dev], "add %s to %s" % (address, dev))
    if params["initiate"]:
        _run(swanctl, ["swanctl", "--initiate", "--child", CONN, "--uri", uri, "--timeout", str(params["timeout"])],
             "negotiate IKE with %s (is the peer's tunnel present?)" % params["peer_address"])
    dev = params["interface"]
    state["device"] = dev
    state["addresses"] = sorted(set(state["addresses"]) | {params["overlay_local"]})
    write_state(params, state)
    if not _link_exists(runner, dev):
        _run(runner, ["ip", "link", "add", dev, "type", "vxlan", "id", str(params["vni"]), "local",
                      params["inner_local"], "remote", params["inner_peer"], "dstport", "4789"], "add " + dev)
        _run(runner, ["ip", "link", "set", "dev", dev, "mtu", str(params["mtu"])], "set the MTU of " + dev)
        _run(runner, ["ip", "addr", "add", params["overlay_local"], "dev", dev], "address " + dev)
        _run(runner, ["ip", "link", "set", "dev", dev, "up"], "bring %s up" % dev)
    # charon installs no route (install_routes = no): send the peer's inner address into its TUN device
    for _poll in range(params["timeout"] * 10):
        if _link_exists(runner, "ipsec0"):
            break
        time.sleep(0.1)
    _run(runner, ["ip", "route", "replace", "%s/32" % params["inner_peer"], "dev", "ipsec0", "src",
                  params["inner_local"]], "route %s into charon's ipsec0" % params["inner_peer"])
    return state


def tunnel(runner, params):
    if params["state"] == "present":
        missing = [k for k in ("local_address", "peer_address", "psk") if not params[k]]
        if missing:
            raise ToolError("%s failed: state=present needs %s" % (LABEL, ", ".join(missing)))
    state = read_state(params)
    before = present_parts(runner, params, state)
    out = {"changed": False, "removed": [], "tunnel": before}
    if params["state"] == "absent":
        if state is None and not before["device"]:
            return out
        out["changed"] = True
        out["removed"] = removal_plan(params, before, state)
        if not runner.check_mode:
            out["removed"] = remove(runner, params, before, state)
    else:
        complete = before["charon_pid"] and before["device"] and len(before["addresses"]) == 2
        if not complete:
            out["changed"] = True
            if not runner.check_mode:
                build(runner, params, state or {"device": params["interface"], "addresses": [], "charon_pid": None})
    after = present_parts(runner, params, read_state(params)) if not runner.check_mode else before
    out["tunnel"] = after
    out["diff"] = {"before": before, "after": after}
    return out


def argument_spec():
    return {
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "local_address": {"type": "str"},
        "peer_address": {"type": "str"},
        "inner_local": {"type": "str", "default": "169.254.21.1"},
        "inner_peer": {"type": "str", "default": "169.254.21.2"},
        "overlay_local": {"type": "str", "default": "169.254.22.1/30"},
        "vni": {"type": "int", "default": 2121},
        "mtu": {"type": "int", "default": 1150},
        "psk": {"type": "str", "no_log": True},
        "initiate": {"type": "bool", "default": False},
        "interface": {"type": "str", "default": "bfdiv0"},
        "workdir": {"type": "path", "default": "/run/bluefleet-dividend"},
        "charon": {"type": "path"},
        "timeout": timeout_spec(30),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           required_if=[("state", "present", ("local_address", "peer_address", "psk"))])

    def work(runner):
        runner.check_mode = module.check_mode
        return tunnel(runner, module.params)

    run_module(module, LABEL, ToolRunner, work, lambda result: SWANCTL_VERSION_ARGV)


if __name__ == "__main__":
    main()
