# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which firmware, IPsec and BFB tools a node has, and whether they meet what a play needs.

``check_tools(runner, require)`` is what ``bluefleet.dpu.tools_info`` reports, and ``bluefleet.dpu.dpu_info``'s
section ``tools`` (so that preflight's one read of a node answers its tool check too). It reports; the caller
decides whether a requirement in ``missing`` fails the task (tools_info does).
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._tool_versions import at_least, parse_tool_version
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import error_reason

PACKET_OFFLOAD_MIN = (5, 9, 10)
REQUIREMENTS = ("firmware", "mst", "ipsec_packet_offload", "bfb_install")
# family -> (program whose presence counts, argv that prints the version or None)
FAMILIES = {
    "mft": ("flint", ["flint", "--version"]),
    "mstflint": ("mstflint", ["mstflint", "--version"]),
    "strongswan": ("swanctl", ["swanctl", "--help"]),
    "bfb_install": ("bfb-install", None),
    "doca_installer": ("doca-installer", None),
    "nftables": ("nft", ["nft", "--version"]),  # the firewall role loads and checks its ruleset with nft
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
    """The report (firmware_tools, tools, ipsec_packet_offload, missing, tool_versions); ``missing`` lists each
    requirement of ``require`` that is not met, with what to install."""
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
    return {"firmware_tools": firmware, "tools": tools, "ipsec_packet_offload": packet, "missing": missing,
            "tool_versions": {name: entry["version"] for name, entry in tools.items()}}
