#!/usr/bin/python
# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: tools_info
short_description: Find the firmware, IPsec and BFB tools a node has, their versions, and check what a play needs
version_added: 0.1.0
description:
  - Looks up on C(PATH) NVIDIA MFT (C(mst), C(flint), C(mlxconfig), C(mlxfwreset)), Debian/Ubuntu's mstflint
    (C(mstflint), C(mstconfig), C(mstfwreset), C(mstprivhost); it has no C(mst) and no firmware manager),
    strongSwan's C(swanctl), the BFB installers C(bfb-install) (rshim-user-space) and C(doca-installer) (DOCA 3.x),
    and nftables' C(nft), and reads the versions that matter (C(flint --version), C(mstflint --version), the first
    line of C(swanctl --help), C(nft --version)).
  - O(require) names what the play needs; a requirement that is not met fails the task with what to install.
  - Reads only; never changes anything, also not in check mode.
author:
  - bluefleet developers (!UNKNOWN)
options:
  require:
    description:
      - C(firmware) - MFT or mstflint (C(mlxconfig) or C(mstconfig), C(flint) or C(mstflint), C(mlxfwreset) or
        C(mstfwreset)).
      - C(mst) - MFT's C(mst) (finding cards without a device option; not in mstflint).
      - C(ipsec_packet_offload) - strongSwan >= 5.9.10, the first release that accepts C(hw_offload = packet) and
        C(hw_offload = crypto) (an older charon refuses those values and discards the whole connection, and
        C(swanctl --load-all) exits 22; it knows C(yes), C(no) and C(auto)).
      - C(bfb_install) - C(bfb-install) or C(doca-installer).
    type: list
    elements: str
    choices: [firmware, mst, ipsec_packet_offload, bfb_install]
    default: []
  timeout:
    description: Seconds each version command may run.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Reads only, in check mode too.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
  - C(bfb-install) has no C(--version); its version is not read (its entry in RV(tools) has a null version and a
    reason).
"""

EXAMPLES = r"""
- name: The firmware tools and an IPsec packet-offload capable strongSwan are installed
  bluefleet.dpu.tools_info:
    require: [firmware, ipsec_packet_offload]
  register: tools

- name: Say which firmware tool family the node has
  ansible.builtin.debug:
    msg: "firmware tools: {{ tools.firmware_tools }}"
"""

RETURN = r"""
changed:
  description: Always false.
  returned: always
  type: bool
firmware_tools:
  description: C(mft) when MFT's C(flint) is on C(PATH), else C(mstflint) when mstflint's is, else null.
  returned: always
  type: str
  sample: mstflint
tools:
  description: One entry per tool family - C(mft), C(mstflint), C(strongswan), C(bfb_install), C(doca_installer),
    C(nftables) - each with C(present) (bool), C(path) (the program found, or null), C(version) (a string or null)
    and C(note) (why the version is null, or null).
  returned: always
  type: dict
  sample:
    mstflint: {present: true, path: /usr/bin/mstflint, version: 4.21.0, note: null}
    strongswan: {present: true, path: /usr/sbin/swanctl, version: 5.9.8, note: null}
ipsec_packet_offload:
  description: True when the strongSwan found is 5.9.10 or later (C(hw_offload = packet) and C(= crypto) accepted).
  returned: always
  type: bool
missing:
  description: The requirements of O(require) not met, each with what to install (the task fails when not empty).
  returned: always
  type: list
  elements: str
tool_versions:
  description: The version of each tool family (as in RV(tools)), null when it is missing or has no version option.
  returned: always
  type: dict
  sample: {"mft": null, "mstflint": "4.21.0", "strongswan": "5.9.8", "bfb_install": null, "doca_installer": null,
           "nftables": "1.0.6"}
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tool_check import REQUIREMENTS
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tool_check import check_tools as report_tools
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError, run_module, timeout_spec


def check_tools(runner, require):
    """The report of plumbing/_tool_check.check_tools; ToolError (with the report) when a requirement is not met."""
    result = dict(report_tools(runner, require), changed=False)
    if result["missing"]:
        raise ToolError("check the tools failed: %s" % "; ".join(result["missing"]), **result)
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "require": {"type": "list", "elements": "str", "default": [], "choices": list(REQUIREMENTS)},
            "timeout": timeout_spec(60),
        },
        supports_check_mode=True,
    )
    run_module(module, "check the tools", ToolRunner, lambda runner: check_tools(runner, module.params["require"]))


if __name__ == "__main__":
    main()
