# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_info
short_description: Facts about the NVIDIA GPUs of a GPU host and how they reach the NICs
version_added: 0.1.0
description:
  - GPUs with driver and CUDA version and persistence mode (C(nvidia-smi)), the GPU-NIC topology
    matrix and, per GPU, the closest NIC (C(nvidia-smi topo -m)), and whether C(nvidia_peermem) is
    loaded (C(lsmod)), registered with the kernel's peer-memory interface
    (C(/sys/kernel/mm/memory_peers/nv_mem/version)) and listed in
    C(/etc/modules-load.d/nvidia-peermem.conf).
  - On request (section C(acs)), the PCIe ACS Control of every PCI bridge and the boot-time ACS unit, read as
    M(bluefleet.dpu.pci_acs) reads them.
  - Read-only. Each command runs once; every command run is returned in RV(cmd).
  - A tool that is not installed is reported in RV(tools_missing) and in its section
    (C(available=false) with the reason), not as a failure. A machine without GPUs returns an empty
    device list and a message. A tool that fails or prints output the parsers cannot read fails the
    task with the command, its exit status and its output.
author:
  - bluefleet developers (!UNKNOWN)
options:
  filter:
    description:
      - Sections to gather. C(gpus) GPUs, driver and CUDA version, persistence mode. C(topology) the
        C(nvidia-smi topo -m) matrix and the closest NIC of each GPU. C(peermem) nvidia_peermem loaded,
        registered and listed in the modules-load.d file (under O(files_root)), as M(bluefleet.dpu.peermem)
        reads them. C(tool_versions) the version of each tool used.
      - C(acs) the ACS Control of every PCI device with the ACS capability (C(lspci -D -vvv)) and the unit
        C(/etc/systemd/system/bluefleet-pci-acs.service) under O(files_root), as M(bluefleet.dpu.pci_acs)
        reads them, so that the filter P(bluefleet.dpu.acs_plan#filter) answers pci_acs's check from this read.
        An lspci that is missing, fails or prints what the parser cannot read makes the section unavailable;
        the task does not fail. Not in the default; give it by name.
    type: list
    elements: str
    choices: [gpus, topology, peermem, tool_versions, acs]
    default: [gpus, topology, peermem, tool_versions]
  files_root:
    description:
      - The directory that stands for C(/) for the files the roles write that the sections C(peermem)
        (C(/etc/modules-load.d/nvidia-peermem.conf)) and C(acs) (the unit) read - M(bluefleet.dpu.peermem)'s
        and M(bluefleet.dpu.pci_acs)' O(bluefleet.dpu.pci_acs#module:fs_root).
      - Defaults to O(fs_root), under which the sections read C(/sys).
    type: path
  timeout:
    description: Seconds each command may run before it is stopped and the task fails.
    type: int
    default: 120
extends_documentation_fragment:
  - bluefleet.dpu.options.fs_root
attributes:
  check_mode:
    description: The module only reads; it runs the same read-only commands in check mode.
    support: full
  diff_mode:
    description: Nothing changes, so there is nothing to diff.
    support: none
  platform:
    description: Runs on Linux GPU hosts with the NVIDIA driver installed.
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
  - The closest NIC is the one whose link to the GPU ranks first in C(PIX), C(PXB), C(PHB), C(NODE),
    C(SYS) (nvidia-smi's legend, nearest first); on a tie the NIC listed first wins.
seealso:
  - module: bluefleet.dpu.dpu_info
"""

EXAMPLES = r"""
- name: Gather GPU facts
  bluefleet.dpu.gpu_info:
  register: gpu

- name: GPUDirect RDMA needs nvidia_peermem registered
  ansible.builtin.assert:
    that: gpu.peermem.registered
    fail_msg: nvidia_peermem is not registered; load it with modprobe nvidia_peermem.

- name: Only the topology
  bluefleet.dpu.gpu_info:
    filter: [topology]
  register: gpu_topo
"""

RETURN = r"""
changed:
  description: Always false; the module only reads.
  returned: always
  type: bool
filter:
  description: The sections gathered.
  returned: always
  type: list
  elements: str
msg:
  description: Why the GPU list is empty (no GPU, or nvidia-smi missing).
  returned: when no GPU was found
  type: str
  sample: "no GPU found: nvidia-smi says No devices were found"
gpus:
  description: >-
    C(available) (false with C(reason) when nvidia-smi is missing), C(driver_version), C(cuda_version)
    and C(devices), one per GPU with C(index), C(name), C(bus_id), C(memory_total_mib),
    C(persistence_mode) (C(On) / C(Off) as printed) and, when the topology was gathered,
    C(closest_nic) (see RV(topology.closest_nic)).
  returned: when C(gpus) is in O(filter)
  type: dict
  sample: {"available": true, "driver_version": "550.127.08", "cuda_version": "12.4", "devices": []}
topology:
  description: The GPU-NIC topology from C(nvidia-smi topo -m).
  returned: when C(topology) is in O(filter)
  type: dict
  contains:
    available:
      description: False with C(reason) when nvidia-smi is missing.
      type: bool
    matrix:
      description: Row -> column -> link type as printed (C(X), C(PIX), C(NODE), C(NV12) ...).
      type: dict
    nics:
      description: NIC label -> device name from the NIC legend (C(NIC0) -> C(mlx5_0)).
      type: dict
    cpu_affinity:
      description: GPU -> CPU affinity text.
      type: dict
    numa_affinity:
      description: GPU -> NUMA affinity text.
      type: dict
    closest_nic:
      description: >-
        GPU label -> C(nic) (label), C(device) (from the legend, null if absent), C(link); null when the GPU
        has no NIC column.
      type: dict
peermem:
  description: >-
    C(available) (false with C(reason) when lsmod is missing; C(registered), C(version) and C(persistent)
    are still read), C(loaded) (nvidia_peermem in lsmod), C(registered) (the nv_mem version file exists),
    C(version) (its content, stripped; null when absent), C(sysfs_path) (the file read) and C(sysfs_root)
    (the O(fs_root) it was read under), C(persistent) (the modules-load.d file lists the module; null with
    C(conf_error) when the file could not be read), C(conf_path) and C(conf_root) (the O(files_root) it was
    read under).
  returned: when C(peermem) is in O(filter)
  type: dict
  sample: {"available": true, "loaded": true, "registered": true, "version": "1.1",
           "sysfs_path": "/sys/kernel/mm/memory_peers/nv_mem/version", "sysfs_root": "/", "persistent": true,
           "conf_path": "/etc/modules-load.d/nvidia-peermem.conf", "conf_root": "/"}
acs:
  description: >-
    C(available) (false with C(reason) when lspci is missing, fails or cannot be parsed), C(devices) (full PCI
    slot to C(class) and C(acs), the ACS capability as the lspci parser reads it - C(ctl) flags and C(ctl_word);
    null without the capability), C(root) (the O(files_root) the unit was read under), C(unit_path) and C(unit)
    (its text, null when missing; C(unit_error) when it could not be read).
  returned: when C(acs) is in O(filter)
  type: dict
read_at:
  description: When the read began, in seconds since the epoch by the node's clock. A bluefleet module that changes
    the node later sets the fact C(bluefleet_changed_at) to a later time, which tells a play that this read no longer
    holds.
  returned: always
  type: float
tool_versions:
  description: >-
    Tool -> version text. C(nvidia-smi) is the NVIDIA-SMI version printed in the header of its table
    (no extra command); C(lsmod) and C(lspci) are null (they are not asked for a version).
  returned: when C(tool_versions) is in O(filter)
  type: dict
tools_missing:
  description: Tools the module needed and did not find on PATH.
  returned: always
  type: list
  elements: str
cmd:
  description: Every command run, in order, as argv lists.
  returned: always
  type: list
  elements: list
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._gpu_read import (
    DEFAULT_SECTIONS,
    SECTIONS,
    GpuInfo,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    fs_root_spec,
    nonpositive_seconds,
    timeout_spec,
)

# The read itself is module_utils.domain._gpu_read's: dpu_info reads the GPUs with it too (option gpu_filter), so that
# preflight reads a GPU host's cards and GPUs in one module run.


def argument_spec():
    return {
        "filter": {"type": "list", "elements": "str", "choices": list(SECTIONS), "default": list(DEFAULT_SECTIONS)},
        "fs_root": fs_root_spec(),
        "files_root": {"type": "path"},
        "timeout": timeout_spec(120),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    problem = nonpositive_seconds(module.params, "gather GPU facts")
    if problem:
        module.fail_json(msg=problem)
    runner = ToolRunner(timeout=module.params["timeout"])
    info = GpuInfo(runner, module.params["filter"], module.params["fs_root"], module.params["files_root"])
    try:
        result = info.gather()
    except ToolError as exc:
        module.fail_json(msg=exc.msg, cmd_list=[list(a) for a in runner.cmd], **exc.details())
    module.exit_json(**result)


if __name__ == "__main__":
    main()
