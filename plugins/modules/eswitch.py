# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: eswitch
short_description: Set the eswitch mode (legacy or switchdev) of an mlx5 device with devlink
version_added: 0.1.0
description:
  - Reads the eswitch of the device with C(devlink -j dev eswitch show) and, when it differs from O(mode),
    O(inline_mode) or O(encap_mode), sets it once with C(devlink dev eswitch set pci/BDF ...), reads it again and
    fails unless it is what was asked for.
  - A mode change follows the documented order (DOCA "OVS-Kernel Hardware Offloads"; see docs/hardware-facts.md
    section 3) - the SR-IOV VFs of the device that are bound to a driver are unbound first (written to
    C(/sys/bus/pci/drivers/<driver>/unbind)), the mode is set, and the same VFs are bound again, also when setting
    the mode fails. A device without VFs (the BlueField Arm side, where the VFs belong to the host) needs neither.
  - The device is O(device) (a PCI address) or the devlink device that owns the port of O(netdev)
    (C(devlink -j port show)). One that devlink does not list fails before anything changes, naming the devices
    it lists.
  - O(netdevs) sets the devices of several netdevs (the uplinks C(p0) and C(p1)) in one run - one read, every
    netdev resolved first (any that is no port of a device with an eswitch fails, all of them named, before
    anything is set), each device that differs set in turn, one read back. The result is then RV(eswitches), one
    entry per device.
  - The eswitch mode is runtime state - it is active at once (RV(reset_required) is C(none)) and lost when the
    driver restarts or the machine reboots; on a BlueField the Arm OS sets switchdev at boot.
author:
  - bluefleet developers (!UNKNOWN)
options:
  device:
    description:
      - The PCI function whose eswitch to set, as C(0000:03:00.0), C(03:00.0) or the devlink handle
        C(pci/0000:03:00.0).
      - Exactly one of O(device), O(netdev) and O(netdevs) is required.
    type: str
  netdev:
    description:
      - A netdev of the device instead of O(device) (for example the uplink C(p0)); resolved with
        C(devlink -j port show).
    type: str
  netdevs:
    description:
      - Several netdevs instead of O(device) or O(netdev) (for example the uplinks C([p0, p1])); every device that
        owns one of them gets O(mode), O(inline_mode) and O(encap_mode), in one run. A device owning two of them is
        set once.
      - Every netdev is resolved before anything is set; one that is no port of a devlink device with an eswitch
        fails the run, naming it, with nothing changed.
    type: list
    elements: str
  mode:
    description: The eswitch mode wanted.
    type: str
    choices: [legacy, switchdev]
    required: true
  inline_mode:
    description: The eswitch inline mode wanted (C(devlink ... inline-mode)). Null - keep what the device has.
    type: str
    choices: [none, link, network, transport]
  encap_mode:
    description: The eswitch encapsulation mode wanted (C(devlink ... encap-mode)). Null - keep what the device has.
    type: str
    choices: [none, basic]
  timeout:
    description: Seconds each command may run.
    type: int
    default: 60
extends_documentation_fragment:
  - bluefleet.dpu.options.fs_root
attributes:
  check_mode:
    description: Reads the eswitch and the VFs and reports what would change; unbinds and sets nothing.
    support: full
  diff_mode:
    description: The mode, inline mode and encap mode before and after.
    support: full
  platform:
    description: Linux with iproute2 devlink and an mlx5 device (BlueField Arm, ConnectX host).
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
  - Set the uplink representor mode and IPsec full offload (M(bluefleet.dpu.ipsec_offload) and a driver restart)
    before switching to switchdev, and switchdev before OVS offloads flows (docs/hardware-facts.md section 3).
seealso:
  - module: bluefleet.dpu.ipsec_offload
"""

EXAMPLES = r"""
- name: Put both BlueField uplinks in switchdev mode
  bluefleet.dpu.eswitch:
    device: "{{ item }}"
    mode: switchdev
  loop: ["0000:03:00.0", "0000:03:00.1"]  # quoted: unquoted, YAML reads them as numbers (base 60)

- name: Switchdev on the PF that owns ens1f0np0 (its VFs are unbound and bound again)
  bluefleet.dpu.eswitch:
    netdev: ens1f0np0
    mode: switchdev
    encap_mode: basic
  register: esw

- name: Both uplinks' devices in one run (check mode - which device differs, nothing set)
  bluefleet.dpu.eswitch:
    netdevs: [p0, p1]
    mode: switchdev
  check_mode: true
  register: esw_check
"""

RETURN = r"""
before:
  description:
    - The state before the module ran (the same as RV(eswitch) when nothing changed); RV(previous) is its older
      name.
    - With O(netdevs), a dict of devlink handle to that state.
  returned: success
  type: dict
check_mode_prediction:
  description:
    - Only in check mode. True - the resource keys show the state the module predicts after a real run
      (what it would write), not the state before.
  returned: check mode
  type: bool
  sample: true
changed:
  description: True when the eswitch was changed (in check mode, would be).
  returned: always
  type: bool
device:
  description: The devlink handle of the device.
  returned: with O(device) or O(netdev)
  type: str
  sample: pci/0000:03:00.0
eswitch:
  description: The eswitch after the run as devlink shows it (in check mode, as predicted).
  returned: with O(device) or O(netdev)
  type: dict
  sample: {mode: switchdev, inline_mode: none, encap_mode: basic}
eswitches:
  description:
    - With O(netdevs), one entry per device, in the order of O(netdevs) - C(device) (devlink handle), C(netdevs)
      (those of O(netdevs) it owns), C(changed) (set, or in check mode would be), C(eswitch) (after the run; in
      check mode, as predicted), C(before) and C(vfs) (as RV(vfs), for this device).
  returned: with O(netdevs)
  type: list
  elements: dict
  sample:
    - {device: pci/0000:03:00.0, netdevs: [p0], changed: true, vfs: [],
       eswitch: {mode: switchdev, inline_mode: none, encap_mode: basic},
       before: {mode: legacy, inline_mode: none, encap_mode: basic}}
previous:
  description: The eswitch before the run.
  returned: with O(device) or O(netdev)
  type: dict
  sample: {mode: legacy, inline_mode: none, encap_mode: basic}
vfs:
  description: PCI addresses of the device's VFs that were bound to a driver, hence unbound and bound again
    around the mode change (in check mode, that would be); empty when the mode did not change. With O(netdevs),
    those of every device.
  returned: always
  type: list
  elements: str
  sample: ["0000:08:00.2", "0000:08:00.3"]
reset_required:
  description: Always C(none) - the eswitch mode is active at once (reset classes of the bluefleet reset planner).
  returned: always
  type: str
  sample: none
diff:
  description: C(mode), C(inline_mode) and C(encap_mode) before and after; with O(netdevs), keyed by devlink
    handle.
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
tool_version:
  description: First line of C(devlink -V), or null when the tool does not answer it.
  returned: always
  type: str
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._eswitch import (
    KEYS,
    MUTUALLY_EXCLUSIVE,
    PORTS_ARGV,
    REQUIRED_ONE_OF,
    argument_spec,
    check_netdevs,
    outcome,
    owners_of,
    plan_entry,
    resolve_device,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._devlink import parse_eswitch, parse_port
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import write_attribute
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_module,
    run_tool,
)

DEVLINK_OPTION = {"mode": "mode", "inline_mode": "inline-mode", "encap_mode": "encap-mode"}


def read_all(runner):
    what = "read eswitch modes with devlink"
    result = run_tool(runner, ["devlink", "-j", "dev", "eswitch", "show"], what)
    return parse_output(parse_eswitch, result, what)["devices"]


def resolve_netdevs(runner, netdevs, option, devices):
    """``[(handle, [netdev, ...])]`` in the order of ``netdevs`` (``_eswitch.owners_of``): every netdev is resolved
    before anything changes."""
    what = "find the device of netdev %s with devlink" % ", ".join(netdevs)
    result = run_tool(runner, list(PORTS_ARGV), what)
    ports = parse_output(parse_port, result, what)["ports"]
    return owners_of(netdevs, ports, devices, option)


def resolve(runner, params, devices):
    """``[(handle, [netdev, ...])]``: the devices asked for (O(device), O(netdev) or O(netdevs)); one devlink does
    not list fails here, before anything changes."""
    if params["device"] is not None:
        return [(resolve_device(params["device"], devices), [])]
    if params["netdev"] is not None:
        return resolve_netdevs(runner, [params["netdev"]], "netdev", devices)
    return resolve_netdevs(runner, params["netdevs"], "netdevs", devices)


def bound_vfs(fs_root, handle):
    """``[(vf_bdf, driver)]`` of the device's SR-IOV VFs that are bound to a driver (sysfs virtfnN links)."""
    dev = os.path.join(fs_root, "sys/bus/pci/devices", handle[4:])
    if not os.path.isdir(dev):
        return []
    out = []
    names = [n for n in os.listdir(dev) if re.match(r"^virtfn\d+$", n)]
    for name in sorted(names, key=lambda n: int(n[6:])):
        vf = os.path.basename(os.path.realpath(os.path.join(dev, name)))
        driver_link = os.path.join(dev, name, "driver")
        if os.path.exists(driver_link):
            out.append((vf, os.path.basename(os.path.realpath(driver_link))))
    return out


def write_sysfs(fs_root, driver, action, bdf):
    path = os.path.join(fs_root, "sys/bus/pci/drivers", driver, action)
    try:
        write_attribute(path, bdf)
    except OSError as exc:
        raise ToolError("set eswitch failed: cannot %s VF %s (write %s): %s" % (action, bdf, path, exc)) from exc


def set_argv(handle, before, want):
    argv = ["devlink", "dev", "eswitch", "set", handle]
    for key in KEYS:
        if want[key] != before[key]:
            argv += [DEVLINK_OPTION[key], want[key]]
    return argv


def set_one(runner, params, entry):
    """Unbind the device's bound VFs, set its eswitch, bind the same VFs again (also when the set fails)."""
    what = "set eswitch of %s to %s with devlink" % (entry["device"], entry["want"]["mode"])
    unbound = []
    try:
        for vf, driver in entry["vf_drivers"]:
            write_sysfs(params["fs_root"], driver, "unbind", vf)
            unbound.append((vf, driver))
        run_tool(runner, set_argv(entry["device"], entry["before"], entry["want"]), what)
    finally:
        for vf, driver in unbound:
            write_sysfs(params["fs_root"], driver, "bind", vf)


def apply(runner, params, plan):
    """The one place that writes: each device that differs is set in turn, then one read checks them all."""
    done = []
    for entry in plan:
        if not entry["changed"]:
            continue
        try:
            set_one(runner, params, entry)
        except ToolError as exc:
            if done:
                exc.msg += " (already set before it: %s)" % ", ".join(done)
            raise
        done.append(entry["device"])
    devices = read_all(runner)
    for entry in plan:
        if entry["changed"]:
            after = devices.get(entry["device"])
            if after != entry["want"]:
                raise ToolError("set eswitch of %s to %s with devlink failed: read back %s"
                                % (entry["device"], entry["want"]["mode"], after))
            entry["after"] = after


def run_eswitch(runner, params, check_mode):
    check_netdevs(params)
    devices = read_all(runner)
    plan = [plan_entry(params, devices, handle, netdevs, lambda handle: bound_vfs(params["fs_root"], handle))
            for handle, netdevs in resolve(runner, params, devices)]
    changed = any(entry["changed"] for entry in plan)
    if check_mode:
        for entry in plan:
            entry["after"] = entry["want"]  # check mode: the predicted state
    elif changed:
        apply(runner, params, plan)
    return outcome(params, plan, changed)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        mutually_exclusive=MUTUALLY_EXCLUSIVE,
        required_one_of=REQUIRED_ONE_OF,
        supports_check_mode=True,
    )
    run_module(module, "set eswitch", ToolRunner,
               lambda runner: run_eswitch(runner, module.params, module.check_mode),
               lambda result: ["devlink", "-V"], predicts=True)


if __name__ == "__main__":
    main()
