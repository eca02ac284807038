# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rdma_link_info
short_description: Read the state of every RDMA port (rdma link show)
version_added: 0.1.0
description:
  - Runs C(rdma link show) once and returns one entry per RDMA device port with its logical state
    (C(ACTIVE), C(DOWN), ...), physical state and netdev, as iproute2 prints them.
  - RV(all_active) sums it up for a health check - at least one port, and every port C(ACTIVE) (or every port of
    O(devices) when given) - so playbooks compare a boolean instead of parsing the tool's lines.
  - Reads only; never changes anything, also not in check mode.
author:
  - bluefleet developers (!UNKNOWN)
options:
  devices:
    description:
      - RDMA device names (C(mlx5_0)) whose ports RV(all_active) and RV(down) consider; empty - every port listed.
      - A device named here that C(rdma link show) does not list counts as not active (RV(missing)).
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds the command may run.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Reads only, in check mode too.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
requirements:
  - iproute2 C(rdma) on the node
notes:
  - The link state is the kernel's view of the port; a port that comes up after a reset may take seconds.
"""

EXAMPLES = r"""
- name: Read the RDMA ports after the firmware reset
  bluefleet.dpu.rdma_link_info:
  register: links

- name: Every RDMA port is up
  ansible.builtin.assert:
    that: links.all_active
    fail_msg: "ports not active: {{ links.down }}"

- name: Only the uplink devices
  bluefleet.dpu.rdma_link_info:
    devices: [mlx5_0, mlx5_1]
"""

RETURN = r"""
changed:
  description: Always false.
  returned: always
  type: bool
links:
  description: One entry per port as C(rdma link show) lists it - C(ibdev), C(port), C(state), C(physical_state),
    C(netdev) (null when not printed) and any other key the tool printed.
  returned: always
  type: list
  elements: dict
  sample: [{ibdev: mlx5_0, port: 1, state: ACTIVE, physical_state: LINK_UP, netdev: p0}]
all_active:
  description: True when at least one port is considered, no device of O(devices) is missing, and every port
    considered is C(ACTIVE).
  returned: always
  type: bool
down:
  description: The ports considered that are not C(ACTIVE), as C(DEV/PORT STATE) strings.
  returned: always
  type: list
  elements: str
  sample: [mlx5_1/1 DOWN]
missing:
  description: Devices of O(devices) that C(rdma link show) does not list.
  returned: always
  type: list
  elements: str
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._rdma_links import summarize_links
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rdma import parse_rdma_link
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    parse_output,
    run_module,
    run_tool,
    timeout_spec,
)

ARGV = ("rdma", "link", "show")


def read_links(runner, devices):
    what = "read the RDMA ports with rdma link show"
    result = run_tool(runner, ARGV, what)
    links = parse_output(parse_rdma_link, result, what)["links"]
    return dict(summarize_links(links, devices), changed=False)


def argument_spec():
    return {
        "devices": {"type": "list", "elements": "str", "default": []},
        "timeout": timeout_spec(60),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, "read the RDMA ports", ToolRunner,
               lambda runner: read_links(runner, module.params["devices"]))


if __name__ == "__main__":
    main()
