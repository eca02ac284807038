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
  - The eswitch mode is runtime state - it is active at once (RV(reset_required) is C(none)) and lost when the
    driver restarts or the machine reboots; on a BlueField the Arm OS sets switchdev at boot.
author:
  - bluefleet developers (!UNKNOWN)
options:
  device:
    description:
      - The PCI function whose eswitch to set, as C(0000:03:00.0), C(03:00.0) or the devlink handle
        C(pci/0000:03:00.0).
      - Exactly one of O(device) and O(netdev) is required.
    type: str
  netdev:
    description:
      - A netdev of the device instead of O(device) (for example the uplink C(p0)); resolved with
        C(devlink -j port show).
    type: str
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
"""

RETURN = r"""
before:
  description:
    - The state before the module ran (the same as RV(eswitch) when nothing changed); RV(previous) is its older
      name.
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
  returned: always
  type: str
  sample: pci/0000:03:00.0
eswitch:
  description: The eswitch after the run as devlink shows it (in check mode, as predicted).
  returned: always
  type: dict
  sample: {mode: switchdev, inline_mode: none, encap_mode: basic}
previous:
  description: The eswitch before the run.
  returned: always
  type: dict
  sample: {mode: legacy, inline_mode: none, encap_mode: basic}
vfs:
  description: PCI addresses of the device's VFs that were bound to a driver, hence unbound and bound again
    around the mode change (in check mode, that would be); empty when the mode did not change.
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
  description: C(mode), C(inline_mode) and C(encap_mode) before and after.
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
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._devlink import parse_eswitch, parse_port
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import device_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import write_attribute
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    fs_root_spec,
    parse_output,
    run_module,
    run_tool,
    timeout_spec,
)

KEYS = ("mode", "inline_mode", "encap_mode")
DEVLINK_OPTION = {"mode": "mode", "inline_mode": "inline-mode", "encap_mode": "encap-mode"}
_BDF_RE = re.compile(r"^(?:pci/)?(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])$")


def handle_of(device):
    """``03:00.0`` / ``0000:03:00.0`` / ``pci/0000:03:00.0`` -> ``pci/0000:03:00.0``; None when not a PCI address."""
    match = _BDF_RE.match(device.strip())
    if not match:
        return None
    return "pci/%s:%s" % ((match.group(1) or "0000").lower(), match.group(2).lower())


def read_all(runner):
    what = "read eswitch modes with devlink"
    result = run_tool(runner, ["devlink", "-j", "dev", "eswitch", "show"], what)
    return parse_output(parse_eswitch, result, what)["devices"]


def resolve(runner, params, devices):
    """The devlink handle asked for; a device devlink does not list fails here, before anything changes."""
    known = ", ".join(sorted(devices)) or "none"
    if params["device"] is not None:
        handle = handle_of(params["device"])
        if handle is None:
            raise ToolError("set eswitch failed: device %r is not a PCI address; give one like 0000:03:00.0 "
                            "(devlink lists: %s)" % (params["device"], known))
        if handle not in devices:
            raise ToolError("set eswitch failed: no devlink device %s on this machine (devlink lists: %s); "
                            "check the device option" % (handle, known))
        return handle
    what = "find the device of netdev %s with devlink" % params["netdev"]
    result = run_tool(runner, ["devlink", "-j", "port", "show"], what)
    ports = parse_output(parse_port, result, what)["ports"]
    owners = sorted({port["device"] for port in ports.values() if port.get("netdev") == params["netdev"]})
    if not owners:
        names = sorted({port["netdev"] for port in ports.values() if port.get("netdev")})
        raise ToolError("set eswitch failed: netdev %r is not a port of any devlink device (devlink ports: %s); "
                        "check the netdev option" % (params["netdev"], ", ".join(names) or "none"))
    if owners[0] not in devices:
        raise ToolError("set eswitch failed: devlink shows no eswitch for %s (the device of netdev %s)"
                        % (owners[0], params["netdev"]))
    return owners[0]


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


def apply(runner, params, handle, before, want, vfs):
    what = "set eswitch of %s to %s with devlink" % (handle, want["mode"])
    unbound = []
    try:
        for vf, driver in vfs:
            write_sysfs(params["fs_root"], driver, "unbind", vf)
            unbound.append((vf, driver))
        run_tool(runner, set_argv(handle, before, want), what)
    finally:
        for vf, driver in unbound:
            write_sysfs(params["fs_root"], driver, "bind", vf)
    after = read_all(runner).get(handle)
    if after != want:
        raise ToolError("%s failed: read back %s" % (what, after))
    return after


def run_eswitch(runner, params, check_mode):
    devices = read_all(runner)
    handle = resolve(runner, params, devices)
    before = devices[handle]
    want = dict(before)
    for key in KEYS:
        if params[key] is not None:
            want[key] = params[key]
    changed = want != before
    vfs = bound_vfs(params["fs_root"], handle) if want["mode"] != before["mode"] else []
    after = want if check_mode and changed else before  # check mode: the predicted state
    if changed and not check_mode:
        after = apply(runner, params, handle, before, want, vfs)
    return {
        "changed": changed,
        "device": handle,
        "eswitch": after,
        "before": before,
        "previous": before,
        "vfs": [vf for vf, dummy in vfs],
        "reset_required": "none",
        "diff": make_diff(before, want if changed else before),
    }


def main():
    module = AnsibleModule(
        argument_spec={
            "device": device_spec(),
            "netdev": {"type": "str"},
            "mode": {"type": "str", "choices": ["legacy", "switchdev"], "required": True},
            "inline_mode": {"type": "str", "choices": ["none", "link", "network", "transport"]},
            "encap_mode": {"type": "str", "choices": ["none", "basic"]},
            "fs_root": fs_root_spec(),
            "timeout": timeout_spec(60),
        },
        mutually_exclusive=[("device", "netdev")],
        required_one_of=[("device", "netdev")],
        supports_check_mode=True,
    )
    run_module(module, "set eswitch", ToolRunner,
               lambda runner: run_eswitch(runner, module.params, module.check_mode),
               lambda result: ["devlink", "-V"], predicts=True)


if __name__ == "__main__":
    main()
