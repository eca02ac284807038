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
    strongSwan's C(swanctl), and the BFB installers C(bfb-install) (rshim-user-space) and C(doca-installer) (DOCA 3.x),
    and reads the versions that matter (C(flint --version), C(mstflint --version), the first line of
    C(swanctl --help)).
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
  description: One entry per tool family - C(mft), C(mstflint), C(strongswan), C(bfb_install), C(doca_installer) -
    each with C(present) (bool), C(path) (the program found, or null), C(version) (a string or null) and C(note)
    (why the version is null, or null).
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
  sample: {"mft": null, "mstflint": "4.21.0", "strongswan": "5.9.8", "bfb_install": null, "doca_installer": null}
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._tool_versions import at_least, parse_tool_version
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner, error_reason
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError, run_module, timeout_spec

PACKET_OFFLOAD_MIN = (5, 9, 10)
# family -> (program whose presence counts, argv that prints the version or None)
FAMILIES = {
    "mft": ("flint", ["flint", "--version"]),
    "mstflint": ("mstflint", ["mstflint", "--version"]),
    "strongswan": ("swanctl", ["swanctl", "--help"]),
    "bfb_install": ("bfb-install", None),
    "doca_installer": ("doca-installer", None),
}
ADVICE = {
    "firmware": "install NVIDIA MFT (mlxconfig, flint, mlxfwreset, mst) or the distribution's mstflint package "
                "(apt-get install mstflint: mstconfig, mstflint, mstfwreset, mstprivhost)",
    "mst": "mst comes with NVIDIA MFT only; with mstflint give the modules the card's PCI address (device option)",
    "ipsec_packet_offload": "hw_offload = packet needs strongSwan >= 5.9.10 (NVIDIA's BlueField image ships a 5.9.10 "
                            "build; Debian 12 has 5.9.8, Ubuntu 22.04 5.9.5): install the DOCA/BFB strongSwan or a "
                            "6.x, or set ipsec_hw_offload to yes (crypto offload; an older charon refuses 'packet' "
                            "and 'crypto')",
    "bfb_install": "install rshim-user-space (bfb-install) or DOCA 3.x's doca-installer on the host with the rshim",
}


def read_family(runner, program, argv):
    path = runner.which(program)
    entry = {"present": path is not None, "path": path, "version": None, "numbers": None, "note": None}
    if path is None:
        entry["note"] = "%s not found on PATH" % program
        return entry
    if argv is None:
        entry["note"] = "%s has no version option" % program
        return entry
    result = runner.run(argv)
    if error_reason(result):
        entry["note"] = "%s failed: %s" % (" ".join(argv), error_reason(result))
        return entry
    try:
        data = parse_tool_version(result.stdout)
    except ParseError as exc:
        entry["note"] = "%s: %s" % (" ".join(argv), exc)
        return entry
    entry["version"], entry["numbers"] = data["version"], data["numbers"]
    return entry


def check_tools(runner, require):
    tools = {name: read_family(runner, program, argv) for name, (program, argv) in FAMILIES.items()}
    firmware = "mft" if tools["mft"]["present"] else ("mstflint" if tools["mstflint"]["present"] else None)
    swan = tools["strongswan"]
    packet = bool(swan["numbers"]) and at_least(swan["numbers"], PACKET_OFFLOAD_MIN)
    met = {
        "firmware": firmware is not None,
        "mst": runner.which("mst") is not None,
        "ipsec_packet_offload": packet,
        "bfb_install": tools["bfb_install"]["present"] or tools["doca_installer"]["present"],
    }
    missing = []
    for need in require:
        if not met[need]:
            found = ""
            if need == "ipsec_packet_offload":
                found = " (found: %s)" % ("strongSwan %s" % swan["version"] if swan["version"] else swan["note"])
            missing.append("%s: %s%s" % (need, ADVICE[need], found))
    for entry in tools.values():
        entry.pop("numbers")
    result = {"changed": False, "firmware_tools": firmware, "tools": tools, "ipsec_packet_offload": packet,
              "missing": missing, "tool_versions": {name: entry["version"] for name, entry in tools.items()}}
    if missing:
        raise ToolError("check the tools failed: %s" % "; ".join(missing), **result)
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "require": {"type": "list", "elements": "str", "default": [],
                        "choices": ["firmware", "mst", "ipsec_packet_offload", "bfb_install"]},
            "timeout": timeout_spec(60),
        },
        supports_check_mode=True,
    )
    run_module(module, "check the tools", ToolRunner, lambda runner: check_tools(runner, module.params["require"]))


if __name__ == "__main__":
    main()
