# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""``bfb-install``: push a BFB through the host's rshim and follow the boot log.

Output layout: corpus/bfb-install/bf3-bf-bundle-2.7.0-with-bfcfg.txt (an older bfb-install:
no "Checking if ..." preamble, "Pushing bfb" with pv progress on the same line, "Collecting
BlueField booting status. Press Ctrl+C to stop" without the ellipsis newer scripts print, log lines
" %s[%s]: %s", stop at the first line matching Reboot|finished|DPU is ready|Linux up, or "In
Enhanced NIC mode" in NIC mode). Error texts: rshim/FORMAT-from-source.md (scripts/bfb-install).
The pv progress line is what pv prints at the end (size, elapsed, average rate, bar); its width
depends on the terminal, so transcript tests compare it by prefix only.

Timeline and state (hardware-facts.md section 3, "BFB install through host rshim" and the
bfb-build install.sh stages): push (~2 min), the DPU boots the BFB ("boot mode (rshim)"), installs
the OS, updates the NIC firmware (written to the inactive bank), "Installation finished"; then the
installer's ``mlxfwreset -l 3 --sync 1`` activates the new NIC firmware (unless fault
``power_cycle_required``: then it stays pending, as "Host power cycle is required"), the Arm
reboots from eMMC, "Linux up", "DPU is ready", and the DPU reports the bundle's OS release.

Modelled failures (no capture of their console text in the corpus; the strings are those
hardware-facts.md section 4 names): a BFB for another BlueField generation stops the boot with
``ERR[PSC]: Invalid FW Package``; a damaged BFB with ``ERR[PSC]: INTEGRITY_FAIL``; both end with
"BlueField Update Failed". Fault ``dpu_never_returns``: the log stops after the first boot lines
and bfb-install waits until BOOT_TIMEOUT (simulated), then fails the same way.
"""

from __future__ import annotations

import copy
from pathlib import Path

from dpusim import clock, device, faults, images, rshim, state
from dpusim.tools._common import ToolExit, emit, pop_flag, pop_value, run_tool

NAMES = ("bfb-install",)

USAGE = """Usage: bfb-install [options]
Options:
  -b, --bfb <bfb_file>           BFB image file to use.
  -c, --config <config_file>     Optional configuration file.
  -f, --rootfs <rootfs_file>     Optional rootfs file.
  -h, --help                     Show help message.
  -r, --rshim <device>           Rshim device, format [<ip>:<port>:]rshim<N>.
  -v, --verbose                  Enable verbose output.
"""

INSTALL = [
    ("INFO", "MISC", "Ubuntu installation started"),
    ("INFO", "MISC", "Installing OS image"),
]


def pv_line(size: int, seconds: float) -> str:
    gib = size / float(1 << 30)
    rate = size / seconds / float(1 << 20) if seconds else 0.0
    secs = int(seconds)
    return "%.2fGiB %d:%02d:%02d [%.1fMiB/s] [%s<=>%s]" % (gib, secs // 3600, secs // 60 % 60, secs % 60, rate,
                                                         " " * 11, " " * 128)


def follow(lines: list[list[str]], step: float) -> None:
    for line in lines:
        clock.sleep(step)
        emit(rshim.format_line(line) + "\n")


def body(argv: list[str], prog: str) -> int:
    argv = list(argv)
    if pop_flag(argv, "-h", "--help"):
        emit(USAGE)
        return 0
    bfb = pop_value(argv, "-b", "--bfb")
    cfg = pop_value(argv, "-c", "--config")
    rootfs = pop_value(argv, "-f", "--rootfs")
    rshim_name = pop_value(argv, "-r", "--rshim")
    pop_flag(argv, "-v", "--verbose")
    if argv:
        emit("Error: Invalid argument: %s\n" % argv[0], "stderr")
        emit(USAGE, "stderr")
        return 1
    if not bfb:
        raise ToolExit("Error: Need to provide either bfb or pldm file.")
    if not rshim_name:
        raise ToolExit("Error: Need to provide rshim device name.")
    rshim_node = rshim_name if rshim_name.startswith("/") else "/dev/" + rshim_name
    for path in (bfb, cfg, rootfs):
        if path and not Path(path).exists():
            raise ToolExit("Error: %s not found." % path)
    node = state.load_node()
    try:
        card = rshim.find_card(node, rshim_name)
    except rshim.RshimError as exc:
        raise ToolExit("Error: %s is not a valid rshim device." % rshim_node) from exc
    try:
        img = images.read_image(Path(bfb))
    except images.ImageError:
        img = None
    cfg_text = Path(cfg).read_text(errors="replace") if cfg else ""
    nic_mode = not device.dpu_mode(card)
    if nic_mode:
        emit("%s (%s) is in NIC mode\n" % (rshim_node, node.card_entry(card)["pci"][5:].rsplit(".", 1)[0]))
    size = int(img.get("bundle_size", images.BUNDLE_SIZE)) if img else Path(bfb).stat().st_size
    clock.sleep("bfb_push")
    emit("Pushing bfb %s\n" % pv_line(size, clock.DURATIONS["bfb_push"]))
    emit("Collecting BlueField booting status. Press Ctrl+C to stop\n")
    step = clock.DURATIONS["bfb_install"] / 40.0
    ok = img is not None and img["kind"] == "bfb" and img["intact"] \
        and int(img["generation"]) == card.profile["generation"]
    with state.open_node() as wnode:
        wcard = next(c for c in wnode.cards if c.dir == card.dir)
        never = faults.active(wnode, "dpu_never_returns", wcard) is not None
        rs = rshim.rshim_state(wcard)
        rs["misc"]["CLEAR_ON_READ"] = 1
        rs["misc"]["DISPLAY_LEVEL"] = 2
        wcard.data["arm"]["state"] = "installing"
    boot = rshim.expand(card, rshim.BFB_BOOT)
    if not ok or never:
        if img is None or img.get("kind") != "bfb" or not img["intact"]:
            reason = "INTEGRITY_FAIL"
        elif int(img["generation"]) != card.profile["generation"]:
            reason = "Invalid FW Package"
        else:
            reason = None
        shown = boot[:1] if reason else boot[:2]
        follow(shown, step)
        if reason:
            emit(rshim.format_line(["ERR", "PSC", reason]) + "\n")
        clock.sleep(float(rs["misc"].get("BOOT_TIMEOUT", 150)))
        with state.open_node() as wnode:
            wcard = next(c for c in wnode.cards if c.dir == card.dir)
            wcard.data["arm"]["state"] = "down"
            wcard.data["arm_boot_id"] = wcard.data.get("arm_boot_id", 0) + 1
            rshim.rshim_state(wcard)["misc"]["CLEAR_ON_READ"] = 0
        emit("BlueField Update Failed\n")
        return 1
    lines = list(boot)
    if cfg:
        lines.append(["INFO", "MISC", "Found bf.cfg"])
    lines += [list(x) for x in INSTALL]
    if "ubuntu_PASSWORD" in cfg_text:
        lines.append(["INFO", "MISC", "Changing the default password for user ubuntu"])
    lines.append(["INFO", "MISC", "Ubuntu installation completed"])
    lines.append(["INFO", "MISC", "Updating NIC firmware..."])
    lines.append(["INFO", "MISC", "NIC firmware update done"])
    lines.append(["INFO", "MISC", "In Enhanced NIC mode" if nic_mode else "Installation finished"])
    follow(lines, step)
    with state.open_node() as wnode:
        wcard = next(c for c in wnode.cards if c.dir == card.dir)
        install_bundle(wnode, wcard, img)
    return 0


def install_bundle(node: state.Node, card: state.Card, img: dict) -> None:
    """State after a successful install: OS release, NIC firmware, reboot of the Arm."""
    dpu_os = card.data["dpu_os"]
    dpu_os["release"] = img["release"]
    dpu_os["doca"] = img.get("doca") or dpu_os.get("doca")
    dpu_os["nic_fw_version"] = img.get("nic_fw_version")
    fw = card.data["firmware"]
    flashed = fw["banks"][fw["active_bank"]]
    if img.get("nic_fw_version") and img["nic_fw_version"] != flashed["version"]:
        new = copy.deepcopy(flashed)
        new.update(version=img["nic_fw_version"], release_date=None)
        new.pop("valid", None)
        inactive = 1 - fw["active_bank"]
        fw["banks"][inactive] = new
        fw["active_bank"] = inactive
        # install.sh fw_reset(): mlxfwreset -l 3 --sync 1 when supported, else "Host power cycle is required".
        if faults.active(node, "power_cycle_required", card) is None:
            fw["running"] = copy.deepcopy(new)
    rs = rshim.rshim_state(card)
    rs["misc"]["CLEAR_ON_READ"] = 0
    rs["log"] = [["INFO", "MISC", "Rebooting..."]]
    rshim.arm_boot(node, card, rshim.EMMC_BOOT)


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
