# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""``mst``: start, status, status -v.

Layout from corpus/mst/FORMAT-observed.md (MFT's mst is closed source; the layout is what the
verbatim samples show): fixed DEVICE_TYPE 24, MST max(longest+3, 9), PCI 10, RDMA 16, NET 40
(26 with the older MFT the BlueField-2 profile models, as in bf2-host-mst-status-v-fixture),
NUMA padded to 6; one blank line after every device row; the functions of a card are listed
last function first, as in both BlueField samples. ``mst`` is modelled as started at boot
(``mst start`` prints its messages and changes nothing else).
"""

from __future__ import annotations

from dpusim import state
from dpusim.tools._common import ToolExit, check_arm_up, emit, run_tool, short_bdf, visible_cards

NAMES = ("mst",)

START = (
    "Starting MST (Mellanox Software Tools) driver set\n"
    "Loading MST PCI module - Success\n"
    "Loading MST PCI configuration module - Success\n"
    "Create devices\n"
    "Unloading MST PCI module (unused) - Success\n"
)  # corpus/mst/cx4-mst-start.txt

MODULES = (
    "MST modules:\n"
    "------------\n"
    "    MST PCI module is not loaded\n"
    "    MST PCI configuration module loaded\n"
)


def rows(node: state.Node) -> list[dict]:
    out = []
    for card in visible_cards(node):
        prof = card.profile
        entry = node.card_entry(card)
        for fn in reversed(entry["functions"]):
            out.append({
                "type": "%s(rev:%d)" % (prof["device_type"], prof["chip_rev"]),
                "mst": fn["mst"],
                "pci": short_bdf(fn["pci"]),
                "rdma": fn["rdma"],
                "net": ",".join("net-" + n for n in fn["netdevs"]),
                "numa": str(entry["numa"]),
                "old": prof.get("mft_era") == "old",
            })
    return out


def render_status_v(node: state.Node) -> str:
    lines = [MODULES, "PCI devices:\n", "------------\n"]
    table = rows(node)
    mst_w = max([len(r["mst"]) + 3 for r in table] + [9])
    net_w = 26 if table and all(r["old"] for r in table) else 40
    fmt = "%-24s%-" + str(mst_w) + "s%-10s%-16s%-" + str(net_w) + "s%-6s\n"
    lines.append(fmt % ("DEVICE_TYPE", "MST", "PCI", "RDMA", "NET", "NUMA"))
    for r in table:
        lines.append(fmt % (r["type"], r["mst"], r["pci"], r["rdma"], r["net"], r["numa"]))
        lines.append("\n")
    return "".join(lines)


def render_status(node: state.Node) -> str:
    lines = [MODULES, "\n", "MST devices:\n", "------------\n"]
    for card in visible_cards(node):
        entry = node.card_entry(card)
        for fn in entry["functions"]:
            lines.append("%-33s- PCI configuration cycles access.\n" % fn["mst"])
            lines.append("%35sdomain:bus:dev.fn=%s addr.reg=88 data.reg=92 cr_bar.gw_offset=-1\n" % ("", fn["pci"]))
            lines.append("%35sChip revision is: %02X\n" % ("", card.profile["chip_rev"]))
    return "".join(lines)


def body(argv: list[str], prog: str) -> int:
    node = state.load_node()
    check_arm_up(node)
    if not argv:
        raise ToolExit("dpusim %s: give a command (start, status, status -v)" % prog, rc=1, stream="stderr")
    cmd, rest = argv[0], argv[1:]
    if cmd == "start":
        emit(START)
        return 0
    if cmd == "status":
        if rest in (["-v"], ["-vv"]):
            emit(render_status_v(node))
            return 0
        if not rest:
            emit(render_status(node))
            return 0
    raise ToolExit("dpusim %s: '%s' is not modelled by the twin (start, status, status -v are)"
                   % (prog, " ".join(argv)), rc=1, stream="stderr")


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
