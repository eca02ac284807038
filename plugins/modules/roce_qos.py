# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: roce_qos
short_description: Lossless RoCE settings of mlx5 netdevs (trust, PFC, ETS, ECN, RoCE mode, ToS, MTU)
version_added: 0.1.0
description:
  - Reads the QoS of one netdev with C(mlnx_qos -i NETDEV), the RDMA-CM defaults of its RDMA device port with
    C(cma_roce_mode) and C(cma_roce_tos), and the DCQCN (ECN) switches, CNP DSCP and MTU from sysfs
    (C(/sys/class/net/NETDEV/ecn/roce_np|roce_rp/enable/PRIO), C(ecn/roce_np/cnp_dscp), C(mtu)).
  - Compares them with the options given (an option left out is not managed), applies what differs once, in
    this order - trust, DSCP to priority entries, PFC and ETS in one C(mlnx_qos) call, RoCE mode, ToS, ECN, CNP
    DSCP, MTU - and reads everything again.
  - Every option is checked first (priority range, the data DSCP equal to the CNP DSCP, an MTU above O(max_mtu),
    a netdev that does not exist); a bad one fails the task before anything is changed.
  - With O(netdevs), the same settings go to every netdev in one run - C(ibdev2netdev) runs once, every netdev is
    read before any is changed (a netdev that does not exist, has no RDMA device port or no ECN sysfs fails the
    task with nothing changed), then each netdev that differs is set and read back.
  - With O(rdma_facts), the module first makes the read of M(bluefleet.dpu.rdma_info) (C(ibdev2netdev) and
    C(show_gids), once each; O(netdevs) and O(address) as that module's) and returns it as RV(rdma), so one run
    finds the RoCE netdevs and their GID index and configures them. O(netdevs) empty or left out then means every
    netdev C(ibdev2netdev) lists; where it lists none, the module changes nothing and reads no QoS.
  - These settings are runtime only - a reboot loses them (C(persistent) is always false); the
    C(bluefleet.dpu.roce_qos) role installs a boot-time unit that applies them again.
author:
  - bluefleet developers (!UNKNOWN)
options:
  netdev:
    description: The netdev (C(ens1f0np0) on a host, C(p0) on a BlueField Arm). Give this or O(netdevs) (or
      neither, with O(rdma_facts)).
    type: str
  netdevs:
    description:
      - Several netdevs that get the same settings, in one run (the RoCE ports of a node). Give this or O(netdev).
      - With O(rdma_facts), empty or left out - every netdev C(ibdev2netdev) lists.
      - The result then holds one entry per netdev in RV(netdevs), and RV(qos), RV(before) and the diff are keyed
        by netdev.
    type: list
    elements: str
    version_added: 0.2.0
  trust:
    description: Priority trust state (C(mlnx_qos --trust)).
    type: str
    choices: [pcp, dscp]
  pfc:
    description: The priorities that get PFC; every other priority has PFC off.
    type: list
    elements: int
  dscp2prio:
    description: DSCP to priority entries that must be in the DSCP table (C(mlnx_qos --dscp2prio set,D,P)).
    type: list
    elements: dict
    suboptions:
      dscp:
        description: The DSCP (0..63).
        type: int
        required: true
      priority:
        description: The priority it maps to (0..7).
        type: int
        required: true
  prio_tc:
    description: Traffic class of each of the 8 priorities (C(mlnx_qos -p)).
    type: list
    elements: int
  tsa:
    description: Transmission selection of each of the 8 TCs (C(mlnx_qos -s)); C(ets) bandwidths must sum to 100.
    type: list
    elements: str
  tc_bw:
    description: ETS bandwidth percent of each of the 8 TCs (C(mlnx_qos -t)); 0 on strict/vendor TCs.
    type: list
    elements: int
  ecn:
    description: Priorities with ECN (DCQCN) on, as notification point and reaction point
      (C(ecn/roce_np/enable/PRIO) and C(ecn/roce_rp/enable/PRIO) = 1); 0 on every other priority.
    type: list
    elements: int
  cnp_dscp:
    description: DSCP of the congestion notification packets (C(ecn/roce_np/cnp_dscp)); must differ from the data
      DSCP given in O(data_dscp).
    type: int
  data_dscp:
    description: The DSCP RoCE data uses; only checked against O(cnp_dscp) (the data DSCP reaches packets through
      O(tos) and the table in O(dscp2prio)).
    type: int
  roce_mode:
    description: Default RoCE version of RDMA-CM on the port (C(cma_roce_mode -m)).
    type: str
    choices: [v1, v2]
  tos:
    description: Default ToS of RDMA-CM on the port (C(cma_roce_tos -t)); DSCP times 4.
    type: int
  rdma_facts:
    description:
      - Before reading any QoS, make the read of M(bluefleet.dpu.rdma_info) and return it as RV(rdma) (the RDMA
        device ports, GID tables and RoCE v2 GID index); a netdev that ibdev2netdev does not list fails the task
        before anything is read or changed.
      - O(netdev) and O(netdevs) may then be left out - every netdev C(ibdev2netdev) lists.
      - C(ibdev2netdev) still runs once - O(roce_mode) and O(tos) find the RDMA device of each netdev in the same
        read.
    type: bool
    default: false
    version_added: 0.2.0
  address:
    description: The IPv4 address RoCE traffic uses (as C(show_gids) prints it), which picks the GID index in
      RV(rdma), as O(bluefleet.dpu.rdma_info#module:address) does. Only with O(rdma_facts). Empty - none.
    type: str
    default: ''
    version_added: 0.2.0
  ibdev:
    description: The RDMA device of O(netdev). Empty - looked up with C(ibdev2netdev). Not with O(netdevs).
    type: str
  port:
    description: Port of O(ibdev) (with O(netdevs), the RDMA device port of every netdev).
    type: int
    default: 1
  mtu:
    description: MTU of the netdev.
    type: int
  max_mtu:
    description: Largest MTU the port takes (mlx5 - 9978, as C(ip -d link) shows C(maxmtu)).
    type: int
    default: 9978
  fs_root:
    description:
      - The directory that stands for C(/) when the module reads and writes the sysfs files (C(/) on a machine).
      - C(sysfs_root) is the older name of this option.
    type: path
    default: /
    aliases: [sysfs_root]
  timeout:
    description: Seconds each command may run.
    type: int
    default: 60
attributes:
  check_mode:
    description: Reads everything and reports what would change; writes nothing.
    support: full
  diff_mode:
    description: The managed settings before and after.
    support: full
  platform:
    description: Linux with the mlx5 driver and mlnx-tools (mlnx_qos, cma_roce_mode, cma_roce_tos, ibdev2netdev).
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
  - The ToS is DSCP << 2 (DSCP 26 - ToS 104); the same number is NCCL's C(NCCL_IB_TC).
seealso:
  - module: bluefleet.dpu.rdma_info
"""

EXAMPLES = r"""
- name: The same on both RoCE ports of a host, in one run (both are read before either is changed)
  bluefleet.dpu.roce_qos:
    netdevs: [ens1f0np0, ens1f1np1]
    trust: dscp
    pfc: [3]
    ecn: [3]
    data_dscp: 26
    cnp_dscp: 48
    roce_mode: v2
    tos: 104
    mtu: 9000

- name: Every RoCE port ibdev2netdev lists, and the GID index NCCL needs, in one run
  bluefleet.dpu.roce_qos:
    rdma_facts: true
    address: 192.168.10.2
    trust: dscp
    pfc: [3]
    ecn: [3]
    data_dscp: 26
    cnp_dscp: 48
  register: roce

- name: Show the GID index
  ansible.builtin.debug:
    msg: "NCCL_IB_GID_INDEX={{ roce.rdma.gid_index }}"

- name: Lossless RoCE on priority 3, DSCP 26, CNP DSCP 48
  bluefleet.dpu.roce_qos:
    netdev: p0
    trust: dscp
    pfc: [3]
    dscp2prio:
      - {dscp: 26, priority: 3}
    prio_tc: [0, 1, 2, 3, 4, 5, 6, 7]
    tsa: [ets, ets, ets, ets, ets, ets, ets, ets]
    tc_bw: [8, 7, 7, 50, 7, 7, 7, 7]
    ecn: [3]
    data_dscp: 26
    cnp_dscp: 48
    roce_mode: v2
    tos: 104
    mtu: 9000
"""

RETURN = r"""
before:
  description:
    - The state before the module ran (the same as RV(qos) when nothing changed); RV(previous) is its older
      name. Unless O(netdev) is given, netdev to its state.
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
  description: True when a setting was changed (or, in check mode, would be).
  returned: always
  type: bool
netdev:
  description: The netdev.
  returned: when O(netdev) is given
  type: str
ibdev:
  description: Its RDMA device (null when it has none and none was needed).
  returned: when O(netdev) is given
  type: str
  sample: mlx5_0
netdevs:
  description: One entry per netdev of O(netdevs) (with O(rdma_facts) and no O(netdev), of RV(rdma.netdevs)), in
    order - C(netdev), C(ibdev), C(port), C(changed), C(changes), C(qos) and C(before), each as the single-netdev
    result has it.
  returned: unless O(netdev) is given
  type: list
  elements: dict
  version_added: 0.2.0
rdma:
  description: The read of M(bluefleet.dpu.rdma_info), made before any QoS was read - its keys C(links), C(gids),
    C(netdevs), C(roce_v2_gid_index), C(gid_index) and C(gid_netdev), as that module returns them.
  returned: when O(rdma_facts) is true
  type: dict
  version_added: 0.2.0
  contains:
    links:
      description: RDMA device ports and their netdevs, from C(ibdev2netdev).
      type: list
      elements: dict
      sample: [{"ibdev": "mlx5_0", "port": 1, "netdev": "p0", "state": "Up"}]
    gids:
      description: Every GID table row from C(show_gids).
      type: list
      elements: dict
    netdevs:
      description: The netdevs configured (O(netdevs), O(netdev), or every netdev of RV(rdma.links)).
      type: list
      elements: str
    roce_v2_gid_index:
      description: Netdev to its RoCE v2 GID index (null when it has none).
      type: dict
      sample: {"p0": 3}
    gid_index:
      description: The GID index of the netdev that carries O(address), or of the first netdev that has one.
      type: int
      sample: 3
    gid_netdev:
      description: The netdev RV(rdma.gid_index) belongs to.
      type: str
      sample: p0
port:
  description: The RDMA device port.
  returned: always
  type: int
qos:
  description: The managed settings after the run (in check mode, as predicted), keys as the options. Unless
    O(netdev) is given, netdev to its settings.
  returned: always
  type: dict
previous:
  description: The managed settings before the run (unless O(netdev) is given, netdev to its settings).
  returned: always
  type: dict
changes:
  description: The settings that differed, in apply order; unless O(netdev) is given, C(NETDEV.SETTING) for
    each.
  returned: always
  type: list
  elements: str
persistent:
  description: Always false - the settings are lost on a reboot and must be applied again at boot.
  returned: always
  type: bool
reset_required:
  description: Always C(none) - the settings take effect at once.
  returned: always
  type: str
  sample: none
diff:
  description: The managed settings before and after (unless O(netdev) is given, keyed by netdev).
  returned: when diff mode is on
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._roce import (
    ECN_PROTOS,
    ROCE_MODE_ARGS,
    pfc_vector,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._roce_qos import (
    CMA_KEYS,
    KEYS,
    argument_spec,
    changes_of,
    check_input,
    check_netdev,
    desired_state,
    find_ibdev,
    list_links,
    net_dir,
    netdevs_of,
    read_state,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import write_attribute
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._rdma_read import read_rdma
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    run_module,
    run_tool,
)


def write_number(path, value, what):
    try:
        write_attribute(path, "%d\n" % value)
    except OSError as exc:
        raise ToolError("write %s failed: %s; run as root on a machine with the mlx5 driver" % (what, exc)) from exc


def apply_changes(runner, params, ibdev, changes, want):
    netdev = params["netdev"]
    what = "set QoS of %s with mlnx_qos" % netdev
    if "trust" in changes:
        run_tool(runner, ["mlnx_qos", "-i", netdev, "--trust", want["trust"]], what)
    if "dscp2prio" in changes:
        argv = ["mlnx_qos", "-i", netdev]
        for entry in want["dscp2prio"]:
            argv += ["--dscp2prio", "set,%d,%d" % (entry["dscp"], entry["priority"])]
        run_tool(runner, argv, what)
    qos_argv = []
    if "pfc" in changes:
        qos_argv += ["--pfc", ",".join(str(v) for v in pfc_vector(want["pfc"]))]
    if "prio_tc" in changes:
        qos_argv += ["-p", ",".join(str(v) for v in want["prio_tc"])]
    if "tsa" in changes or "tc_bw" in changes:  # mlnx_qos checks ETS as a whole: give both when one changes
        if "tsa" in want:
            qos_argv += ["-s", ",".join(want["tsa"])]
        if "tc_bw" in want:
            qos_argv += ["-t", ",".join(str(v) for v in want["tc_bw"])]
    if qos_argv:
        run_tool(runner, ["mlnx_qos", "-i", netdev] + qos_argv, what)
    port = str(params["port"])
    if "roce_mode" in changes:
        run_tool(runner, ["cma_roce_mode", "-d", ibdev, "-p", port, "-m", ROCE_MODE_ARGS[want["roce_mode"]]],
                 "set the RoCE mode of %s port %s with cma_roce_mode" % (ibdev, port))
    if "tos" in changes:
        run_tool(runner, ["cma_roce_tos", "-d", ibdev, "-p", port, "-t", str(want["tos"])],
                 "set the RoCE ToS of %s port %s with cma_roce_tos" % (ibdev, port))
    if "ecn" in changes:
        for proto in ECN_PROTOS:
            folder = os.path.join(net_dir(params), "ecn", proto, "enable")
            for prio, flag in enumerate(pfc_vector(want["ecn"])):
                write_number(os.path.join(folder, str(prio)), flag, "ECN %s priority %d of %s" % (proto, prio, netdev))
    if "cnp_dscp" in changes:
        write_number(os.path.join(net_dir(params), "ecn", "roce_np", "cnp_dscp"), want["cnp_dscp"],
                     "the CNP DSCP of %s" % netdev)
    if "mtu" in changes:
        write_number(os.path.join(net_dir(params), "mtu"), want["mtu"], "the MTU of %s" % netdev)


def plan_netdev(runner, params, links):
    """Read one netdev: (ibdev, want, before, changes). Reads only."""
    ibdev = find_ibdev(params, links) if any(params[k] is not None for k in CMA_KEYS) else params["ibdev"]
    want = desired_state(params)
    before = read_state(runner, params, ibdev)
    changes = changes_of(want, before)
    return ibdev, want, before, changes


def apply_netdev(runner, params, ibdev, want, changes):
    """Apply the changes of one netdev and read it back; the state after. ToolError when a value did not stick."""
    apply_changes(runner, params, ibdev, changes, want)
    after = read_state(runner, params, ibdev)
    wrong = [key for key in KEYS if key in want and after.get(key) != want[key]]
    if wrong:
        raise ToolError("configure RoCE QoS of %s failed: read back after the change, %s" % (
            params["netdev"], "; ".join("%s is %r, expected %r" % (key, after.get(key), want[key]) for key in wrong)))
    return after


def run_roce_qos(runner, params, check_mode):
    """Check the options and every netdev, read every netdev, then (not in check mode) apply and read back.

    Nothing is written before every netdev has been read: a netdev that does not exist, has no RDMA device
    port or no ECN sysfs fails the task with no netdev changed. With rdma_facts, rdma_info's read comes first and
    gives the netdevs when none is named.
    """
    names = netdevs_of(params)
    check_input(params, names)
    rdma = None
    if params["rdma_facts"]:
        # The options as rdma_info takes them (a repeated netdev too), so the rdma key is what rdma_info returns.
        asked = params["netdevs"] or ([params["netdev"]] if params["netdev"] else [])
        rdma = read_rdma(runner, asked, params["address"])
        names = list(dict.fromkeys(rdma["netdevs"]))
    per = [dict(params, netdev=name) for name in names]
    for one in per:
        check_netdev(one)
    needs_links = bool(names) and not params["ibdev"] and any(params[k] is not None for k in CMA_KEYS)
    links = []
    if needs_links:  # ibdev2netdev once per run: the rdma_facts read has listed the links already
        links = rdma["links"] if rdma is not None else list_links(runner, names)
    plans = [(one,) + plan_netdev(runner, one, links) for one in per]
    results = []
    for one, ibdev, want, before, changes in plans:
        after = dict(before, **want) if check_mode and changes else before  # check mode: the predicted state
        if changes and not check_mode:
            after = apply_netdev(runner, one, ibdev, want, changes)
        results.append({"netdev": one["netdev"], "ibdev": ibdev, "port": params["port"], "changed": bool(changes),
                        "changes": changes, "qos": after, "before": before,
                        "wanted": dict(before, **want) if changes else before})
    common = {"changed": any(r["changed"] for r in results), "port": params["port"], "persistent": False,
              "reset_required": "none"}
    if rdma is not None:
        common["rdma"] = rdma
    if params["netdev"]:
        [one] = results
        return dict(common, netdev=one["netdev"], ibdev=one["ibdev"], qos=one["qos"], before=one["before"],
                    previous=one["before"], changes=one["changes"], diff=make_diff(one["before"], one["wanted"]))
    before = {r["netdev"]: r["before"] for r in results}
    return dict(common,
                netdevs=[{key: r[key] for key in ("netdev", "ibdev", "port", "changed", "changes", "qos", "before")}
                         for r in results],
                qos={r["netdev"]: r["qos"] for r in results}, before=before, previous=before,
                changes=["%s.%s" % (r["netdev"], key) for r in results for key in r["changes"]],
                diff=make_diff(before, {r["netdev"]: r["wanted"] for r in results}))


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           mutually_exclusive=[("netdev", "netdevs")])
    # required_one_of cannot depend on another option: with rdma_facts the netdevs may come from ibdev2netdev, so
    # the check is made here, with the message required_one_of gave.
    if not module.params["rdma_facts"] and module.params["netdev"] is None and module.params["netdevs"] is None:
        module.fail_json(msg="one of the following is required: netdev, netdevs")
    run_module(module, "configure RoCE QoS", ToolRunner,
               lambda runner: run_roce_qos(runner, module.params, module.check_mode), predicts=True)


if __name__ == "__main__":
    main()
