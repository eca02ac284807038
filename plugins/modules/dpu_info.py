# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: dpu_info
short_description: Facts about the BlueField DPUs and ConnectX NICs of the machine it runs on
version_added: 0.1.0
description:
  - Lists every BlueField / ConnectX card the MFT tools see on the machine the module runs on, a GPU
    host (x86 side) or a DPU (its Arm side), with what the tools say about it.
  - Per card, from C(mst status -v), C(flint -d DEV q), C(mlxconfig -d DEV -e q) and
    C(mlxprivhost -d DEV q), and once per machine C(devlink dev eswitch show), C(bfver),
    C(mlxbf-bootctl), C(rdma link show) and the rshim C(misc) files; when asked for, C(mlxfwreset -d DEV q).
    Each tool runs at most once per card.
  - Read-only. Every command run is returned in RV(cmd); the version each tool reports in RV(tool_versions).
  - A tool that is not installed is reported in RV(tools_missing) and in the section it feeds
    (C(available=false) with the reason), not as a failure. A machine without cards returns an empty
    RV(devices) list and a message. A tool that fails or prints output the parsers cannot read fails
    the task with the command, its exit status and its output.
author:
  - bluefleet developers (!UNKNOWN)
options:
  filter:
    description:
      - Sections to gather. Device discovery with C(mst status -v) (type, PCI and mst paths, netdevs,
        RDMA devices) always runs.
      - C(firmware) flashed and running firmware, PSID, pending firmware reset (C(flint q)).
      - C(nvconfig) non-volatile configuration with Default, Current and Next Boot values, part
        number (C(mlxconfig -e q)). C(mode) DPU or NIC mode for Current and Next Boot (also from
        C(mlxconfig); asking for C(mode) alone runs it once and leaves out the parameter table).
      - C(reset_levels) the firmware reset levels the card supports (C(mlxfwreset q)) - level 3 and sync 1, as
        M(bluefleet.dpu.fw_reset) plans with them. Not in the default; give it by name.
      - C(eswitch) devlink eswitch mode per PCI function. C(privilege) host privilege level
        (C(mlxprivhost q), DPU side only). C(rshim) rshim devices (host side only).
      - C(dpu_os) BFB / DOCA / OS version (C(bfver), DPU side only). C(secure_boot) secure-boot
        lifecycle (C(mlxbf-bootctl), DPU side only). C(tool_versions) the version of each tool used.
      - C(rdma_links) the state of every RDMA port (C(rdma link show), either side), summed up as
        M(bluefleet.dpu.rdma_link_info) does, so that one run reads the versions and the links (the rolling
        upgrade's health gate). Not in the default; give it by name.
      - C(tools) the firmware, IPsec and BFB tools the node has and whether they meet O(require), reported as
        M(bluefleet.dpu.tools_info) reports them (an unmet requirement is listed in the C(missing) of RV(tools); it
        does not fail the task). Not in the default; give it by name.
      - C(roce) the lossless RoCE settings of every RDMA netdev, read as M(bluefleet.dpu.roce_qos) reads them
        (C(ibdev2netdev) and C(show_gids) once, then C(mlnx_qos -i), C(cma_roce_mode), C(cma_roce_tos) and the
        mlx5 sysfs of each netdev), for the netdevs and the address of O(roce_netdevs) and O(roce_address), so that
        the filter P(bluefleet.dpu.roce_plan#filter) answers roce_qos's check from this read. A netdev that cannot
        be read gets its error; the task does not fail. Not in the default; give it by name.
      - C(files) the state of each file of O(files) as M(bluefleet.dpu.files) compares it (the target of a
        symbolic link; a regular file's sha256 and mode), for the filter P(bluefleet.dpu.files_plan#filter), and of
        each file of O(file_lines) the lines it holds, for the filter P(bluefleet.dpu.lineinfile_plan#filter). Not in
        the default; give it by name.
      - C(ipsec_offload) what M(bluefleet.dpu.ipsec_offload) reads (DPU side) - whether C(/etc/mellanox/mlnx-bf.conf)
        exists, the value of its last C(IPSEC_FULL_OFFLOAD) assignment and the driver's IPsec mode of each uplink
        (C(/sys/class/net/*/compat/devlink/ipsec_mode)), under O(fs_root) - for the filter
        P(bluefleet.dpu.ipsec_offload_plan#filter). Not in the default; give it by name.
      - C(doca_services) what M(bluefleet.dpu.doca_service) reads (DPU side) for every service of its catalogue - the
        state of the pod manifest in O(doca_manifest_dir) and of each file in the service's catalogue configuration
        folder (a regular file's sha256), under O(files_root), and the service's pod as the module finds it (one
        C(crictl pods -o json) and one C(crictl ps -a -o json) for all of them) - for the filter
        P(bluefleet.dpu.doca_service_plan#filter). Where crictl is missing or fails, the pods are unavailable (with
        the reason) and the files are read all the same. Not in the default; give it by name.
    type: list
    elements: str
    choices: [firmware, nvconfig, mode, reset_levels, eswitch, privilege, rshim, dpu_os, secure_boot, tool_versions,
              rdma_links, tools, roce, files, ipsec_offload, doca_services]
    default: [firmware, nvconfig, mode, eswitch, privilege, rshim, dpu_os, secure_boot, tool_versions]
  require:
    description:
      - What the section C(tools) checks, as M(bluefleet.dpu.tools_info)'s O(bluefleet.dpu.tools_info#module:require)
        (C(firmware), C(mst), C(ipsec_packet_offload), C(bfb_install)). Only with C(tools) in O(filter).
    type: list
    elements: str
    choices: [firmware, mst, ipsec_packet_offload, bfb_install]
    default: []
  roce_netdevs:
    description: The netdevs the section C(roce) reads, as M(bluefleet.dpu.roce_qos)'s
      O(bluefleet.dpu.roce_qos#module:netdevs) with O(bluefleet.dpu.roce_qos#module:rdma_facts); empty - every netdev
      C(ibdev2netdev) lists.
    type: list
    elements: str
    default: []
  roce_address:
    description: The address that picks the RoCE GID index in the section C(roce), as M(bluefleet.dpu.roce_qos)'s
      O(bluefleet.dpu.roce_qos#module:address).
    type: str
    default: ''
  eswitch_ports:
    description:
      - With C(eswitch) in O(filter), also read C(devlink -j port show) once and give each card's C(eswitch) section
        C(ports) - which netdev is a port of which of the card's PCI functions, as M(bluefleet.dpu.eswitch) resolves
        its O(bluefleet.dpu.eswitch#module:netdevs) - so that the filter P(bluefleet.dpu.eswitch_plan#filter) answers
        eswitch's check from this read.
    type: bool
    default: false
  files:
    description: The files the section C(files) reads, as the machine sees them (absolute), under O(files_root).
    type: list
    elements: path
    default: []
  file_lines:
    description:
      - File (as the machine sees it, absolute) -> lines. The section C(files) reads each of these files too, and
        tells which of the lines it holds as M(ansible.builtin.lineinfile) with only
        O(ansible.builtin.lineinfile#module:line) leaves it alone (its last line equal to one, the end of line aside,
        is that line and a newline).
    type: dict
    default: {}
  files_root:
    description: The directory that stands for C(/) for O(files) and O(file_lines) (M(bluefleet.dpu.files)'
      O(bluefleet.dpu.files#module:fs_root)), and for the files the section C(doca_services) reads
      (M(bluefleet.dpu.doca_service)'s O(bluefleet.dpu.doca_service#module:fs_root)).
    type: path
    default: /
  doca_manifest_dir:
    description: The kubelet's static-pod folder the section C(doca_services) reads the manifests in, as the DPU sees
      it (M(bluefleet.dpu.doca_service)'s O(bluefleet.dpu.doca_service#module:manifest_dir)).
    type: path
    default: /etc/kubelet.d
  gpu_filter:
    description:
      - On a GPU host, also read its GPUs in the same run, these sections of M(bluefleet.dpu.gpu_info) (its
        O(bluefleet.dpu.gpu_info#module:filter)); returned as RV(gpu_info). One module run then answers for a GPU
        host's cards and GPUs (preflight's read).
      - Empty (the default) reads no GPU.
    type: list
    elements: str
    choices: [gpus, topology, peermem, tool_versions, acs]
    default: []
  gpu_files_root:
    description:
      - The directory that stands for C(/) for the files the GPU sections read
        (M(bluefleet.dpu.gpu_info)'s O(bluefleet.dpu.gpu_info#module:files_root)).
      - Defaults to O(fs_root).
    type: path
  timeout:
    description: Seconds each command may run before it is stopped and the task fails.
    type: int
    default: 120
extends_documentation_fragment:
  - bluefleet.dpu.options.side
  - bluefleet.dpu.options.fs_root
attributes:
  check_mode:
    description: The module only reads; it runs the same read-only commands in check mode.
    support: full
  diff_mode:
    description: Nothing changes, so there is nothing to diff.
    support: none
  platform:
    description: Runs on Linux hosts and on BlueField Arm systems with MFT installed.
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
seealso:
  - module: bluefleet.dpu.gpu_info
"""

EXAMPLES = r"""
- name: Gather everything about the cards
  bluefleet.dpu.dpu_info:
  register: dpu

- name: Firmware and mode only
  bluefleet.dpu.dpu_info:
    filter: [firmware, mode]
  register: dpu_fw

- name: The firmware and the RDMA links in one run (a health check after a reset)
  bluefleet.dpu.dpu_info:
    filter: [firmware, rdma_links]
  register: dpu_health

- name: The firmware and the reset levels fw_reset would plan with
  bluefleet.dpu.dpu_info:
    filter: [firmware, reset_levels]
  register: dpu_reset

- name: Stop when a card waits for a firmware reset
  ansible.builtin.assert:
    that: dpu.devices | selectattr('pending_reset.required') | list | length == 0
    fail_msg: A card runs older firmware or configuration than it has stored; reset it first.
"""

RETURN = r"""
changed:
  description: Always false; the module only reads.
  returned: always
  type: bool
side:
  description: The side the module ran on, C(host) or C(dpu).
  returned: always
  type: str
  sample: dpu
filter:
  description: The sections gathered.
  returned: always
  type: list
  elements: str
msg:
  description: Why RV(devices) is empty (no card found, or C(mst) missing).
  returned: when no card was found
  type: str
  sample: "no BlueField or ConnectX device found by mst status -v"
devices:
  description: >-
    One entry per card: the PCI functions of one PCI device (physical functions and SR-IOV VFs) grouped,
    sorted by PCI address.
  returned: always
  type: list
  elements: dict
  contains:
    mst:
      description: >-
        mst device of the card's first function, the C(-d) argument the tools are given; its PCI address
        when mst prints C(NA) (mst driver not loaded).
      type: str
      sample: /dev/mst/mt41692_pciconf0
    device_type:
      description: Device type as C(mst status -v) prints it (null when it prints C(NA)).
      type: str
      sample: BlueField3(rev:1)
    bluefield:
      description: True for a BlueField (the device type starts with C(BlueField)).
      type: bool
    pci:
      description: PCI address of the first function as C(mst status -v) prints it.
      type: str
      sample: "03:00.0"
    numa:
      description: NUMA node of the first function (C(-1) when none).
      type: int
    functions:
      description: The card's PCI functions, C(mst), C(pci), C(rdma), C(netdevs), C(numa) each, sorted by PCI address.
      type: list
      elements: dict
    netdevs:
      description: All netdevs of the card, in function order.
      type: list
      elements: str
      sample: [pf0hpf, en3f0pf0sf0, p0, p1, pf1hpf, en3f1pf1sf0]
    rdma_devices:
      description: RDMA devices of the card, in function order.
      type: list
      elements: str
      sample: [mlx5_0, mlx5_1]
    psid:
      description: PSID of the flashed firmware (C(firmware) section), else null.
      type: str
      sample: MT_0000000998
    part_number:
      description: Part number as C(mlxconfig) prints it in C(Name:) (C(nvconfig) or C(mode) section), else null.
      type: str
      sample: 900-9D3B6-00CV-A_Ax
    description:
      description: Board description as C(mlxconfig) prints it, else null.
      type: str
    firmware:
      description: >-
        C(available) (false with C(reason) when flint is missing), C(flashed) (version on flash),
        C(running) (the running version; equal to C(flashed) when flint prints no running line),
        C(pending_reset) (bool), C(psid), C(product_version), C(release_date), C(image_type),
        C(security_attributes), C(base_guid), C(base_mac), C(rom_info) (list of C(type), C(version), C(cpu)).
      type: dict
      returned: when C(firmware) is in O(filter)
    nvconfig:
      description: >-
        C(available) and C(reason) as above, C(params) (NAME -> C(default), C(current), C(next_boot)
        as C(mlxconfig) prints them, e.g. C(EMBEDDED_CPU(1))) and C(pending) (names whose Next Boot
        differs from Current).
      type: dict
      returned: when C(nvconfig) is in O(filter)
    mode:
      description: >-
        C(available), C(current) and C(next_boot), each C(dpu), C(nic), C(separated_host) or null
        (a BlueField whose configuration lacks C(INTERNAL_CPU_MODEL)). A ConnectX is always C(nic).
        DPU mode is C(INTERNAL_CPU_MODEL=EMBEDDED_CPU(1)) with C(INTERNAL_CPU_OFFLOAD_ENGINE) enabled (0) or absent.
      type: dict
      returned: when C(mode) is in O(filter)
    reset_levels:
      description: >-
        C(available) (false with C(reason) when neither C(mlxfwreset) nor mstflint's C(mstfwreset) is on PATH),
        C(tool) (the program that answered, C(mlxfwreset) or C(mstfwreset); absent when unavailable),
        C(level3) (reset level 3, driver restart and PCI reset, is supported) and C(sync1) (reset sync 1, the
        driver as owner, is supported), both false when unavailable; what M(bluefleet.dpu.fw_reset) reads with
        C(mlxfwreset -d DEV q) to plan a reset. mstfwreset is given the card's PCI address, mlxfwreset its C(mst).
      type: dict
      returned: when C(reset_levels) is in O(filter)
      sample: {"available": true, "tool": "mlxfwreset", "level3": true, "sync1": true}
    eswitch:
      description: >-
        C(available), C(reason), C(functions) (PCI address with domain -> C(mode), C(inline_mode),
        C(encap_mode) from devlink; functions devlink does not list are absent). With O(eswitch_ports), C(ports)
        (netdev -> devlink handle, C(pci/0000:03:00.0), of the card's function whose port it is, from
        C(devlink -j port show)), or C(ports=null) and C(ports_reason) when that read failed.
      type: dict
      returned: when C(eswitch) is in O(filter)
    privilege:
      description: >-
        C(available), C(reason) (e.g. host side), C(level) (C(PRIVILEGED) or C(RESTRICTED)),
        C(host_index) (null unless printed) and C(port_functions) (C(disable_rshim) ... -> C(TRUE) / C(FALSE)
        as printed).
      type: dict
      returned: when C(privilege) is in O(filter)
    pending_reset:
      description: >-
        C(required) (bool), C(firmware) (flashed differs from running), C(nvconfig) (names of
        parameters whose Next Boot differs from Current). Built from the sections gathered.
      type: dict
      returned: always
rshim:
  description: >-
    Host side: C(available), C(reason), C(devices) (one per C(/dev/rshimN): C(name), C(path),
    C(fields) and C(log) as the rshim-misc parser returns them). DPU side: C(available=false).
  returned: when C(rshim) is in O(filter)
  type: dict
dpu_os:
  description: >-
    DPU side: C(available), C(release) (OS release / BFB bundle), C(doca_version), C(bundle_version),
    C(os), C(atf_version), C(uefi_version), C(bsp_version), C(boot_device) from C(bfver). Host side: C(available=false).
  returned: when C(dpu_os) is in O(filter)
  type: dict
secure_boot:
  description: >-
    DPU side: C(available), C(lifecycle_state), C(secured), C(primary), C(backup) and the other fields
    from C(mlxbf-bootctl). Host side: C(available=false).
  returned: when C(secure_boot) is in O(filter)
  type: dict
rdma_links:
  description: >-
    C(available) (false with C(reason) when C(rdma) is missing), C(links) (one entry per port as
    C(rdma link show) lists it - C(ibdev), C(port), C(state), C(physical_state), C(netdev) and any other key
    printed), C(all_active) (at least one port, and every port C(ACTIVE)), C(down) (the ports not C(ACTIVE), as
    C(DEV/PORT STATE) strings) and C(missing) (always empty here), as M(bluefleet.dpu.rdma_link_info) returns them.
  returned: when C(rdma_links) is in O(filter)
  type: dict
  sample: {"available": true, "all_active": true, "down": [], "missing": [],
           "links": [{"ibdev": "mlx5_0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "p0"}]}
tool_versions:
  description: >-
    Tool name -> the first line its version option printed (C(mst version), C(flint --version),
    C(mlxconfig --version), C(mlxprivhost -v), C(mlxfwreset --version), C(devlink -V), C(rdma -V)), or null
    when the tool has no version option, is missing or the version query failed. Only tools this run used are listed.
  returned: when C(tool_versions) is in O(filter)
  type: dict
  sample: {"mst": "mst, mft 4.30.0-139, built on Oct 10 2024, 09:51:39. Git SHA Hash: N/A", "bfver": null}
tools:
  description: >-
    What M(bluefleet.dpu.tools_info) returns, C(changed) and C(cmd) left out - C(firmware_tools), C(tools) (one
    entry per tool family), C(ipsec_packet_offload), C(missing) (each requirement of O(require) not met, with what
    to install; empty when all are met) and C(tool_versions).
  returned: when C(tools) is in O(filter)
  type: dict
  sample: {"firmware_tools": "mft", "ipsec_packet_offload": true, "missing": [],
           "tools": {"mft": {"present": true, "path": "/usr/bin/flint", "version": "4.30.1-8", "note": null}},
           "tool_versions": {"mft": "4.30.1-8"}}
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
gpu_info:
  description:
    - The GPU read that O(gpu_filter) asked for, with the keys M(bluefleet.dpu.gpu_info) returns (its RETURN) but
      C(changed) - C(filter), C(read_at), the sections, C(tools_missing) and C(cmd) (the GPU read's commands; RV(cmd)
      lists the card read's).
  returned: when O(gpu_filter) is not empty
  type: dict
  sample: {"filter": ["gpus", "peermem"], "read_at": 1796626152.7,
           "gpus": {"available": true, "driver_version": "550.127.08", "cuda_version": "12.4", "devices": []},
           "peermem": {"available": true, "loaded": true, "registered": true}, "tools_missing": [], "cmd": []}
read_at:
  description: When the read began, in seconds since the epoch by the node's clock. A bluefleet module that changes
    the node later sets the fact C(bluefleet_changed_at) to a later time, which tells a play that this read no longer
    holds.
  returned: always
  type: float
roce:
  description: The section C(roce) - C(available) (false with C(reason) when the RDMA read failed), C(asked) (the
    netdevs, address, C(fs_root) and port the read was made for), C(rdma) (M(bluefleet.dpu.rdma_info)'s keys), and
    C(netdevs), netdev to C(ibdev), C(port) and C(settings) (the raw values roce_qos compares) or C(error).
  returned: when C(roce) is in O(filter)
  type: dict
files:
  description: The section C(files) - C(available), C(root), and C(paths), each path of O(files) and O(file_lines) to
    C(link), C(file), C(sha256) and C(mode), or C(error); a path of O(file_lines) also to C(has_lines), the lines of
    it the file holds.
  returned: when C(files) is in O(filter)
  type: dict
ipsec_offload:
  description: The section C(ipsec_offload) - C(available) (false with C(reason) when mlnx-bf.conf cannot be read, as
    M(bluefleet.dpu.ipsec_offload) would fail), C(root) (O(fs_root)), C(path) (C(/etc/mellanox/mlnx-bf.conf)),
    C(exists), C(value) (the value of the file's last C(IPSEC_FULL_OFFLOAD) assignment, quotes and comment removed;
    null when it has none) and C(driver_ipsec_mode) (uplink -> C(full) or C(none); empty when the kernel has no such
    file).
  returned: when C(ipsec_offload) is in O(filter)
  type: dict
  sample: {"available": true, "root": "/", "path": "/etc/mellanox/mlnx-bf.conf", "exists": true, "value": "yes",
           "driver_ipsec_mode": {"p0": "full", "p1": "full"}}
doca_services:
  description:
    - The section C(doca_services) - C(available) (always true, the files are read in any case), C(root)
      (O(files_root)), C(manifest_dir) (O(doca_manifest_dir)), C(services) and C(pods).
    - C(services) - each service of M(bluefleet.dpu.doca_service)'s catalogue (C(telemetry), C(hbn), C(firefly),
      C(snap)) to C(manifest_path) (as the DPU sees it), C(manifest) (its C(link), C(file), C(sha256) and C(mode), as
      the section C(files) gives them; null when there is nothing at that path; C(error) when it could not be read),
      C(config_dir) (the catalogue's folder) and C(config_files) (each entry of that folder to its state, as
      C(manifest); empty when the folder is missing), or C(config_error) when the folder could not be listed.
    - C(pods) - C(available) (false with C(reason) where crictl is missing, fails or prints what its parser does not
      know) and C(services), each service to its pod as M(bluefleet.dpu.doca_service) reports it (C(id), C(name),
      C(state), C(config_hash), C(containers)), or null when it has none.
  returned: when C(doca_services) is in O(filter)
  type: dict
  sample: {"available": true, "root": "/", "manifest_dir": "/etc/kubelet.d",
           "services": {"telemetry": {"manifest_path": "/etc/kubelet.d/doca_telemetry_standalone.yaml",
                                      "manifest": {"link": null, "file": true, "sha256": "5d1e...", "mode": "0644"},
                                      "config_dir": "/opt/mellanox/doca/services/telemetry/config",
                                      "config_files": {"dts_config.ini": {"link": null, "file": true,
                                                                          "sha256": "0b7c...", "mode": "0644"}}}},
           "pods": {"available": true,
                    "services": {"telemetry": {"id": "8c6f...", "name": "doca-telemetry-service-dpu1",
                                               "state": "SANDBOX_READY", "config_hash": "3f1c...",
                                               "containers": []}}}}
"""

import glob
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._cards import (
    check_device,
    full_bdf,
    group_by_card,
    pick_tool,
    reset_query_argv,
    side_of,
    supported_resets,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mst import PARSERS as MST_PARSERS
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import RunOnce, ToolRunner, version_line
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tool_check import REQUIREMENTS
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    ToolReader,
    fs_root_spec,
    nonpositive_seconds,
    parse_output,
    side_spec,
    timeout_spec,
    unavailable,
)

# Each section imports its parser and domain code in the method that reads it: a module run is a fresh process that
# imports (and compiles) every file it imports from the AnsiballZ zip, and a run reads only the sections asked for.

SECTIONS = ("firmware", "nvconfig", "mode", "reset_levels", "eswitch", "privilege", "rshim", "dpu_os", "secure_boot",
            "tool_versions", "rdma_links", "tools", "roce", "files", "ipsec_offload", "doca_services")
# These are asked for by name: the default stays what it was before the sections existed.
DEFAULT_SECTIONS = tuple(s for s in SECTIONS
                         if s not in ("reset_levels", "rdma_links", "tools", "roce", "files", "ipsec_offload",
                                      "doca_services"))

# gpu_filter: gpu_info's sections (module_utils.domain._gpu_read.SECTIONS, imported only when the GPUs are read; a
# unit test keeps the two equal).
GPU_SECTIONS = ("gpus", "topology", "peermem", "tool_versions", "acs")

# The RDMA device port the section roce reads (roce_qos's default port; the roce_qos role does not set another).
ROCE_PORT = 1

# argv that asks each tool for its version; None: the tool has no version option (not asked).
VERSION_ARGV = {
    "mst": ("mst", "version"),
    "flint": ("flint", "--version"),
    "mlxconfig": ("mlxconfig", "--version"),
    "mlxprivhost": ("mlxprivhost", "-v"),
    "mlxfwreset": ("mlxfwreset", "--version"),
    "mstfwreset": ("mstfwreset", "--version"),
    "devlink": ("devlink", "-V"),
    "rdma": ("rdma", "-V"),
    "bfver": None,
    "mlxbf-bootctl": None,
    "crictl": ("crictl", "--version"),
}


class DpuInfo(ToolReader):
    """Gather the facts with one runner; every tool at most once per card."""

    def __init__(self, runner, sections, side="auto", fs_root="/", require=(), roce_netdevs=(), roce_address="",
                 files=(), files_root="/", eswitch_ports=False, file_lines=None, doca_manifest_dir="/etc/kubelet.d"):
        super().__init__(runner)
        self.sections = set(sections)
        self.side_option = side
        self.fs_root = fs_root
        self.require = list(require)
        self.roce_netdevs = list(roce_netdevs)
        self.roce_address = roce_address or ""
        self.file_lines = dict(file_lines or {})
        self.files = list(dict.fromkeys(list(files) + list(self.file_lines)))
        self.files_root = files_root
        self.eswitch_ports = eswitch_ports
        self.doca_manifest_dir = doca_manifest_dir
        # version queries: tool_versions and tools both ask flint --version where MFT is there; it runs once
        self.versions = RunOnce(runner)

    # -- discovery ------------------------------------------------------------------------------
    def discover(self):
        result = self.run(["mst", "status", "-v"], "query devices with mst status -v")
        if result is None:
            return None
        data = self.parse(MST_PARSERS, "mst-status", result, "mst status -v")
        devices = group_by_card(data["devices"])
        return devices

    def detect_side(self, devices):
        if self.side_option != "auto":
            return self.side_option
        return side_of(n for dev in devices for n in dev["netdevs"])

    # -- per card ---------------------------------------------------------------------------------
    def firmware(self, dev):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._flint import PARSERS as FLINT_PARSERS

        result = self.run(["flint", "-d", dev["mst"], "q"], "query firmware of %s with flint" % dev["mst"])
        if result is None:
            return unavailable(self.missing_reason("flint"))
        q = self.parse(FLINT_PARSERS, "flint-query", result, "flint -d %s q" % dev["mst"])
        running = q.get("running_fw_version") or q.get("fw_version")
        dev["psid"] = q.get("psid")
        return {
            "available": True,
            "flashed": q.get("fw_version"),
            "running": running,
            "pending_reset": bool(q.get("fw_version") and running != q.get("fw_version")),
            "psid": q.get("psid"),
            "product_version": q.get("product_version"),
            "release_date": q.get("fw_release_date"),
            "image_type": q.get("image_type"),
            "security_attributes": q.get("security_attributes"),
            "base_guid": q.get("base_guid"),
            "base_mac": q.get("base_mac"),
            "rom_info": q.get("rom_info") or [],
        }

    def nvconfig(self, dev):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxconfig import (
            PARSERS as MLXCONFIG_PARSERS,
        )

        what = "mlxconfig -d %s -e q" % dev["mst"]
        result = self.run(["mlxconfig", "-d", dev["mst"], "-e", "q"], "query configuration of %s with mlxconfig"
                          % dev["mst"])
        if result is None:
            return unavailable(self.missing_reason("mlxconfig"))
        q = self.parse(MLXCONFIG_PARSERS, "mlxconfig-query", result, what)
        if q.get("errors"):
            raise ToolError("query configuration of %s with mlxconfig failed: %s" % (dev["mst"], q["errors"][0]),
                            result)
        if not q.get("devices"):
            raise ToolError("query configuration of %s with mlxconfig failed: no device block in the output"
                            % dev["mst"], result)
        block = q["devices"][0]
        dev["part_number"] = block.get("name")
        dev["description"] = block.get("description")
        params = {name: {"default": p.get("default"), "current": p.get("current"), "next_boot": p.get("next_boot")}
                  for name, p in block["params"].items()}
        pending = sorted(name for name, p in params.items()
                         if p["current"] is not None and p["next_boot"] is not None and p["current"] != p["next_boot"])
        return {"available": True, "params": params, "pending": pending}

    @staticmethod
    def mode_of(dev, params, column):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxconfig import split_value

        if not dev["bluefield"]:
            return "nic"
        model = params.get("INTERNAL_CPU_MODEL")
        if model is None:
            return None
        model_no = split_value(model[column])[1]
        if model_no is None:
            return None
        if model_no == 0:
            return "separated_host"
        engine = params.get("INTERNAL_CPU_OFFLOAD_ENGINE")
        engine_no = split_value(engine[column])[1] if engine is not None else None
        if engine_no == 1:
            return "nic"
        return "dpu"

    def mode(self, dev, nvconfig):
        if not nvconfig["available"]:
            return unavailable(nvconfig["reason"])
        params = nvconfig["params"]
        return {"available": True, "current": self.mode_of(dev, params, "current"),
                "next_boot": self.mode_of(dev, params, "next_boot")}

    def reset_levels(self, dev, tool):
        """What fw_reset plans with (``Card.levels``): level 3 and sync 1 from ``TOOL -d DEV q``.

        ``tool``: ``mlxfwreset``, or mstflint's ``mstfwreset``, which cannot open an mst device file and is given
        the card's PCI address.
        """
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxfwreset import (
            PARSERS as MLXFWRESET_PARSERS,
        )

        device = dev["mst"]
        if tool != "mlxfwreset" and dev["pci"]:
            device = full_bdf(dev["pci"])
        check_device(tool, device)
        argv = reset_query_argv(tool, device)
        result = self.run(argv, "query reset levels of %s with %s" % (device, tool))
        if result is None:
            return dict(unavailable(self.missing_reason(tool)), level3=False, sync1=False)
        level3, sync1 = supported_resets(self.parse(MLXFWRESET_PARSERS, "mlxfwreset-query", result, " ".join(argv)))
        return {"available": True, "tool": tool, "level3": level3, "sync1": sync1}

    def privilege(self, dev, side):
        if side != "dpu":
            return unavailable("mlxprivhost runs on the DPU's Arm side; this is the host side")
        if not dev["bluefield"]:
            return unavailable("%s is not a BlueField" % dev["device_type"])
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxprivhost import (
            PARSERS as MLXPRIVHOST_PARSERS,
        )

        result = self.run(["mlxprivhost", "-d", dev["mst"], "q"], "query host privilege of %s with mlxprivhost"
                          % dev["mst"])
        if result is None:
            return unavailable(self.missing_reason("mlxprivhost"))
        q = self.parse(MLXPRIVHOST_PARSERS, "mlxprivhost-query", result, "mlxprivhost -d %s q" % dev["mst"])
        if q.get("errors"):
            raise ToolError("query host privilege of %s with mlxprivhost failed: %s" % (dev["mst"], q["errors"][0]),
                            result)
        return {"available": True, "level": q.get("level"), "host_index": q.get("host_index"),
                "port_functions": q.get("port_functions") or {}}

    # -- once per machine ---------------------------------------------------------------------
    def eswitch(self):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._devlink import PARSERS as DEVLINK_PARSERS

        result = self.run(["devlink", "dev", "eswitch", "show"], "query eswitch modes with devlink")
        if result is None:
            return None
        return self.parse(DEVLINK_PARSERS, "devlink-eswitch", result, "devlink dev eswitch show")["devices"]

    def ports(self):
        """eswitch's read of the devlink ports (``devlink -j port show``), or the reason (str) it failed: the section
        then answers nothing about netdevs, and the task does not fail."""
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._eswitch import PORTS_ARGV
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._devlink import PARSERS as DEVLINK_PARSERS

        try:
            result = self.run(list(PORTS_ARGV), "find the device of each netdev with devlink")
            if result is None:
                return self.missing_reason("devlink")
            return self.parse(DEVLINK_PARSERS, "devlink-port", result, " ".join(PORTS_ARGV))["ports"]
        except ToolError as exc:
            return exc.msg

    @staticmethod
    def port_owners(ports, handles):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._eswitch import port_owners

        return port_owners(ports, handles)

    def rshim(self, side):
        if side != "host":
            return unavailable("rshim is read from the host side; this is the DPU side")
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rshim import PARSERS as RSHIM_PARSERS

        pattern = os.path.join(self.fs_root, "dev", "rshim*", "misc")
        devices = []
        for path in sorted(glob.glob(pattern)):
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError as exc:
                raise ToolError("read %s failed: %s" % (path, exc)) from exc
            try:
                parsed = RSHIM_PARSERS["rshim-misc"](text)
            except ParseError as exc:
                raise ToolError("parse %s failed: %s" % (path, exc)) from exc
            devices.append({"name": os.path.basename(os.path.dirname(path)), "path": path,
                            "fields": parsed.get("fields", {}), "log": parsed.get("log", [])})
        return {"available": True, "devices": devices}

    def dpu_os(self, side):
        if side != "dpu":
            return unavailable("bfver runs on the DPU's Arm side; this is the host side")
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._bf_release import (
            PARSERS as BF_RELEASE_PARSERS,
        )

        result = self.run(["bfver"], "query BFB and OS versions with bfver")
        if result is None:
            return unavailable(self.missing_reason("bfver"))
        q = self.parse(BF_RELEASE_PARSERS, "bfver", result, "bfver")
        release = q.get("os_release_version")
        parts = {}
        if release:
            try:
                parts = BF_RELEASE_PARSERS["mlnx-release"](release)
            except ParseError:
                parts = {}  # a release name of another form: keep it, its parts stay null
        return {
            "available": True,
            "release": release,
            "doca_version": parts.get("doca_version"),
            "bundle_version": parts.get("bundle_version"),
            "os": parts.get("os"),
            "atf_version": q.get("atf_version"),
            "uefi_version": q.get("uefi_version"),
            "bsp_version": q.get("bsp_version"),
            "boot_device": q.get("boot_device"),
        }

    def secure_boot(self, side):
        if side != "dpu":
            return unavailable("mlxbf-bootctl runs on the DPU's Arm side; this is the host side")
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._bf_release import (
            PARSERS as BF_RELEASE_PARSERS,
        )

        result = self.run(["mlxbf-bootctl"], "query secure-boot state with mlxbf-bootctl")
        if result is None:
            return unavailable(self.missing_reason("mlxbf-bootctl"))
        q = self.parse(BF_RELEASE_PARSERS, "mlxbf-bootctl", result, "mlxbf-bootctl")
        out = {"available": True}
        out.update({k: v for k, v in q.items() if k != "fields"})
        return out

    def rdma_links(self):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._rdma_links import summarize_links
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rdma import PARSERS as RDMA_PARSERS

        result = self.run(["rdma", "link", "show"], "read the RDMA ports with rdma link show")
        if result is None:
            return unavailable(self.missing_reason("rdma"))
        links = self.parse(RDMA_PARSERS, "rdma-link", result, "rdma link show")["links"]
        return dict(summarize_links(links), available=True)

    def roce(self):
        """roce_qos's read of every RDMA netdev (see the option filter); per-netdev errors are kept, not raised."""
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._roce_qos import read_netdev
        from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._rdma_read import read_rdma

        asked = {"netdevs": self.roce_netdevs, "address": self.roce_address, "fs_root": self.fs_root,
                 "port": ROCE_PORT}
        try:
            rdma = read_rdma(self.runner, self.roce_netdevs, self.roce_address)
        except ToolError as exc:
            return dict(unavailable(exc.msg), asked=asked)
        netdevs = {name: read_netdev(self.runner, self.fs_root, name, ROCE_PORT, rdma["links"])
                   for name in dict.fromkeys(rdma["netdevs"])}
        return {"available": True, "asked": asked, "rdma": rdma, "netdevs": netdevs}

    def file_states(self):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._lineinfile import holds_line
        from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import file_state

        paths = {}
        for path in self.files:
            try:
                paths[path] = file_state(self.files_root, path)
            except OSError as exc:
                paths[path] = {"error": "read %s failed: %s" % (path, exc)}
                continue
            if path in self.file_lines:
                dest = os.path.join(self.files_root, os.path.normpath(path).lstrip("/"))
                paths[path]["has_lines"] = [line for line in self.file_lines[path]
                                            if paths[path]["file"] and holds_line(dest, line)]
        return {"available": True, "root": self.files_root, "paths": paths}

    def ipsec_offload(self):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._ipsec_offload import read_section

        return read_section(self.fs_root)

    def doca_services(self):
        """doca_service's read of every catalogue service (see the option filter): the files under files_root, and
        the pods from one crictl pods and one crictl ps -a (this one only where a service has a pod), chosen as the
        module chooses them (``_doca.pick_pod``)."""
        from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._doca import (
            SERVICES,
            newest_ready_pod,
            pick_pod,
            under,
        )
        from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._crictl import (
            parse_pods_json,
            parse_ps_json,
        )
        from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import file_state

        def state(directory, name):
            path = os.path.join(directory, name)
            if not os.path.lexists(path):
                return None
            try:
                return file_state(directory, name)
            except OSError as exc:
                return {"error": "read %s failed: %s" % (path, exc)}

        root = self.files_root
        manifests = under(root, self.doca_manifest_dir)
        services = {}
        for name, entry in SERVICES.items():
            svc = {"manifest_path": os.path.join(self.doca_manifest_dir, entry["manifest"]),
                   "manifest": state(manifests, entry["manifest"]), "config_dir": entry["config_dir"],
                   "config_files": {}}
            folder = under(root, entry["config_dir"])
            try:
                svc["config_files"] = {fname: state(folder, fname) for fname in sorted(os.listdir(folder))}
            except FileNotFoundError:
                pass
            except OSError as exc:
                svc["config_error"] = "list %s failed: %s" % (folder, exc)
            services[name] = svc
        out = {"available": True, "root": root, "manifest_dir": self.doca_manifest_dir, "services": services}
        try:
            what = "list the pods with crictl"
            result = self.run(["crictl", "pods", "-o", "json"], what)
            if result is None:
                return dict(out, pods=unavailable(self.missing_reason("crictl")))
            pods = parse_output(parse_pods_json, result, what)
            containers = []
            if any(newest_ready_pod(pods, entry["pod"]) for entry in SERVICES.values()):
                what = "list the containers with crictl"
                containers = parse_output(parse_ps_json, self.run(["crictl", "ps", "-a", "-o", "json"], what), what)
        except ToolError as exc:
            return dict(out, pods=unavailable(exc.msg))
        return dict(out, pods={"available": True, "services": {name: pick_pod(pods, containers, entry["pod"])
                                                               for name, entry in SERVICES.items()}})

    def tools(self):
        from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tool_check import check_tools

        return check_tools(self.versions, self.require)

    def tool_versions(self):
        versions = {}
        for tool in list(self.used):
            argv = VERSION_ARGV.get(tool)
            if argv is None:
                versions[tool] = None
                continue
            versions[tool] = version_line(self.versions, argv)
        return versions

    # -- everything -------------------------------------------------------------------------------
    def gather(self):
        out = {"changed": False, "filter": [s for s in SECTIONS if s in self.sections], "read_at": time.time()}
        devices = self.discover()
        if devices is None:
            devices = []
            out["msg"] = "mst not found on PATH: install MFT (mst, flint, mlxconfig) to list the cards"
        elif not devices:
            out["msg"] = "no BlueField or ConnectX device found by mst status -v"
        side = self.detect_side(devices)
        out["side"] = side
        want = self.sections
        eswitch = ports = None
        if "eswitch" in want and devices:
            eswitch = self.eswitch()
            if eswitch is not None and self.eswitch_ports:
                ports = self.ports()
        # fw_reset's choice (Card.reset_tool): MFT's mlxfwreset, else mstflint's mstfwreset, else mlxfwreset (missing)
        reset_tool = pick_tool(self.runner, "mlxfwreset") if "reset_levels" in want and devices else None
        for dev in devices:
            if "firmware" in want:
                dev["firmware"] = self.firmware(dev)
            nv = None
            if want & {"nvconfig", "mode"}:
                nv = self.nvconfig(dev)
                if "nvconfig" in want:
                    dev["nvconfig"] = nv
                if "mode" in want:
                    dev["mode"] = self.mode(dev, nv)
            if "reset_levels" in want:
                dev["reset_levels"] = self.reset_levels(dev, reset_tool)
            if "eswitch" in want:
                if eswitch is None:
                    dev["eswitch"] = unavailable(self.missing_reason("devlink"))
                else:
                    fns = {}
                    for fn in dev["functions"]:
                        handle = "pci/" + full_bdf(fn["pci"])
                        if handle in eswitch:
                            fns[full_bdf(fn["pci"])] = eswitch[handle]
                    dev["eswitch"] = {"available": True, "functions": fns}
                    if isinstance(ports, str):
                        dev["eswitch"].update(ports=None, ports_reason=ports)
                    elif ports is not None:
                        handles = {"pci/" + full_bdf(fn["pci"]) for fn in dev["functions"] if fn["pci"]}
                        dev["eswitch"]["ports"] = self.port_owners(ports, handles)
            if "privilege" in want:
                dev["privilege"] = self.privilege(dev, side)
            fw_pending = bool(dev.get("firmware", {}).get("pending_reset"))
            nv_pending = list(nv["pending"]) if nv and nv.get("available") else []
            dev["pending_reset"] = {"required": fw_pending or bool(nv_pending), "firmware": fw_pending,
                                    "nvconfig": nv_pending}
        out["devices"] = devices
        if "rshim" in want:
            out["rshim"] = self.rshim(side)
        if "dpu_os" in want:
            out["dpu_os"] = self.dpu_os(side)
        if "secure_boot" in want:
            out["secure_boot"] = self.secure_boot(side)
        if "rdma_links" in want:
            out["rdma_links"] = self.rdma_links()
        if "roce" in want:
            out["roce"] = self.roce()
        if "files" in want:
            out["files"] = self.file_states()
        if "ipsec_offload" in want:
            out["ipsec_offload"] = self.ipsec_offload()
        if "doca_services" in want:
            out["doca_services"] = self.doca_services()
        if "tool_versions" in want:
            out["tool_versions"] = self.tool_versions()
        if "tools" in want:
            out["tools"] = self.tools()
        out["tools_missing"] = list(self.missing)
        out["cmd"] = [list(argv) for argv in self.runner.cmd]
        return out


def argument_spec():
    return {
        "filter": {"type": "list", "elements": "str", "choices": list(SECTIONS), "default": list(DEFAULT_SECTIONS)},
        "require": {"type": "list", "elements": "str", "choices": list(REQUIREMENTS), "default": []},
        "roce_netdevs": {"type": "list", "elements": "str", "default": []},
        "roce_address": {"type": "str", "default": ""},
        "files": {"type": "list", "elements": "path", "default": []},
        "file_lines": {"type": "dict", "default": {}},
        "files_root": {"type": "path", "default": "/"},
        "doca_manifest_dir": {"type": "path", "default": "/etc/kubelet.d"},
        "eswitch_ports": {"type": "bool", "default": False},
        "gpu_filter": {"type": "list", "elements": "str", "choices": list(GPU_SECTIONS), "default": []},
        "gpu_files_root": {"type": "path"},
        "side": side_spec(),
        "fs_root": fs_root_spec(),
        "timeout": timeout_spec(120),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    problem = nonpositive_seconds(module.params, "gather DPU facts")
    if problem:
        module.fail_json(msg=problem)
    lines = module.params["file_lines"]
    if not all(isinstance(v, list) and all(isinstance(line, str) for line in v) for v in lines.values()):
        module.fail_json(msg="gather DPU facts failed: file_lines must map each file to a list of lines (strings), "
                             "got %r" % (lines,))
    if module.params["require"] and "tools" not in module.params["filter"]:
        module.fail_json(msg="gather DPU facts failed: require=%s is what the section tools checks, and filter does "
                             "not ask for it: add tools to filter, or leave require out" % module.params["require"])
    runner = ToolRunner(timeout=module.params["timeout"])
    params = module.params
    info = DpuInfo(runner, params["filter"], params["side"], params["fs_root"], params["require"],
                   params["roce_netdevs"], params["roce_address"], params["files"], params["files_root"],
                   params["eswitch_ports"], params["file_lines"], params["doca_manifest_dir"])
    try:
        result = info.gather()
    except ToolError as exc:
        module.fail_json(msg=exc.msg, cmd_list=[list(a) for a in runner.cmd], **exc.details())
    if params["gpu_filter"]:
        result["gpu_info"] = read_gpus(module, params)
    module.exit_json(**result)


def read_gpus(module, params):
    """gpu_info's read (module_utils.domain._gpu_read) with a runner of its own, so that its ``cmd`` and
    ``tools_missing`` are the GPU read's; imported only when asked for."""
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._gpu_read import GpuInfo

    runner = ToolRunner(timeout=params["timeout"])
    reader = GpuInfo(runner, params["gpu_filter"], params["fs_root"], params["gpu_files_root"])
    try:
        gpus = reader.gather()
    except ToolError as exc:
        module.fail_json(msg="read the GPUs: %s" % exc.msg, cmd_list=[list(a) for a in runner.cmd], **exc.details())
    gpus.pop("changed", None)
    return gpus


if __name__ == "__main__":
    main()
