# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""``bfb-install``: push a BFB through the host's rshim and follow the boot log.

Two script generations are modelled (``DPUSIM_BFB_INSTALL_STYLE``):

* ``legacy`` (default), as corpus/bfb-install/bf3-bf-bundle-2.7.0-with-bfcfg.txt: no preamble,
  "Pushing bfb" with the pv progress on the same line, "Collecting BlueField booting status. Press
  Ctrl+C to stop" without an ellipsis, "NIC firmware update done".
* ``current``, as scripts/bfb-install in rshim-user-space today and the BlueField-2 fixture
  tests/unit/fixtures/parsers/bfb-install/bf2-fwbundle-3.2.0-nic-fw-version.txt: "Checking if
  local host has root access...", "Checking if rshim driver is running locally...", "Pushing bfb"
  (" + cfg" when a config is given) with pv on the next line, the U+2026 ellipsis, and
  "NIC firmware update done: <version>".

Both stop at the first log line matching Reboot|finished|DPU is ready|Linux up (or "In Enhanced
NIC mode" in NIC mode). Error texts: rshim/FORMAT-from-source.md (scripts/bfb-install). The pv
line shows size, elapsed time and average rate as pv prints them (three significant digits); the
push takes size / the profile's ``rshim_push_mib_s`` (measured from the two captures). The bar
depends on the terminal width; transcript tests compare the line up to the bar.

Timeline and state (hardware-facts.md section 3, "BFB install through host rshim" and the
bfb-build install.sh stages): push, the DPU boots the BFB ("boot mode (rshim)"), installs the OS
(not for a firmware-only ``bf-fwbundle-*``), updates the NIC firmware (written to the inactive
bank), "Installation finished"; then the installer's ``mlxfwreset -l 3 --sync 1`` activates the new
NIC firmware where the profile says it can (``bfb_fw_reset``; BlueField-2: no, the firmware waits
for a power cycle as a real BlueField-2 capture shows) and unless fault ``power_cycle_required``;
the Arm reboots from eMMC, "Linux up", "DPU is ready", and the DPU reports the bundle's release.

Modelled failures (no capture of their console text; the strings are those hardware-facts.md
section 4 names): a BFB for another BlueField generation stops the boot with
``ERR[PSC]: Invalid FW Package``, a damaged one with ``ERR[PSC]: INTEGRITY_FAIL``; both end with
"BlueField Update Failed" after BOOT_TIMEOUT (simulated). Fault ``dpu_never_returns``: the log
stops after the first boot lines and the same failure follows.
"""

from __future__ import annotations

import os
from pathlib import Path

from dpusim import clock, device, faults, images, rshim, state
from dpusim.jsondata import clone
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


def pv_size(value: float, suffix: str = "") -> str:
    """pv's 3-significant-digit sizes: 1.41GiB, 693MiB, 11.7MiB/s, 6.19MiB/s."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    i = 0
    while value >= 1000 and i < len(units) - 1:
        value /= 1024.0
        i += 1
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return "%.*f%s%s" % (digits, value, units[i], suffix)


def pv_line(size: int, seconds: float) -> str:
    secs = int(seconds)
    rate = size / seconds if seconds else 0.0
    return "%s %d:%02d:%02d [%s] [%s<=>%s]" % (pv_size(size), secs // 3600, secs // 60 % 60, secs % 60,
                                             pv_size(rate, "/s"), " " * 11, " " * 128)


def style() -> str:
    value = os.environ.get("DPUSIM_BFB_INSTALL_STYLE", "legacy")
    if value not in ("legacy", "current"):
        raise ToolExit("dpusim: DPUSIM_BFB_INSTALL_STYLE must be legacy or current, not %r" % value, stream="stderr")
    return value


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
    current = style() == "current"
    if current:
        emit("Checking if local host has root access...\n")
        emit("Checking if rshim driver is running locally...\n")
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
    push_seconds = size / (float(card.profile.get("rshim_push_mib_s", 11.7)) * (1 << 20))
    clock.sleep(push_seconds)
    if current:
        emit("Pushing bfb%s\n %s\n" % (" + cfg" if cfg else "", pv_line(size, push_seconds)))
        emit("Collecting BlueField booting status. Press Ctrl+C to stop\u2026\n")
    else:
        emit("Pushing bfb %s\n" % pv_line(size, push_seconds))
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
    boot = rshim.expand(card, rshim.bfb_boot(card))
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
    if not firmware_only(img):
        lines += [list(x) for x in INSTALL]
        if "ubuntu_PASSWORD" in cfg_text:
            lines.append(["INFO", "MISC", "Changing the default password for user ubuntu"])
        lines.append(["INFO", "MISC", "Ubuntu installation completed"])
    lines.append(["INFO", "MISC", "Updating NIC firmware..."])
    lines.append(["INFO", "MISC", "NIC firmware update done: %s" % img["nic_fw_version"] if current
                  else "NIC firmware update done"])
    lines.append(["INFO", "MISC", "In Enhanced NIC mode" if nic_mode else "Installation finished"])
    follow(lines, step)
    with state.open_node() as wnode:
        wcard = next(c for c in wnode.cards if c.dir == card.dir)
        install_bundle(wnode, wcard, img)
    return 0


def firmware_only(img: dict) -> bool:
    """A BF-FW-Bundle (bf-fwbundle-*) carries firmware, no OS."""
    return img["release"].startswith("bf-fwbundle-")


def install_bundle(node: state.Node, card: state.Card, img: dict) -> None:
    """State after a successful install: OS release, NIC firmware, reboot of the Arm."""
    dpu_os = card.data["dpu_os"]
    if not firmware_only(img):
        dpu_os["release"] = img["release"]
        dpu_os["doca"] = img.get("doca") or dpu_os.get("doca")
    dpu_os["nic_fw_version"] = img.get("nic_fw_version")
    fw = card.data["firmware"]
    flashed = fw["banks"][fw["active_bank"]]
    if img.get("nic_fw_version") and img["nic_fw_version"] != flashed["version"]:
        new = clone(flashed)
        new.update(version=img["nic_fw_version"], release_date=None)
        new.pop("valid", None)
        inactive = 1 - fw["active_bank"]
        fw["banks"][inactive] = new
        fw["active_bank"] = inactive
        # install.sh fw_reset(): mlxfwreset -l 3 --sync 1 when supported, else "Host power cycle is required".
        if card.profile.get("bfb_fw_reset", True) and faults.active(node, "power_cycle_required", card) is None:
            fw["running"] = clone(new)
    rs = rshim.rshim_state(card)
    rs["misc"]["CLEAR_ON_READ"] = 0
    rs["log"] = [["INFO", "MISC", "Rebooting..."]]
    rshim.arm_boot(node, card, rshim.emmc_boot(card))


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
