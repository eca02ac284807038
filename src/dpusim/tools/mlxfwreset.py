# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""``mlxfwreset`` / ``mstfwreset``: q (query), r / reset [-l LEVEL] [-t TYPE] [--sync N] [-y].

Texts: mstflint small_utils (cmd_reg_mfrl.py query_text "{0}: {1:<62}-{2:<14}{3}", reset_sync_query_text;
mstfwreset.py "The reset level for device, {dev} is:", "Continue with reset?[y/N] ", step lines
"-I- %-40s-" + "Done"), cross-checked with corpus/mlxfwreset/cx7-mlxfwreset-reset-y.txt.

Supported levels per profile (``mlxfwreset`` key): BlueField-3 as a published ``mlxfwreset q`` of a
BlueField-3 (DOCA 2.9.2) shows them (0, 3, 4 supported; sync 1 "Driver is the owner" only).
Level 0 (live patch) is reported Supported only while a pending firmware differs from the running
one in the last version field alone, and then activates that firmware only (conservative model of
LFWP); what each other level activates is in ``dpusim.device``.

Query layout by the profile's ``mlxfwreset_layout`` (override ``DPUSIM_MLXFWRESET_LAYOUT``):
``2022`` the MFRL/MCAM text above (``Reset-sync (...)``, two owners); ``2025`` the MROQ branch of
mstflint >= 4.33 / MFT >= 4.30 (mstfwreset.py query: ``The following query is relevant only for
reset-type N:``; cmd_reg_mroq.py print_query_text: ``Reset sync (...)`` with ``NIC Driver is the
owner`` and ``FW is the owner``, ``Reset request method (...)``; cmd_reg_mrsi.py query_text:
``Reset-reason:`` and ``Timestamp (number of clock cycles) since last cold reset:``).
"""

from __future__ import annotations

import os
import sys

from dpusim import clock, device, state
from dpusim.tools._common import (
    ToolExit,
    check_arm_up,
    emit,
    find_function,
    pop_flag,
    pop_value,
    privileged_for_write,
    run_tool,
    session_closed,
)

NAMES = ("mlxfwreset", "mstfwreset")

LEVELS = [
    (0, 'Driver, PCI link, network link will remain up ("live-Patch")'),
    (1, 'Only ARM side will not remain up ("Immediate reset").'),
    (3, "Driver restart and PCI reset"),
    (4, "Warm Reboot"),
]
TYPES = [
    (0, "Full chip reset"),
    (1, "Phy-less reset (keep network port active during reset)"),
    (2, "NIC only reset (for SoC devices)"),
    (3, "ARM only reset"),
    (4, "ARM OS shut down"),
]
ROW = "{0}: {1:<62}-{2:<14}{3}\n"
SYNC_ROW = "{}: {:<62}-{:<14}\n"  # cmd_reg_mroq.py: a row with no default column


def live_patchable(card: state.Card) -> bool:
    fw = card.data["firmware"]
    boot, run = fw["banks"][fw["active_bank"]], fw["running"]
    if boot == run or not boot.get("valid", True):
        return False
    return boot["version"].split(".")[:2] == run["version"].split(".")[:2]


def support(card: state.Card) -> dict:
    prof = card.profile
    levels = {0: live_patchable(card), 1: False, 3: True, 4: True}
    types = {0: True, 1: False, 2: False, 3: False, 4: False}
    # BlueField: "Tool is the owner" Not supported, "Driver is the owner" Supported (published BF3 query);
    # ConnectX-7: both (the corpus reset sample ran level 3 without --sync).
    syncs = {0: not prof.get("bluefield"), 1: True}
    return {"levels": levels, "types": types, "syncs": syncs}


def default_level(sup: dict) -> int:
    for level in (0, 3, 4):
        if sup["levels"][level]:
            return level
    raise ToolExit("-E- There is no supported reset-level.")


def layout_of(card: state.Card) -> str:
    return os.environ.get("DPUSIM_MLXFWRESET_LAYOUT") or card.profile.get("mlxfwreset_layout", "2025")


def render_query(card: state.Card) -> str:
    sup = support(card)
    dflt = default_level(sup)
    mroq = layout_of(card) == "2025"
    out = ["The following query is relevant only for reset-type 0:\n\n"] if mroq else []
    out.append("Reset-levels:\n")
    for level, text in LEVELS:
        ok = sup["levels"][level]
        out.append(ROW.format(level, text, "Supported" if ok else "Not Supported",
                              "(default)" if level == dflt else ""))
    out.append("\nReset-types (relevant only for reset-levels 1,3,4):\n")
    for rtype, text in TYPES:
        ok = sup["types"][rtype]
        out.append(ROW.format(rtype, text, "Supported" if ok else "Not Supported", "(default)" if rtype == 0 else ""))
    out.append("\n")
    tool_owner = sup["syncs"][0]
    if mroq:
        return "".join(out) + render_mroq(card, sup)
    out.append("Reset-sync (relevant only for reset-level 3):\n")
    out.append(ROW.format(0, "Tool is the owner", "Supported" if tool_owner else "Not supported",
                          "(default)" if tool_owner else ""))
    out.append(ROW.format(1, "Driver is the owner", "Supported" if sup["syncs"][1] else "Not supported",
                          "" if tool_owner else "(default)"))
    out.append("\n")
    return "".join(out)


def render_mroq(card: state.Card, sup: dict) -> str:
    """The MROQ and MRSI sections (cmd_reg_mroq.py print_query_text, cmd_reg_mrsi.py query_text)."""
    out = ["Reset sync (relevant only for reset-level 3):\n"]
    default_found = False
    for flow, text in ((0, "Tool is the owner"), (1, "NIC Driver is the owner"), (2, "FW is the owner")):
        if not sup["syncs"].get(flow, False):
            out.append(SYNC_ROW.format(flow, text, "Not Supported"))
        elif flow == 2:
            out.append(SYNC_ROW.format(flow, text, "Supported"))
        else:
            out.append(ROW.format(flow, text, "Supported", "(default)" if not default_found else ""))
            default_found = True
    out.append("\n\nReset request method (relevant only for reset-level 3):\n")
    out.append(ROW.format(0, "Link Disable method", "Supported", "(default)"))
    out.append(ROW.format(1, "Hot reset (SBR)", "Not Supported", ""))
    # MRSI: reset_reason 1 is a warm reset; crts counts clock cycles since the last cold reset. The twin has no
    # cycle counter: it prints the number of warm resets since the last power cycle (0 after a cold boot).
    reason = "Warm reset" if card.data.get("last_reset") == "warm" else "Cold reset"
    out.append("\n\n{}: {:<51}{:<14}\n".format("Reset-reason", "", reason))
    out.append("{}: {:<7}{:<14}\n\n".format("Timestamp (number of clock cycles) since last cold reset", "",
                                                 card.data.get("warm_resets", 0)))
    return "".join(out)


STEPS_L3 = ["Sending Reset Command To Fw", "Stopping Driver", "Resetting PCI", "Starting Driver", "Restarting MST"]


def do_reset(node: state.Node, card: state.Card, dev: str, level: int | None, rtype: int, sync: int | None,
             assume_yes: bool) -> int:
    sup = support(card)
    if level is None:
        level = default_level(sup)
    if level not in sup["levels"]:
        raise ToolExit("-E- Reset-level '%d' doesn't exist in reset-levels !" % level)
    if not sup["levels"][level]:
        raise ToolExit("-E- Reset-level '%d' is not supported for device, %s." % (level, dev))
    if rtype not in sup["types"] or not sup["types"][rtype]:
        raise ToolExit("-E- Reset-level '%d' is not supported with reset-type '%d'." % (level, rtype))
    if sync is not None and level == 3 and not sup["syncs"].get(sync, False):
        raise ToolExit("-E- Reset-sync '%d' is not supported with reset-level '%d'." % (sync, level))
    if not privileged_for_write(node, card):
        raise ToolExit("-E- Failed to send MFRL: the host is restricted (mlxprivhost); reset from the DPU Arm side.")
    emit("\nThe reset level for device, %s is:\n\n%d: %s\n" % (dev, level, dict(LEVELS)[level]))
    emit("Continue with reset?[y/N] ")
    if assume_yes:
        emit("y\n")
    elif sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise ToolExit("-E- Aborted by user.")
    steps = STEPS_L3 if level == 3 else ["Sending Reset Command To Fw"]
    for step in steps:
        emit("-I- %-40s-" % step)
        clock.sleep(clock.DURATIONS["fw_reset"] / len(steps))
        emit("Done\n")
    with state.open_node() as wnode:
        wcard = next(c for c in wnode.cards if c.dir == card.dir)
        boot_before = wcard.data.get("arm_boot_id", 0)
        if level == 0:
            fw = wcard.data["firmware"]
            fw["running"] = dict(fw["banks"][fw["active_bank"]])
        else:
            device.firmware_reset(wnode, wcard, level)
            if level == 4 and wnode.role == "dpu":
                wnode.data["seen_arm_boot_id"] = wcard.data["arm_boot_id"]
        # Level 3 run in a BlueField's own Arm OS restarts that OS ("BlueField system reboot", NVIDIA DOCA "BlueField
        # Reset and Reboot Procedures": mlxfwreset -d DEV -y -l 3 --sync 1 r, run in the BlueField OS): the program
        # and the SSH session that ran it end with it. What the caller sees is what drop_session models (dpusim.tool).
        arm_restarted = level == 3 and wnode.role == "dpu" and wcard.data.get("arm_boot_id", 0) != boot_before
        hostname = str(wnode.data.get("hostname") or state.root_dir().name)
    if arm_restarted:
        return session_closed(hostname)
    if level in (0, 3):
        emit("-I- FW was loaded successfully.\n")
    emit("\n")
    return 0


def body(argv: list[str], prog: str) -> int:
    argv = list(argv)
    dev = pop_value(argv, "-d", "--device")
    level = pop_value(argv, "-l", "--level")
    rtype = pop_value(argv, "-t", "--type")
    sync = pop_value(argv, "--sync")
    assume_yes = pop_flag(argv, "-y", "--yes")
    if dev is None:
        raise ToolExit("-E- Please specify a device with -d")
    if not argv:
        raise ToolExit("-E- Please specify a command: q|query, r|reset")
    node = state.load_node()
    check_arm_up(node)
    found = find_function(node, dev)
    if found is None:
        raise ToolExit("-E- Failed to open device: %s. No such file or directory." % dev)
    card = found[0]
    cmd = argv[0]
    if cmd in ("q", "query"):
        emit(render_query(card))
        return 0
    if cmd in ("r", "reset"):
        try:
            lvl = int(level) if level is not None else None
            typ = int(rtype) if rtype is not None else 0
            syn = int(sync) if sync is not None else None
        except ValueError as exc:
            raise ToolExit("-E- -l, -t and --sync take numbers") from exc
        return do_reset(node, card, dev, lvl, typ, syn, assume_yes)
    raise ToolExit("-E- Unknown command: %s" % cmd)


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
