# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""Arm-side BlueField tools: ``bfver``, ``bfvcheck``, ``mlxbf-bootctl``.

* bfver: corpus/bf-release/bf3-bfver-doca291.txt; bfvcheck: corpus/bfvcheck/FORMAT-from-source.md
  (bfscripts bfvcheck L43-L183) and bf3-doca292-no-issues.txt; mlxbf-bootctl:
  corpus/mlxbf-bootctl/bf2-*.txt.
* They exist on the DPU's Arm only; on a host node they are "command not found" (exit 127).
* bfvcheck's "recommended" versions are those of the installed bundle (its ATF/UEFI and bundled NIC
  firmware); FW "installed" is the running firmware, so a bundle firmware that waits for a power
  cycle produces the pending-firmware warning.
"""

from __future__ import annotations

from dpusim import state
from dpusim.tools._common import ToolExit, check_arm_up, emit, run_tool

NAMES = ("bfver", "bfvcheck", "mlxbf-bootctl")

RED, RESET = "\033[0;31m", "\033[0m"


def arm_card(prog: str) -> state.Card:
    node = state.load_node()
    if node.role != "dpu":
        raise ToolExit("%s: command not found" % prog, rc=127, stream="stderr")
    check_arm_up(node)
    return node.cards[0]


def bfver(card: state.Card) -> str:
    os_ = card.data["dpu_os"]
    return ("--%s\nBlueField ATF version: %s\nBlueField UEFI version: %s\nBlueField BSP version: %s\n\n"
            "OS Release Version: %s\n" % (os_["boot_device"], os_["atf"], os_["uefi"], os_["bsp"], os_["release"]))


def bfvcheck(card: state.Card) -> str:
    os_ = card.data["dpu_os"]
    fw = card.data["firmware"]
    flashed = fw["banks"][fw["active_bank"]]["version"]
    running = fw["running"]["version"]
    recommended_fw = os_.get("nic_fw_version") or flashed
    out = ["Beginning version check...\n\n", "-RECOMMENDED VERSIONS-\n",
           "ATF: %s\nUEFI: %s\nFW: %s\n\n" % (os_["atf"], os_["uefi"], recommended_fw),
           "-INSTALLED VERSIONS-\n", "ATF: %s\nUEFI: %s\nFW: %s\n\n" % (os_["atf"], os_["uefi"], running)]
    issues = False
    if flashed != running and flashed == recommended_fw:
        out.append("WARNING: The firmware has been updated to %s, but the chassis\n"
                   "must be power cycled for changes to take effect.\n" % flashed)
        issues = True
    elif running != recommended_fw:
        out.append("%sWARNING: FW VERSION DOES NOT MATCH RECOMMENDED!%s\n\n" % (RED, RESET))
        issues = True
    out.append("Version check complete.\n")
    if not issues:
        out.append("No issues found.\n")
    return "".join(out)


def bootctl(card: state.Card) -> str:
    os_ = card.data["dpu_os"]
    primary = os_["boot_device"]
    backup = primary[:-1] + ("0" if primary.endswith("1") else "1")
    return ("primary: %s\nbackup: %s\nboot-bus-width: x8\nreset to x1 after reboot: FALSE\nwatchdog-swap: disabled\n"
            "lifecycle state: %s\nsecure boot key free slots: 3\n" % (primary, backup, card.ident("lifecycle")))


def body(argv: list[str], prog: str) -> int:
    card = arm_card(prog)
    if prog == "bfver":
        emit(bfver(card))
    elif prog == "bfvcheck":
        emit(bfvcheck(card))
    else:
        if argv:
            raise ToolExit("mlxbf-bootctl: '%s' is not modelled by the twin (no arguments are)" % " ".join(argv),
                           stream="stderr")
        emit(bootctl(card))
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
