# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""``mlxfwmanager`` / ``mstfwmanager`` (--query, -u -i IMAGE) and ``mlxup`` (same engine).

Layout: corpus/mlxfwmanager/FORMAT-from-source.md (mstflint mlxfwupdate/mlxfwmanager.cpp), verified
by bf2-online-u-update-required and cx7-mlxup-update-2-devices (update flow, progress lines,
"Restart needed for updates to take effect."). ROM versions print as %d.%d.%04d here (flint
prints the last field without padding). mlxfwmanager picks images by PSID: an image with another
PSID is simply "No matching image found" (no burn). An image for another device id is not offered
either. Updates go through the same dual-bank burn as flint; the running firmware changes only on
a reset (``FW (Running)`` row until then).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from dpusim import clock, faults, images, state
from dpusim.tools._common import (
    ToolExit,
    check_arm_up,
    emit,
    find_function,
    pop_flag,
    pop_value,
    privileged_for_write,
    run_tool,
    visible_cards,
)

NAMES = ("mlxfwmanager", "mstfwmanager", "mlxup")
ROM_ORDER = ("PXE", "UEFI", "UEFI Virtio blk", "UEFI Virtio net")


def rom_version(text: str) -> str:
    parts = text.split(".")
    if len(parts) == 3 and all(p.isdigit() for p in parts):
        return "%d.%d.%04d" % (int(parts[0]), int(parts[1]), int(parts[2]))
    return text


def matching_image(card: state.Card, imgs: list[dict]) -> dict | None:
    fw = card.data["firmware"]
    psid = fw["banks"][fw["active_bank"]]["psid"]
    for img in imgs:
        if img["kind"] == "nic-fw" and img["psid"] == psid and img["device_id"] == card.profile["pci_device_id"] \
                and img["intact"]:
            return img
    return None


def status_of(card: state.Card, img: dict | None) -> str:
    if img is None:
        return "No matching image found"
    fw = card.data["firmware"]
    flashed = fw["banks"][fw["active_bank"]]["version"]
    mine = tuple(int(x) for x in flashed.split("."))
    theirs = tuple(int(x) for x in img["version"].split("."))
    if theirs > mine:
        return "Update required"
    # An older image than the flash is not offered (tests/unit/fixtures/parsers/mlxfwmanager-query/
    # bf2-online-u-after-bfb-fw-running.txt: flash 24.47.1026, available 24.43.1014, "Up to date").
    return "Up to date"


def render_device(node: state.Node, card: state.Card, index: int, img: dict | None) -> str:
    prof = card.profile
    fw = card.data["firmware"]
    flashed = fw["banks"][fw["active_bank"]]
    running = fw["running"]
    entry = node.card_entry(card)
    out = ["\nDevice #%d:\n" % index, "----------\n\n"]
    out.append("  Device Type:      %s\n" % prof["device_type"])
    out.append("  Part Number:      %s\n" % card.ident("part_number"))
    out.append("  Description:      %s\n" % card.ident("description"))
    out.append("  PSID:             %s\n" % flashed["psid"])
    out.append("  PCI Device Name:  %s\n" % entry["mst"])
    if prof.get("bluefield"):
        out.append("  Base GUID:        %s\n" % card.ident("base_guid"))
    out.append("  Base MAC:         %s\n" % card.ident("base_mac"))
    out.append("  Versions:         %-14s %-14s\n" % ("Current", "Available"))
    out.append("     FW             %-14s %-14s\n" % (flashed["version"], img["version"] if img else "N/A"))
    if running["version"] != flashed["version"]:
        out.append("     %-12s   %-14s %-14s\n" % ("FW (Running)", running["version"], "N/A"))
    roms = {r["type"]: r["version"] for r in flashed.get("roms") or []}
    for name in ROM_ORDER:
        if name in roms:
            avail = rom_version(img["roms"][name]) if img and name in img.get("roms", {}) else "N/A"
            out.append("     %-12s   %-14s %-14s\n" % (name, rom_version(roms[name]), avail))
    out.append("\n  Status:           %s\n" % status_of(card, img))
    return "".join(out)


def load_images(paths: list[str]) -> list[dict]:
    found = []
    for p in paths:
        path = Path(p)
        files = sorted(path.iterdir()) if path.is_dir() else [path]
        for f in files:
            try:
                found.append(images.read_image(f))
            except images.ImageError as exc:
                if not path.is_dir():
                    raise ToolExit("-E- Failed to open image %s: %s" % (p, exc)) from exc
    return found


def update(node: state.Node, targets: list[tuple[int, state.Card, dict]], assume_yes: bool, prog: str) -> int:
    emit("\n---------\nFound %d device(s) requiring firmware update...\n\n" % len(targets))
    emit("Perform FW update? [y/N]: ")
    if assume_yes:
        emit("y\n")
    elif sys.stdin.readline().strip().lower() not in ("y", "yes"):
        emit("Aborted by user\n")
        return 1
    rc = 0
    for index, card, img in targets:
        emit("Device #%d: Updating FW ...     \n" % index)
        if not privileged_for_write(node, card):
            emit("FSMST_INITIALIZE -   FAILED      \n")
            emit("-E- Failed to update device #%d: the host is restricted (mlxprivhost)\n" % index)
            rc = 1
            continue
        emit("FSMST_INITIALIZE -   OK          \n")
        interrupted = faults.active(node, "interrupted_burn", card) is not None
        clock.sleep(clock.DURATIONS["burn"] / (2 if interrupted else 1))
        with state.open_node() as wnode:
            wcard = next(c for c in wnode.cards if c.dir == card.dir)
            fw = wcard.data["firmware"]
            new = {"version": img["version"], "release_date": None, "psid": img["psid"],
                   "device_id": img["device_id"], "roms": list(fw["banks"][fw["active_bank"]].get("roms") or [])}
            inactive = 1 - fw["active_bank"]
            if interrupted:
                fw["banks"][inactive] = dict(new, valid=False)
                faults.clear_fault(wnode, "interrupted_burn")
            else:
                fw["banks"][inactive] = new
                fw["active_bank"] = inactive
        if interrupted:
            raise ToolExit("", rc=130)
        emit("Writing Boot image component -   OK          \n")
        emit("Done\n")
    emit("\nRestart needed for updates to take effect.\n")
    if prog == "mlxup":
        emit("Log File: /tmp/mlxup_workdir/mlxup-%s_%d.log\n" % (time.strftime("%Y%m%d_%H%M%S"), os.getpid()))
    return rc


def body(argv: list[str], prog: str) -> int:
    argv = list(argv)
    dev = pop_value(argv, "-d", "--dev")
    image_args = []
    while True:
        value = pop_value(argv, "-i", "--image", "--image-dir", "-D")
        if value is None:
            break
        image_args.append(value)
    do_update = pop_flag(argv, "-u", "--update")
    assume_yes = pop_flag(argv, "-y", "--yes")
    query_only = pop_flag(argv, "--query", "-q")
    pop_flag(argv, "--online", "-f", "--force")
    if argv:
        raise ToolExit("-E- Unknown argument(s): %s" % " ".join(argv))
    if prog == "mlxup" and not query_only:
        do_update = True
    node = state.load_node()
    check_arm_up(node)
    if dev is not None:
        found = find_function(node, dev)
        if found is None:
            raise ToolExit("-E- Failed to open device: %s" % dev)
        cards = [found[0]]
    else:
        cards = visible_cards(node)
    imgs = load_images(image_args)
    emit("Querying Mellanox devices firmware ...\n")
    if not cards:
        emit("\n-E- No devices found or specified, mst might be stopped, run 'mst start' to load MST modules\n")
        return 1
    targets = []
    for i, card in enumerate(cards, 1):
        img = matching_image(card, imgs)
        emit(render_device(node, card, i, img))
        if img is not None and status_of(card, img) == "Update required":
            targets.append((i, card, img))
    if not do_update:
        emit("\n")
        return 0
    if not targets:
        emit("\n")
        return 0
    return update(node, targets, assume_yes, prog)


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
