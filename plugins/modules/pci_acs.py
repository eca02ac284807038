#!/usr/bin/python
# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: pci_acs
short_description: Disable PCIe Access Control Services on the bridges between GPUs and NICs, and keep it so at boot
version_added: 0.1.0
description:
  - GPUDirect RDMA (GPU to NIC peer-to-peer) goes through the PCIe bridges between the GPU and the NIC. With ACS
    redirection on, those transfers are sent up to the root complex, which slows them down or stops them; NCCL's
    troubleshooting guide asks for ACS off on bare-metal systems.
  - Reads every bridge's ACS Control (C(lspci -D -vvv), the C(ACSCtl) line), writes C(0000) with
    C(setpci -s SLOT ECAP_ACS+6.w=0000) on each bridge where it is not zero, reads again and fails unless all are
    zero.
  - The register is reset by every reboot. With O(persist=true) the module writes a systemd unit
    (C(/etc/systemd/system/bluefleet-pci-acs.service)) that runs the same C(setpci) commands at boot; enabling the
    unit is left to the caller (the role does it with systemd).
  - O(bridges) limits the change to the named bridges; naming a device that is not a bridge with ACS fails before
    anything changes.
author:
  - bluefleet developers (!UNKNOWN)
options:
  bridges:
    description: Bridges to manage (C(0000:17:00.0) or C(17:00.0)). Empty means every PCI bridge with ACS.
    type: list
    elements: str
    default: []
  persist:
    description: Write the systemd unit that disables ACS on these bridges at boot.
    type: bool
    default: true
  setpci_path:
    description: The path of setpci in the unit's C(ExecStart) lines.
    type: path
    default: /usr/bin/setpci
  timeout:
    description: Seconds each command may run before it is stopped and the task fails.
    type: int
    default: 60
extends_documentation_fragment:
  - bluefleet.dpu.options.fs_root
attributes:
  check_mode:
    description: Reads and reports the bridges it would change and the unit it would write; changes nothing.
    support: full
  diff_mode:
    description: ACS Control per bridge and the unit file, before and after.
    support: full
  platform:
    description: Linux GPU hosts with pciutils.
    platforms: posix
    support: full
notes:
  - Run it as root; the change takes effect at once (RV(reset_required) is C(none)).
seealso:
  - module: bluefleet.dpu.peermem
"""

EXAMPLES = r"""
- name: ACS off on every bridge, also after a reboot
  bluefleet.dpu.pci_acs:

- name: Only the two switch ports above GPU0 and its NIC
  bluefleet.dpu.pci_acs:
    bridges: ["0000:17:00.0", "0000:e1:00.0"]
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
  description: Whether a bridge was written or the unit file changed.
  returned: always
  type: bool
bridges:
  description: Bridge address -> ACS Control word after the run (4 hex digits, C(0000) is off).
  returned: always
  type: dict
  sample: {"0000:17:00.0": "0000"}
changed_bridges:
  description: Bridges written (or that would be in check mode).
  returned: always
  type: list
  elements: str
unit_path:
  description: The systemd unit written (null without O(persist)).
  returned: always
  type: str
reset_required:
  description: Always C(none).
  returned: always
  type: str
diff:
  description: Before and after (diff mode).
  returned: when changed
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
tool_version:
  description: First line of C(lspci --version), or null.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._pci_acs import (
    REGISTER,
    argument_spec,
    plan,
    read_acs,
    read_unit,
    unit_path_of,
    words,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import write_file
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError, run_module, run_tool


def _write_file(path, text):
    try:
        write_file(path, text, mode=0o644, makedirs=True)
    except OSError as exc:
        raise ToolError("write %s failed: %s" % (path, exc)) from exc


def run_acs(runner, params, check_mode):
    devices = read_acs(runner)
    unit_path = unit_path_of(params)
    p = plan(devices, params, read_unit(unit_path) if unit_path else None)
    slots, before, to_write = p["slots"], p["before"], p["to_write"]
    unit_before, unit_after, unit_change = p["unit_before"], p["unit_after"], p["unit_change"]
    after = before
    if (to_write or unit_change) and not check_mode:
        for slot in to_write:
            run_tool(runner, ["setpci", "-s", slot, "%s=0000" % REGISTER],
                     "disable PCIe ACS on %s with setpci" % slot, hint="; run it as root on the GPU host")
        if unit_change:
            _write_file(unit_path, unit_after)
        after = words(read_acs(runner), slots)
        left = sorted(s for s in slots if after.get(s) != "0000")
        if left:
            raise ToolError("disable PCIe ACS failed: ACS control still on after setpci on %s (%s)"
                            % (", ".join(left), ", ".join("%s=%s" % (s, after.get(s)) for s in left)))
    wanted_view = dict.fromkeys(slots, "0000")
    diff = make_diff({"acs_ctl": before, "unit": unit_before or ""},
                     {"acs_ctl": wanted_view, "unit": unit_after if unit_path else ""})
    return {"changed": bool(to_write or unit_change), "bridges": wanted_view if check_mode and to_write else after,
            "changed_bridges": to_write, "unit_path": unit_path, "reset_required": "none", "diff": diff}


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, "disable PCIe ACS", ToolRunner,
               lambda runner: run_acs(runner, module.params, module.check_mode),
               lambda result: ["lspci", "--version"], predicts=True)


if __name__ == "__main__":
    main()
