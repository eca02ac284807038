#!/usr/bin/python
# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: ovs_bridge
short_description: An Open vSwitch bridge, its ports and the switch's other_config (hw-offload)
version_added: 0.1.0
description:
  - Reads the switch with C(ovs-vsctl show) and C(ovs-vsctl get Open_vSwitch . other_config), compares the
    bridge O(bridge) (its datapath type and ports) and the O(other_config) keys with what is asked for, and
    changes what differs in one C(ovs-vsctl) transaction, then reads it again.
  - Ports named in O(ports) are added when missing; ports not named are left alone unless O(purge_ports).
    Every port must be an existing network interface; one that is not is an error before anything changes.
  - A change of C(hw-offload) takes effect when Open vSwitch restarts (DOCA OVS-Kernel hardware offload docs);
    the module does not restart it and returns RV(restart_required) instead.
author:
  - bluefleet developers (!UNKNOWN)
options:
  bridge:
    description: The bridge name.
    type: str
    required: true
  state:
    description: Whether the bridge exists.
    type: str
    choices: [present, absent]
    default: present
  datapath_type:
    description: The bridge's datapath type (C(system) - the kernel datapath, C(netdev) - userspace). Null keeps
      what the bridge has (a new bridge gets the switch's default). Set in the same transaction as the bridge is
      created, so it never starts on the wrong datapath.
    type: str
  ports:
    description: System interfaces that must be ports of the bridge.
    type: list
    elements: str
    default: []
  purge_ports:
    description: Remove ports of the bridge that are not in O(ports) (the bridge's own internal port stays).
    type: bool
    default: false
  other_config:
    description: Keys of the C(Open_vSwitch) table's C(other_config) column, for example C(hw-offload) with the
      string C("true"). Values are strings; keys not named are left alone.
    type: dict
    default: {}
  timeout:
    description: Seconds each command may run.
    type: int
    default: 60
attributes:
  check_mode:
    description: Reads the switch and reports what would change; runs no changing command.
    support: full
  diff_mode:
    description: The bridge (datapath type, ports) and the named other_config keys before and after.
    support: full
  platform:
    description: Linux with Open vSwitch (ovs-vsctl) and iproute2.
    platforms: posix
    support: full
notes:
  - C(ovs-vsctl) and C(ip) are looked up on C(PATH) of the task's environment. ovs-vswitchd must be running
    (ovs-vsctl waits for it to apply a change).
seealso:
  - module: bluefleet.dpu.netdev
"""

EXAMPLES = r"""
- name: Bridge the host representor and the overlay port, with hardware offload on
  bluefleet.dpu.ovs_bridge:
    bridge: br-sfc
    datapath_type: netdev
    ports: [pf0hpf, vxlan0]
    other_config:
      hw-offload: "true"
  register: ovs

- name: Restart Open vSwitch when a setting needs it
  ansible.builtin.service:
    name: openvswitch-switch
    state: restarted
  when: ovs.restart_required
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
bridge:
  description: The bridge after the run (in check mode, as predicted) - C(exists), C(datapath_type), C(ports);
    C(interface_errors) maps a port to the error OVS reports for it.
  returned: always
  type: dict
other_config:
  description: The C(Open_vSwitch) table's C(other_config) after the run (in check mode, as predicted).
  returned: always
  type: dict
  sample: {hw-offload: "true"}
restart_required:
  description: True when a changed other_config key takes effect only after Open vSwitch restarts (C(hw-offload)).
  returned: always
  type: bool
diff:
  description: Bridge and named other_config keys before and after.
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
tool_version:
  description: First line of C(ovs-vsctl --version).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._ovs import parse_vsctl_get_map, parse_vsctl_show
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_module,
    run_tool,
    timeout_spec,
)

# other_config keys that ovs-vswitchd reads at start only (DOCA docs "OVS-Kernel Hardware Offloads":
# set hw-offload, then restart openvswitch; bluefleet reset planner kind ovs_hw_offload).
RESTART_KEYS = ("hw-offload",)
_HINT = "; is Open vSwitch installed and ovs-vswitchd running?"


def read_switch(runner, bridge):
    what = "read Open vSwitch"
    show = parse_output(parse_vsctl_show, run_tool(runner, ["ovs-vsctl", "show"], what, hint=_HINT), what)
    other = parse_output(parse_vsctl_get_map,
                         run_tool(runner, ["ovs-vsctl", "get", "Open_vSwitch", ".", "other_config"], what), what)
    br = show["bridges"].get(bridge)
    if br is None:
        state = {"exists": False, "datapath_type": None, "ports": [], "interface_errors": {}}
    else:
        ports = sorted(p for p in br["ports"] if p != bridge)
        errors = {}
        for port in br["ports"].values():
            for iname, iface in port["interfaces"].items():
                if iface.get("error"):
                    errors[iname] = iface["error"]
        state = {"exists": True, "datapath_type": br.get("datapath_type") or "system", "ports": ports,
                 "interface_errors": errors}
    return state, other["map"]


def _port_exists(runner, name):
    return runner.run(["ip", "link", "show", "dev", name]).rc == 0


def check_params(runner, params):
    bridge = params["bridge"]
    if params["state"] == "absent":
        return
    missing = [p for p in params["ports"] if not _port_exists(runner, p)]
    if missing:
        raise ToolError("configure OVS bridge %s failed: port(s) %s are not network interfaces on this host; create "
                        "them first or fix the port list (ovs_bridges)" % (bridge, ", ".join(missing)))
    for key, value in params["other_config"].items():
        if not isinstance(value, str):
            raise ToolError("configure OVS bridge %s failed: other_config %s=%r must be a string (quote it: \"%s\")"
                            % (bridge, key, value, str(value).lower() if isinstance(value, bool) else value))


def plan(params, br, other):
    bridge = params["bridge"]
    args = []
    if params["state"] == "absent":
        if br["exists"]:
            args = ["--", "del-br", bridge]
        return args, []
    if not br["exists"]:
        args += ["--", "add-br", bridge]
    if params["datapath_type"] and (not br["exists"] or br["datapath_type"] != params["datapath_type"]):
        args += ["--", "set", "bridge", bridge, "datapath_type=%s" % params["datapath_type"]]
    for port in params["ports"]:
        if port not in br["ports"]:
            args += ["--", "add-port", bridge, port]
    if params["purge_ports"]:
        for port in br["ports"]:
            if port not in params["ports"]:
                args += ["--", "del-port", bridge, port]
    changed_keys = [k for k, v in sorted(params["other_config"].items()) if other.get(k) != v]
    for key in changed_keys:
        args += ["--", "set", "Open_vSwitch", ".", "other_config:%s=%s" % (key, params["other_config"][key])]
    return args, changed_keys


def wanted(params, br):
    if params["state"] == "absent":
        return {"exists": False, "datapath_type": None, "ports": [], "interface_errors": {}}
    ports = sorted(set(params["ports"]) | (set() if params["purge_ports"] else set(br["ports"])))
    return {"exists": True, "datapath_type": params["datapath_type"] or br["datapath_type"] or "system",
            "ports": ports, "interface_errors": {}}


def run_bridge(runner, params, check_mode):
    check_params(runner, params)
    bridge = params["bridge"]
    br, other = read_switch(runner, bridge)
    args, changed_keys = plan(params, br, other)
    want_br = wanted(params, br)
    want_other = dict(other)
    want_other.update(params["other_config"])
    changed = bool(args)
    after_br, after_other = (want_br, want_other) if check_mode and changed else (br, other)  # check mode: predicted
    if changed and not check_mode:
        what = "configure OVS bridge %s" % bridge
        run_tool(runner, ["ovs-vsctl"] + args[1:], what)
        after_br, after_other = read_switch(runner, bridge)
        if after_br["interface_errors"]:
            raise ToolError("%s failed: OVS reports %s" % (what, "; ".join(
                "%s: %s" % kv for kv in sorted(after_br["interface_errors"].items()))))
        bad = [k for k in params["other_config"] if after_other.get(k) != params["other_config"][k]]
        # datapath_type is only checked on a bridge that should exist (state absent ignores it)
        if after_br["exists"] != want_br["exists"] or after_br["ports"] != want_br["ports"] or bad or (
                want_br["exists"] and params["datapath_type"] and after_br["datapath_type"] != params["datapath_type"]):
            raise ToolError("%s failed: read back %s other_config %s, wanted %s"
                            % (what, after_br, after_other, want_br))
    named = sorted(params["other_config"])
    before_view = {"bridge": br, "other_config": {k: other.get(k) for k in named}}
    after_view = {"bridge": want_br, "other_config": {k: want_other.get(k) for k in named}}
    return {
        "changed": changed,
        "bridge": after_br,
        "other_config": after_other,
        "restart_required": any(k in RESTART_KEYS for k in changed_keys),
        "diff": make_diff(before_view, after_view if changed else before_view),
    }


def argument_spec():
    return {
        "bridge": {"type": "str", "required": True},
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "datapath_type": {"type": "str"},
        "ports": {"type": "list", "elements": "str", "default": []},
        "purge_ports": {"type": "bool", "default": False},
        "other_config": {"type": "dict", "default": {}},
        "timeout": timeout_spec(60),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, "configure OVS bridge %s" % module.params["bridge"], ToolRunner,
               lambda runner: run_bridge(runner, module.params, module.check_mode),
               lambda result: ["ovs-vsctl", "--version"], predicts=True)


if __name__ == "__main__":
    main()
