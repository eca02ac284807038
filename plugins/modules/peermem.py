#!/usr/bin/python
# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: peermem
short_description: Load nvidia_peermem for GPUDirect RDMA, keep it loaded across reboots, check its registration
version_added: 0.1.0
description:
  - Runs on a GPU host. With O(state=present) makes sure the C(nvidia_peermem) kernel module is loaded (C(lsmod)),
    registered with the kernel's peer-memory interface (the file C(/sys/kernel/mm/memory_peers/nv_mem/version)
    exists) and, with O(persist=true), listed in C(/etc/modules-load.d/nvidia-peermem.conf) so systemd loads it
    at boot.
  - A module that is loaded but not registered (seen after a driver or OFED change, or a pod restart without a
    reboot) is unloaded and loaded again.
  - With O(state=absent) unloads the module and removes the file.
  - Reads the state, loads or unloads once with C(modprobe), writes the file once, reads the state again and fails
    unless it is what was asked for.
  - C(modprobe) failing with C(Invalid argument) (EINVAL) fails the task with the likely cause, an NVIDIA driver
    built against another MOFED/DOCA-OFED than the one running, and the fix.
author:
  - bluefleet developers (!UNKNOWN)
options:
  state:
    description: C(present) loaded, registered and (O(persist)) persistent; C(absent) unloaded and not persistent.
    type: str
    choices: [present, absent]
    default: present
  persist:
    description: With O(state=present), also list the module in the modules-load.d file.
    type: bool
    default: true
  fs_root:
    description:
      - Directory that stands for C(/) when the module reads and writes the modules-load.d file (and reads the
        registration file unless O(sysfs_root) is set). Leave it at C(/) on real machines.
    type: path
    default: /
  sysfs_root:
    description:
      - Directory that stands for C(/) when the module reads the registration file under C(/sys); defaults to
        O(fs_root). A machine whose driver is simulated (the lab's device twin) keeps its C(/sys) elsewhere.
    type: path
  timeout:
    description: Seconds each command may run before it is stopped and the task fails.
    type: int
    default: 60
attributes:
  check_mode:
    description: Reads the state and reports what would change; loads, unloads and writes nothing.
    support: full
  diff_mode:
    description: Before and after of C(loaded), C(registered) and C(persistent).
    support: full
  platform:
    description: Linux GPU hosts with the NVIDIA driver and MOFED/DOCA-OFED.
    platforms: posix
    support: full
notes:
  - Bring-up order for GPUDirect RDMA is MOFED/DOCA-OFED, then the NVIDIA driver built against it, then this module.
seealso:
  - module: bluefleet.dpu.gpu_info
"""

EXAMPLES = r"""
- name: GPUDirect RDMA needs nvidia_peermem
  bluefleet.dpu.peermem:
    state: present

- name: Unload it and stop loading it at boot
  bluefleet.dpu.peermem:
    state: absent
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
  description: Whether the module was loaded, unloaded or reloaded, or the file written or removed.
  returned: always
  type: bool
peermem:
  description: >-
    State after the run: C(loaded) (in lsmod), C(registered) (the registration file exists), C(version) (its
    content, null when absent), C(persistent) (the modules-load.d file lists the module), C(conf_path) and
    C(sysfs_path) (the files read).
  returned: always
  type: dict
  sample: {"loaded": true, "registered": true, "version": "1.1", "persistent": true,
           "conf_path": "/etc/modules-load.d/nvidia-peermem.conf",
           "sysfs_path": "/sys/kernel/mm/memory_peers/nv_mem/version"}
actions:
  description: >-
    What was done (or would be in check mode), in order, among C(load), C(reload), C(unload), C(persist),
    C(unpersist).
  returned: always
  type: list
  elements: str
reset_required:
  description: Always C(none); loading a kernel module takes effect at once.
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
  description: First line of C(modprobe --version), or null.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._peermem import (
    CONF_TEXT,
    MODULE,
    argument_spec,
    plan,
    read_state,
    view,
    wanted,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import write_file
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner, error_reason
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError, run_module

EINVAL_HINT = ("; nvidia_peermem was refused with EINVAL: the NVIDIA driver was most likely built against another "
               "MOFED/DOCA-OFED than the one running (a driver or OFED change without a rebuild). Fix: reinstall or "
               "rebuild the NVIDIA driver after MOFED/DOCA-OFED (bring-up order: OFED, GPU driver, nvidia_peermem), "
               "then reboot or reload the driver and run this again")
MISSING_HINT = ("; the NVIDIA driver package that ships nvidia_peermem (driver >= 470 with MOFED/DOCA-OFED "
                "installed first) is needed")


def modprobe(runner, remove=False):
    argv = ["modprobe", "-r", MODULE] if remove else ["modprobe", MODULE]
    what = "%s %s with modprobe" % ("unload" if remove else "load", MODULE)
    result = runner.run(argv)
    text = result.stdout + result.stderr
    hint = EINVAL_HINT if "Invalid argument" in text else (MISSING_HINT if "not found" in text else "")
    reason = error_reason(result)
    if reason:
        raise ToolError("%s failed: %s%s" % (what, reason, hint), result)
    return result


def write_conf(path):
    write_file(path, CONF_TEXT, mode=0o644, makedirs=True)


def apply(runner, actions, before):
    for action in actions:
        if action == "load":
            modprobe(runner)
        elif action == "reload":
            modprobe(runner, remove=True)
            modprobe(runner)
        elif action == "unload":
            modprobe(runner, remove=True)
        elif action == "persist":
            try:
                write_conf(before["conf_path"])
            except OSError as exc:
                raise ToolError("write %s failed: %s" % (before["conf_path"], exc)) from exc
        elif action == "unpersist":
            try:
                os.remove(before["conf_path"])
            except OSError as exc:
                raise ToolError("remove %s failed: %s" % (before["conf_path"], exc)) from exc


def run_peermem(runner, params, check_mode):
    fs_root = params["fs_root"]
    sysfs_root = params.get("sysfs_root") or fs_root
    before = read_state(runner, fs_root, sysfs_root)
    actions = plan(before, params["state"], params["persist"])
    want = wanted(before, params)
    after = dict(before, **want) if check_mode and actions else before  # check mode: the predicted state
    if actions and not check_mode:
        apply(runner, actions, before)
        after = read_state(runner, fs_root, sysfs_root)
        if view(after) != want:
            if params["state"] == "present" and after["loaded"] and not after["registered"]:
                reason = ("%s is loaded but %s does not exist: NCCL would say 'GPU Direct RDMA Disabled'; check "
                          "dmesg, and that the NVIDIA driver was built against the running MOFED/DOCA-OFED"
                          % (MODULE, after["sysfs_path"]))
            else:
                reason = "read back %r, expected %r" % (view(after), want)
            raise ToolError("set %s %s failed: %s" % (MODULE, params["state"], reason))
    return {
        "changed": bool(actions),
        "actions": actions,
        "peermem": after,
        "reset_required": "none",
        "diff": make_diff(view(before), want if actions else view(before)),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, "set %s" % MODULE, ToolRunner,
               lambda runner: run_peermem(runner, module.params, module.check_mode),
               lambda result: ["modprobe", "--version"], predicts=True)


if __name__ == "__main__":
    main()
