# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: ipsec_offload
short_description: Switch IPsec full (packet) offload of a BlueField on or off in /etc/mellanox/mlnx-bf.conf
version_added: 0.1.0
description:
  - Runs on the BlueField's Arm side. Sets C(IPSEC_FULL_OFFLOAD="yes") or C("no") in C(/etc/mellanox/mlnx-bf.conf)
    and leaves every other line of the file as it is (the assignment is replaced where it is, or appended).
  - The driver reads the file when it starts, so a change needs C(/etc/init.d/openibd restart) (stop C(mlx-regex)
    first) or a reboot (BSP "IPsec Functionality"; docs/hardware-facts.md section 2). This module restarts nothing;
    it says so in RV(restart_required) and RV(reset_required), and the role restarts the driver once.
  - It also reads what the running driver uses, from the MLNX_OFED compat sysfs
    C(/sys/class/net/<uplink>/compat/devlink/ipsec_mode) (C(full) or C(none)) where that exists. When the file is
    right but the driver still runs the other value (a restart that did not happen), the module reports a change and
    a restart again, so a failed restart is repaired by the next run.
author:
  - bluefleet developers (!UNKNOWN)
options:
  full_offload:
    description: True - IPsec full offload on (C(IPSEC_FULL_OFFLOAD="yes")); false - off (C("no")).
    type: bool
    required: true
  path:
    description: The BlueField configuration file, as a path on the machine (under O(fs_root)).
    type: path
    default: /etc/mellanox/mlnx-bf.conf
extends_documentation_fragment:
  - bluefleet.dpu.options.fs_root
attributes:
  check_mode:
    description: Reads the file and the driver's mode and reports what would change; writes nothing.
    support: full
  diff_mode:
    description: The file before and after.
    support: full
  platform:
    description: BlueField Arm OS (BFB / DOCA).
    platforms: posix
    support: full
notes:
  - A missing file is created with the one line (mode 0644); a BlueField OS ships it, so the module warns.
  - Configure IPsec full offload and restart the driver before any TC or OVS flow is offloaded and before
    switchdev flows are set up (docs/hardware-facts.md section 3).
seealso:
  - module: bluefleet.dpu.eswitch
"""

EXAMPLES = r"""
- name: IPsec full offload on (the role restarts the driver when restart_required is driver)
  bluefleet.dpu.ipsec_offload:
    full_offload: true
  register: ipsec

- name: Restart the driver when the module asks for it
  ansible.builtin.command:
    argv: [/etc/init.d/openibd, restart]
  when: ipsec.restart_required == 'driver'
  changed_when: true
"""

RETURN = r"""
before:
  description:
    - The state before the module ran (the same as RV(full_offload) when nothing changed); RV(previous) is its older
      name.
  returned: success
  type: bool
check_mode_prediction:
  description:
    - Only in check mode. True - the resource keys show the state the module predicts after a real run
      (what it would write), not the state before.
  returned: check mode
  type: bool
  sample: true
changed:
  description: True when the module wrote the file (in check mode, would write it). A driver that still runs the
    old mode while the file is right is not a change of this module; it shows as RV(restart_required) C(driver).
  returned: always
  type: bool
conf_file:
  description: The file read and written (O(path) under O(fs_root)).
  returned: always
  type: str
  sample: /etc/mellanox/mlnx-bf.conf
full_offload:
  description: The value in the file after the run (in check mode, as predicted).
  returned: always
  type: bool
previous:
  description: The value in the file before the run (C(IPSEC_FULL_OFFLOAD="yes") is true, anything else false).
  returned: always
  type: bool
driver_ipsec_mode:
  description: What the running driver uses, per uplink, as the compat sysfs shows it before the run (empty when
    the kernel has no such file).
  returned: always
  type: dict
  sample: {p0: none, p1: none}
restart_required:
  description: C(driver) when the driver must be restarted (C(/etc/init.d/openibd restart)) for the file to take
    effect, else C(none).
  returned: always
  type: str
  sample: driver
reset_required:
  description: The same as a reset class of the bluefleet reset planner - C(driver_restart) or C(none).
  returned: always
  type: str
  sample: driver_restart
diff:
  description: The file before and after.
  returned: always
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._ipsec_offload import (
    KEY,
    argument_spec,
    conf_file,
    driver_modes,
    file_value,
    outcome,
    path_problem,
    read_conf,
    render,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import write_file
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    with_change_time,
    without_unasked_diff,
)


def save_conf(module, path, text):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        module.fail_json(msg="set IPsec full offload failed: %s does not exist; is this a BlueField Arm OS? (path "
                             "option: the mlnx-bf.conf of the DPU)" % directory)
    try:
        write_file(path, text, mode=0o644)
    except OSError as exc:
        module.fail_json(msg="set IPsec full offload failed: write %s: %s" % (path, exc))


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    problem = path_problem(params["path"])
    if problem:
        module.fail_json(msg=problem)
    path = conf_file(params["fs_root"], params["path"])
    try:
        existed, before_text = read_conf(path)
    except ToolError as exc:
        module.fail_json(msg=exc.msg)
    want = params["full_offload"]
    previous = file_value(before_text)
    after_text = render(before_text, want)
    file_changes = after_text != before_text if previous != want or not existed else False
    modes = driver_modes(params["fs_root"])
    if file_changes and not module.check_mode:
        if not existed:
            module.warn("%s did not exist; created it with %s only" % (path, KEY))
        save_conf(module, path, after_text)
    result = outcome(path, want, previous, file_changes, modes)
    result["diff"] = {"before": before_text, "after": after_text if file_changes else before_text,
                      "before_header": path, "after_header": path}
    if module.check_mode:
        result["check_mode_prediction"] = True
    module.exit_json(**without_unasked_diff(module, with_change_time(module, result)))


if __name__ == "__main__":
    main()
