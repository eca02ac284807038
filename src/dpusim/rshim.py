# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""The BlueField rshim as the host sees it: ``/dev/rshimN/misc`` (read, write) and ``/dev/rshimN/boot`` (push).

Layout of misc: corpus/rshim/FORMAT-from-source.md (rshim-user-space rshim_fuse.c misc read:
``%-16s`` keys; BF_MODE, UP_TIME, SECURE_NIC_MODE only on BlueField-3; DISPLAY_LEVEL 1 adds
BOOT_RESET_SKIP/PEER_MAC/PXE_ID/VLAN_ID/CLEAR_ON_READ; DISPLAY_LEVEL 2 adds the log banner and the
log lines ``" %s[%s]: %s"`` from rshim_log.c). Verified by rshim/bf3-misc-display-level-2-log.txt
(whose copy lost the leading space of the log lines, see its notes).

Writes (``echo "KEY VALUE" > misc``): DISPLAY_LEVEL, BOOT_MODE, BOOT_TIMEOUT, DROP_MODE,
CLEAR_ON_READ, BOOT_RESET_SKIP and ``SW_RESET 1`` (the Arm reboots; the DPU node loses its runtime
settings). Ownership: the host sees no rshim device while the BMC owns it (fault ``rshim_busy``
or ``card.rshim.owner == "bmc"``) or after ``mlxprivhost --disable_rshim`` took effect.

The boot log lines are those of real captures: an eMMC boot as in bf3-misc-display-level-2-log,
a BFB install as in bfb-install/bf3-bf-bundle-2.7.0-with-bfcfg (BlueField-3) and the BlueField-2
bfb-install fixture in tests/unit/fixtures/parsers/bfb-install (no PSC lines on a BlueField-2).
"""

from __future__ import annotations

import time

from dpusim import clock, device, faults

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

EMMC_BOOT = [
    ("INFO", "PSC", "PSC BL1 START"),
    ("INFO", "BL2", "start"),
    ("INFO", "BL2", "boot mode (emmc)"),
    ("INFO", "BL2", "VDD_CPU: 870 mV"),
    ("INFO", "BL2", "VDDQ: 1120 mV"),
    ("INFO", "BL2", "DDR POST passed"),
    ("INFO", "BL2", "UEFI loaded"),
    ("INFO", "BL31", "start"),
    ("INFO", "BL31", "lifecycle {lifecycle}"),
    ("INFO", "BL31", "runtime"),
    ("INFO", "BL31", "MB ping success"),
    ("INFO", "UEFI", "eMMC init"),
    ("INFO", "UEFI", "eMMC probed"),
    ("INFO", "UEFI", "UPVS valid"),
    ("INFO", "UEFI", "PCIe enum start"),
    ("INFO", "UEFI", "PCIe enum end"),
    ("INFO", "UEFI", "UEFI Secure Boot (disabled)"),
    ("INFO", "UEFI", "PK configured"),
    ("INFO", "UEFI", "Redfish enabled"),
    ("INFO", "UEFI", "DPU-BMC RF credentials not found"),
    ("INFO", "UEFI", "exit Boot Service"),
]
OS_UP = [("INFO", "MISC", "Linux up"), ("INFO", "MISC", "DPU is ready")]

# BlueField-3 BFB boot: corpus/bfb-install/bf3-bf-bundle-2.7.0-with-bfcfg.txt
BFB_BOOT = [
    ("INFO", "PSC", "PSC BL1 START"),
    ("INFO", "BL2", "start"),
    ("INFO", "BL2", "boot mode (rshim)"),
    ("INFO", "BL2", "VDDQ: 1120 mV"),
    ("INFO", "BL2", "DDR POST passed"),
    ("INFO", "BL2", "UEFI loaded"),
    ("INFO", "BL31", "start"),
    ("INFO", "BL31", "lifecycle {lifecycle}"),
    ("INFO", "BL31", "VDD: 850 mV"),
    ("INFO", "BL31", "runtime"),
    ("INFO", "BL31", "MB ping success"),
    ("INFO", "UEFI", "eMMC init"),
    ("INFO", "UEFI", "eMMC probed"),
    ("INFO", "UEFI", "UPVS valid"),
    ("INFO", "UEFI", "PMI: updates started"),
    ("INFO", "UEFI", "PMI: total updates: 1"),
    ("INFO", "UEFI", "PMI: updates completed, status 0"),
    ("INFO", "UEFI", "PCIe enum start"),
    ("INFO", "UEFI", "PCIe enum end"),
    ("INFO", "UEFI", "UEFI Secure Boot "),
    ("INFO", "UEFI", "PK configured"),
    ("INFO", "UEFI", "Redfish enabled"),
    ("INFO", "UEFI", "exit Boot Service"),
]


# BlueField-2 BFB boot: tests/unit/fixtures/parsers/bfb-install/bf2-fwbundle-3.2.0-nic-fw-version.txt
# (a real bfb-install of a BlueField-2, public text ref 53494898244).
BFB_BOOT_BF2 = [
    ("INFO", "BL2", "start"),
    ("INFO", "BL2", "boot mode (rshim)"),
    ("INFO", "BL2", "DDR POST passed"),
    ("INFO", "BL2", "UEFI loaded"),
    ("INFO", "BL31", "start"),
    ("INFO", "BL31", "lifecycle {lifecycle}"),
    ("INFO", "BL31", "runtime"),
    ("INFO", "UEFI", "UPVS valid"),
    ("INFO", "UEFI", "eMMC init"),
    ("INFO", "UEFI", "eMMC probed"),
    ("INFO", "UEFI", "PMI: updates started"),
    ("INFO", "UEFI", "PMI: total updates: 1"),
    ("INFO", "UEFI", "PMI: updates completed, status 0"),
    ("INFO", "UEFI", "PCIe enum start"),
    ("INFO", "UEFI", "PCIe enum end"),
    ("INFO", "UEFI", "UEFI Secure Boot (disabled)"),
    ("INFO", "UEFI", "Redfish enabled"),
    ("INFO", "UEFI", "exit Boot Service"),
]
# BlueField-2 eMMC boot: ASSUMED to be the BFB boot above with "boot mode (emmc)" and without the
# PMI capsule-update lines (no BlueField-2 eMMC boot log in the corpus).
EMMC_BOOT_BF2 = [("INFO", "BL2", "boot mode (emmc)") if x[2] == "boot mode (rshim)" else x
                 for x in BFB_BOOT_BF2 if not x[2].startswith("PMI:")]


def bfb_boot(card: Any) -> list[tuple[str, str, str]]:
    return BFB_BOOT if card.profile["generation"] >= 3 else BFB_BOOT_BF2


def emmc_boot(card: Any) -> list[tuple[str, str, str]]:
    return EMMC_BOOT if card.profile["generation"] >= 3 else EMMC_BOOT_BF2


class RshimError(Exception):
    pass


def format_line(entry: list[str] | tuple[str, str, str]) -> str:
    return " %s[%s]: %s" % tuple(entry)


def expand(card: Any, lines: list[tuple[str, str, str]]) -> list[list[str]]:
    out = []
    for level, module, text in lines:
        if module == "PSC" and card.profile["generation"] < 3:
            continue
        out.append([level, module, text.format(lifecycle=card.ident("lifecycle") or "GA Secured")])
    return out


def rshim_state(card: Any) -> dict[str, Any]:
    return card.data.setdefault("rshim", {"owner": None, "misc": {}, "log": []})


def host_visible(node: Any, card: Any) -> bool:
    """Does the host see /dev/rshimN for this card?"""
    if node.role != "host" or not card.is_bluefield:
        return False
    if faults.active(node, "rshim_busy", card) is not None or rshim_state(card).get("owner") == "bmc":
        return False
    return not card.data["privhost"]["current"].get("disable_rshim")


def find_card(node: Any, name: str) -> Any:
    """``rshim0`` or ``/dev/rshim0`` -> the card; RshimError naming the device otherwise."""
    want = name if name.startswith("/") else "/dev/" + name
    for card in node.cards:
        entry = node.card_entry(card)
        if entry.get("rshim") == want and host_visible(node, card):
            return card
    raise RshimError(want)


def uptime(card: Any) -> int:
    arm = card.data.setdefault("arm", {})
    base = int(arm.get("uptime_base", 0))
    scale = clock.scale()
    booted = arm.get("booted_at")
    if not scale or booted is None:
        return base
    return base + int((time.time() - booted) / scale)


def misc_value(misc: dict[str, Any], key: str, default: Any) -> Any:
    return misc.get(key, default)


def render_misc(node: Any, card: Any, consume: bool = True) -> str:
    """The text of ``cat /dev/rshimN/misc``; with CLEAR_ON_READ 1 the log is cleared by the read."""
    prof = card.profile
    rs = rshim_state(card)
    misc = rs.setdefault("misc", {})
    level = int(misc_value(misc, "DISPLAY_LEVEL", 0))
    bf3 = prof["generation"] >= 3
    entry = node.card_entry(card)
    bus = entry["pci"].split(":")[1]
    out = ["%-16s%d (0:basic, 1:advanced, 2:log)\n" % ("DISPLAY_LEVEL", level)]
    if bf3:
        mode = rs.get("bf_mode")
        if mode is None:
            mode = "DPU mode" if device.dpu_mode(card) else "NIC mode"
        out.append("%-16s%s\n" % ("BF_MODE", mode))
    out.append("%-16s%d (0:rshim, 1:emmc, 2:emmc-boot-swap)\n" % ("BOOT_MODE", int(misc_value(misc, "BOOT_MODE", 1))))
    out.append("%-16s%d (seconds)\n" % ("BOOT_TIMEOUT", int(misc_value(misc, "BOOT_TIMEOUT", 150))))
    out.append("%-16s%d (seconds)\n" % ("USB_TIMEOUT", int(misc_value(misc, "USB_TIMEOUT", 40))))
    out.append("%-16s%d (0:normal, 1:drop)\n" % ("DROP_MODE", int(misc_value(misc, "DROP_MODE", 0))))
    out.append("%-16s%d (1: reset)\n" % ("SW_RESET", 0))
    out.append("%-16s%s\n" % ("DEV_NAME", misc.get("DEV_NAME") or "pcie-0000:%s:00.%d" % (bus, prof["rshim_function"])))
    out.append("%-16sBlueField-%d(Rev %d)\n" % ("DEV_INFO", prof["generation"], prof["chip_rev"]))
    out.append("%-16s%s\n" % ("OPN_STR", card.ident("opn_str") or "N/A"))
    if bf3:
        out.append("%-16s%d(s)\n" % ("UP_TIME", uptime(card)))
        out.append("%-16s%d (0:no, 1:yes)\n" % ("SECURE_NIC_MODE", int(misc_value(misc, "SECURE_NIC_MODE", 0))))
    out.append("%-16s%d (1: send Force command)\n" % ("FORCE_CMD", 0))
    if level == 1:
        out.append("%-16s%d (1: skip)\n" % ("BOOT_RESET_SKIP", int(misc_value(misc, "BOOT_RESET_SKIP", 0))))
        out.append("%-16s%s (rw)\n" % ("PEER_MAC", misc.get("PEER_MAC", "00:1a:ca:ff:ff:01")))
        out.append("%-16s0x%08x (rw)\n" % ("PXE_ID", int(misc_value(misc, "PXE_ID", 0))))
        out.append("%-16s%s (rw)\n" % ("VLAN_ID", misc.get("VLAN_ID", "0 0")))
        out.append("%-16s%d (0:no, 1:yes)\n" % ("CLEAR_ON_READ", int(misc_value(misc, "CLEAR_ON_READ", 0))))
    if level == 2:
        out.append("---------------------------------------\n")
        out.append("            Log Messages\n")
        out.append("---------------------------------------\n")
        for line in rs.get("log", []):
            out.append(format_line(line) + "\n")
        if consume and int(misc_value(misc, "CLEAR_ON_READ", 0)):
            rs["log"] = []
    return "".join(out)


WRITABLE = {"DISPLAY_LEVEL", "BOOT_MODE", "BOOT_TIMEOUT", "USB_TIMEOUT", "DROP_MODE", "CLEAR_ON_READ",
            "BOOT_RESET_SKIP", "PXE_ID", "VLAN_ID", "PEER_MAC", "SW_RESET", "FORCE_CMD"}


def write_misc(node: Any, card: Any, text: str) -> None:
    """Apply ``KEY VALUE`` written to misc. Raises RshimError for what the driver rejects."""
    parts = text.strip().split(None, 1)
    if len(parts) != 2 or parts[0] not in WRITABLE:
        raise RshimError("Invalid argument")
    key, value = parts
    rs = rshim_state(card)
    if key == "SW_RESET":
        if value.strip() == "1":
            arm_boot(node, card, emmc_boot(card))
        return
    if key in ("PEER_MAC", "VLAN_ID"):
        rs["misc"][key] = value.strip()
        return
    try:
        rs["misc"][key] = int(value.strip(), 0)
    except ValueError as exc:
        raise RshimError("Invalid argument") from exc


def arm_boot(node: Any, card: Any, boot_lines: list[tuple[str, str, str]],
             extra: list[tuple[str, str, str]] = ()) -> None:
    """The Arm reboots: log the boot, bump arm_boot_id; fault dpu_never_returns leaves it down."""
    rs = rshim_state(card)
    card.data["arm_boot_id"] = card.data.get("arm_boot_id", 0) + 1
    arm = card.data.setdefault("arm", {})
    if faults.active(node, "dpu_never_returns", card) is not None:
        arm["state"] = "down"
        rs["log"] = rs.get("log", []) + expand(card, boot_lines[:2])
        return
    arm["state"] = "running"
    arm["booted_at"] = time.time()
    arm["uptime_base"] = 0
    rs["log"] = rs.get("log", []) + expand(card, list(boot_lines) + list(extra) + OS_UP)
