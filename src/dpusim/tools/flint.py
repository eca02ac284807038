# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""``flint`` / ``mstflint``: q (query), burn (b), and ``-i IMAGE q``.

Query layout: corpus/flint/FORMAT-from-source.md (mstflint flint/subcommands.cpp), verified by the
verbatim BlueField-3 and ConnectX-7 queries. Error texts are mstflint's (flint/err_msgs.h
FLINT_PSID_ERROR, FLINT_OPEN_FWOPS_DEVICE_ERROR, FLINT_FS3_BURN_ERROR; fw_ops.cpp
"FW image file cannot be programmed to device %s, it is intended for: %s only"), and the
"already updated on flash, pending reset" refusal seen in public captures of flint on ConnectX-7.

Dual banks: a burn writes the inactive bank and makes it the boot bank; the running firmware is
unchanged until a firmware reset or power cycle (``dpusim.device``). Fault ``interrupted_burn``
stops a burn half way (the process dies with status 130): the inactive bank is left invalid and
the old firmware keeps running and stays the boot bank.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dpusim import clock, faults, images, profiles, state
from dpusim.jsondata import clone
from dpusim.tools._common import (
    ToolExit,
    check_arm_up,
    emit,
    find_function,
    pop_flag,
    pop_value,
    privileged_for_write,
    run_tool,
)

NAMES = ("flint", "mstflint")

LABEL = "%-23s%s\n"


def device_name(profile_name: str) -> str:
    return profiles.get(profile_name)["device_type"]


def rom_lines(roms: list[dict]) -> list[str]:
    out = []
    for i, rom in enumerate(roms):
        text = "type=%s version=%s cpu=%s" % (rom["type"], rom["version"], rom["cpu"])
        out.append(LABEL % ("Rom Info:" if i == 0 else "", text))
    return out


def render_query(card: state.Card) -> str:
    fw = card.data["firmware"]
    flashed = fw["banks"][fw["active_bank"]]
    running = fw["running"]
    out = [LABEL % ("Image type:", "FS4"), LABEL % ("FW Version:", flashed["version"])]
    if flashed["version"] != running["version"]:
        out.append(LABEL % ("FW Version(Running):", running["version"]))
    out.append(LABEL % ("FW Release Date:", flashed.get("release_date") or "N/A"))
    out.append(LABEL % ("Product Version:", flashed["version"]))
    out += rom_lines(flashed.get("roms") or [])
    out.append(LABEL % ("Description:", "UID                GuidsNumber"))
    out.append(LABEL % ("Base GUID:", "%s        %d" % (card.ident("base_guid"), card.ident("guids_number"))))
    out.append(LABEL % ("Base MAC:", "%s            %d" % (card.ident("base_mac"), card.ident("guids_number"))))
    out.append(LABEL % ("Image VSD:", "N/A"))
    out.append(LABEL % ("Device VSD:", "N/A"))
    out.append(LABEL % ("PSID:", flashed["psid"]))
    out.append(LABEL % ("Security Attributes:", card.ident("security_attributes") or "N/A"))
    return "".join(out)


def render_image_query(img: dict) -> str:
    """``flint -i FILE q`` of a twin image: the lines whose values the image carries."""
    prof = profiles.get(img["profile"]) if img.get("profile") in profiles.NAMES else {}
    out = [LABEL % ("Image type:", "FS4"), LABEL % ("FW Version:", img["version"]),
           LABEL % ("FW Release Date:", "N/A"), LABEL % ("Product Version:", img["version"])]
    out += rom_lines(prof.get("roms", []))
    out.append(LABEL % ("Image VSD:", "N/A"))
    out.append(LABEL % ("PSID:", img["psid"]))
    out.append(LABEL % ("Security Attributes:", prof.get("security_attributes") or "N/A"))
    return "".join(out)


def load_image(path: str) -> dict:
    try:
        img = images.read_image(Path(path))
    except images.ImageError as exc:
        reason = str(exc)
        if not Path(path).exists():
            reason = "No such file or directory"
        raise ToolExit("-E- Cannot open Image: %s. %s" % (path, reason)) from exc
    if img["kind"] != "nic-fw":
        raise ToolExit("-E- Cannot open Image: %s. Not a NIC firmware image (kind %s); a BFB goes through "
                       "bfb-install" % (path, img["kind"]))
    return img


def check_image_for(card: state.Card, img: dict, allow_psid_change: bool) -> None:
    """The checks flint makes before writing: integrity, device, PSID (order as in mstflint)."""
    if not img["intact"]:
        raise ToolExit("-E- Burning FS4 image failed: Bad CRC.")
    if img["device_id"] != card.profile["pci_device_id"]:
        raise ToolExit("-E- Burning FS4 image failed: FW image file cannot be programmed to device %s, "
                       "it is intended for: %s only" % (card.profile["device_type"], device_name(img["profile"])))


# flint/subcommands.cpp (mstflint @ b9d9e844): burnCbFs3Func -> CbCommon prints "\r<pre>%3d%%" while it writes,
# "\r<pre>OK  \n" at 100 and "\r<endStr>\n" at 101; the twin prints the percentages at quarter steps.
BURN_STEP = "Burning FW image without signatures - "


def progress(done: int) -> None:
    emit("\r%s%3d%%" % (BURN_STEP, done))


def burn(node: state.Node, card: state.Card, dev: str, img: dict, assume_yes: bool, allow_psid_change: bool) -> int:
    check_image_for(card, img, allow_psid_change)
    fw = card.data["firmware"]
    if fw["banks"][fw["active_bank"]] != fw["running"]:
        raise ToolExit("-E- Burning FS4 image failed: The firmware image was already updated on flash, pending reset.")
    flashed = fw["banks"][fw["active_bank"]]
    emit("\n    Current FW version on flash:  %s\n    New FW version:               %s\n"
         % (flashed["version"], img["version"]))
    if img["psid"] != flashed["psid"] and not allow_psid_change:
        emit("\n\n")
        raise ToolExit("-E- PSID mismatch. The PSID on flash (%s) differs from the PSID in the given image (%s)."
                       % (flashed["psid"], img["psid"]))
    if img["version"] == flashed["version"]:
        emit("\n    Note: The new FW version is the same as the current FW version on flash.\n")
    emit("\n Do you want to continue ? (y/n) [n] : ")
    if assume_yes:
        emit("y\n")
    elif sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise ToolExit("-E- Aborted by user.", rc=7)  # FLINT_BURN_ABORTED = 7
    if not privileged_for_write(node, card):
        emit("\n")
        raise ToolExit("-E- Burning FS4 image failed: the host is restricted (mlxprivhost); "
                       "burn from the DPU Arm side")
    emit("\n")
    progress(0)
    new = {"version": img["version"], "release_date": None, "psid": img["psid"], "device_id": img["device_id"],
           "roms": clone(card.profile.get("roms", []))}
    interrupted = faults.active(node, "interrupted_burn", card) is not None
    with state.open_node() as wnode:
        wcard = next(c for c in wnode.cards if c.dir == card.dir)
        if wcard.data["firmware"].get("burn_in_progress"):
            # Twin wording (no capture): a second writer while another burn holds the flash.
            raise ToolExit("\n-E- Burning FS4 image failed: the flash is being written by another process "
                           "(burn of %s in progress)" % wcard.data["firmware"]["burn_in_progress"]["version"])
        wcard.data["firmware"]["burn_in_progress"] = {"version": img["version"]}
    if interrupted:
        clock.sleep(clock.DURATIONS["burn"] / 2)
        progress(50)
        with state.open_node() as wnode:
            wcard = next(c for c in wnode.cards if c.dir == card.dir)
            wfw = wcard.data["firmware"]
            inactive = 1 - wfw["active_bank"]
            wfw["banks"][inactive] = dict(new, valid=False)
            wfw["burn_in_progress"] = None
            faults.clear_fault(wnode, "interrupted_burn")
        raise ToolExit("", rc=130)
    for done in (25, 50, 75):
        clock.sleep(clock.DURATIONS["burn"] / 4)
        progress(done)
    clock.sleep(clock.DURATIONS["burn"] / 4)
    with state.open_node() as wnode:
        wcard = next(c for c in wnode.cards if c.dir == card.dir)
        wfw = wcard.data["firmware"]
        inactive = 1 - wfw["active_bank"]
        wfw["banks"][inactive] = new
        wfw["active_bank"] = inactive
        wfw["burn_in_progress"] = None
    emit("\r%sOK  \n" % BURN_STEP)  # CbCommon(100)
    emit("\rRestoring signature                     - OK\n")  # CbCommon(101): burnCbFs3Func's endStr
    emit("-I- To load new FW run mlxfwreset or reboot machine.\n")
    return 0


def body(argv: list[str], prog: str) -> int:
    argv = list(argv)
    device = pop_value(argv, "-d", "--device")
    image = pop_value(argv, "-i", "--image")
    assume_yes = pop_flag(argv, "-y", "--yes")
    allow_psid_change = pop_flag(argv, "--allow_psid_change", "-allow_psid_change")
    pop_flag(argv, "--no", "-no")
    if not argv:
        raise ToolExit("-E- No command found.")
    cmd = argv[0]
    if cmd not in ("q", "query", "b", "burn"):
        raise ToolExit("-E- Invalid command: %s" % cmd)
    if cmd in ("q", "query") and device is None:
        if image is None:
            raise ToolExit("-E- Please specify either Device or Image.")
        emit(render_image_query(load_image(image)))
        return 0
    if device is None:
        raise ToolExit("-E- Please specify Device.")
    node = state.load_node()
    check_arm_up(node)
    found = find_function(node, device)
    if found is None:
        # FLINT_OPEN_FWOPS_DEVICE_ERROR "Cannot open Device: %s. %s" with the mtcr reason.
        raise ToolExit("-E- Cannot open Device: %s. No such file or directory" % device)
    card = found[0]
    if cmd in ("q", "query"):
        emit(render_query(card))
        return 0
    if image is None:
        raise ToolExit("-E- Command \"burn\" requires both image and device to be specified.")
    return burn(node, card, device, load_image(image), assume_yes, allow_psid_change)


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
