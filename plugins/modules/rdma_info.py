# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rdma_info
short_description: RDMA devices, their netdevs and GID tables; the RoCE v2 GID index to use
version_added: 0.1.0
description:
  - Runs C(ibdev2netdev) (RDMA device port to netdev) and C(show_gids) (the GID table of every port) and
    returns both, plus the RoCE v2 GID index of each netdev - the one NCCL (C(NCCL_IB_GID_INDEX)) and perftest
    (C(-x)) need.
  - The GID index of a netdev is the RoCE v2 entry of O(address) when it is given and that netdev carries it;
    otherwise the first RoCE v2 entry with an IPv4 address; otherwise the first RoCE v2 entry (the link-local
    GID, from the MAC).
  - Reads only; never changes anything.
author:
  - bluefleet developers (!UNKNOWN)
options:
  netdevs:
    description: The netdevs to report a GID index for. Empty - every netdev C(ibdev2netdev) lists.
    type: list
    elements: str
    default: []
  address:
    description: The IPv4 address RoCE traffic uses (as C(show_gids) prints it). Empty - none.
    type: str
    default: ''
  timeout:
    description: Seconds each command may run.
    type: int
    default: 60
attributes:
  check_mode:
    description: Reads only; the same in check mode.
    support: full
  diff_mode:
    description: Nothing to show; the module changes nothing.
    support: none
  platform:
    description: Linux with rdma-core and mlnx-tools (show_gids, ibdev2netdev).
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
seealso:
  - module: bluefleet.dpu.roce_qos
"""

EXAMPLES = r"""
- name: Find the RoCE v2 GID index of the address NCCL uses
  bluefleet.dpu.rdma_info:
    address: 192.168.10.2
  register: rdma

- name: Show it
  ansible.builtin.debug:
    msg: "NCCL_IB_GID_INDEX={{ rdma.gid_index }}"
"""

RETURN = r"""
changed:
  description: Always false; the module only reads.
  returned: always
  type: bool
links:
  description: RDMA device ports and their netdevs, from C(ibdev2netdev).
  returned: always
  type: list
  elements: dict
  sample: [{"ibdev": "mlx5_0", "port": 1, "netdev": "p0", "state": "Up"}]
gids:
  description: Every GID table row from C(show_gids) (C(dev), C(port), C(index), C(gid), C(ipv4), C(ver), C(netdev)).
  returned: always
  type: list
  elements: dict
netdevs:
  description: The netdevs reported on (O(netdevs), or every netdev of RV(links)).
  returned: always
  type: list
  elements: str
roce_v2_gid_index:
  description: Netdev to the GID index chosen for it (null when the netdev has no RoCE v2 GID).
  returned: always
  type: dict
  sample: {"p0": 3}
gid_index:
  description: The GID index of the netdev that carries O(address), or of the first netdev of RV(netdevs) that
    has one; null when none has a RoCE v2 GID.
  returned: always
  type: int
  sample: 3
gid_netdev:
  description: The netdev RV(gid_index) belongs to (null with it).
  returned: always
  type: str
  sample: p0
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._rdma_read import read_rdma
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import run_module, timeout_spec


def run_rdma_info(runner, params):
    # The read lives in plumbing/_rdma_read.py: roce_qos (rdma_facts) returns the same keys from the same read.
    return dict(read_rdma(runner, params["netdevs"], params["address"]), changed=False)


def argument_spec():
    return {
        "netdevs": {"type": "list", "elements": "str", "default": []},
        "address": {"type": "str", "default": ""},
        "timeout": timeout_spec(60),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, "read RDMA devices", ToolRunner, lambda runner: run_rdma_info(runner, module.params))


if __name__ == "__main__":
    main()
