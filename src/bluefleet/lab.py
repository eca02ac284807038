"""``bluefleet lab``: the container lab (GPU-host + BlueField pairs wired like the hardware).

    bluefleet lab images [--force] [--print-env]   build what is missing (tags = hash of inputs)
    bluefleet lab up [--pairs N] [--prefix P] [--fabric-subnet CIDR]   images, containers, wiring, twin,
                                                   one twin BMC per DPU (lab_bmc.py), inventory
                                                   (DPU/VTEP/overlay/BMC addresses included)
    bluefleet lab wire [--pairs N] [--prefix P]    wiring + twin init of existing containers (Molecule prepare)
    bluefleet lab inventory [--pairs N] [--prefix P] [--inventory PATH]
    bluefleet lab status|summary [--prefix P]
    bluefleet lab down [--prefix P]                remove the lab's containers, network, volumes, inventory

Everything is idempotent: an interrupted ``up`` finishes when run again; a second ``up`` changes
nothing. Preconditions (Docker answers, root, the package mirror) are checked before anything is
created, and one message says what is missing and how to fix it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from bluefleet import lab_bmc, lab_images, lab_wiring
from bluefleet.lab_images import LabError
from bluefleet.lab_wiring import Topology

DEFAULT_INVENTORY = Path("inventories") / "lab" / "generated.yml"


def _out(msg: str) -> None:
    print(msg, flush=True)


def _inventory_path(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    return lab_images.repo_root() / DEFAULT_INVENTORY


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bluefleet lab", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    img = sub.add_parser("images", help="build the lab images that are missing")
    img.add_argument("--force", action="store_true", help="rebuild even when the tags exist")
    img.add_argument("--print-env", action="store_true",
                     help="print `export BLUEFLEET_*_IMAGE=...` lines (for molecule.yml) instead of a report")
    for name, text in (("up", "build/reuse images, create and wire the lab, write the inventory"),
                       ("wire", "wire and initialise existing containers (what Molecule's prepare runs)"),
                       ("inventory", "write the inventory for the lab"),
                       ("down", "remove the lab"),
                       ("status", "list the lab's containers, network and volumes"),
                       ("summary", "a short table: containers, links, twin answering, versions")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("--prefix", default=lab_wiring.DEFAULT_PREFIX, help="name prefix (default %(default)s)")
        if name in ("up", "wire", "inventory", "summary"):
            sp.add_argument("--pairs", type=int, default=lab_wiring.DEFAULT_PAIRS,
                            help="GPU-host + DPU pairs (default %(default)s)")
        if name in ("up", "wire"):
            sp.add_argument("--profile", default=lab_wiring.DEFAULT_PROFILE,
                            help="twin device profile (default %(default)s)")
        if name in ("up", "wire", "inventory"):
            sp.add_argument("--fabric-subnet", default=None,
                            help="the fabric network's IPv4 subnet; DPU i gets its host address i on p0 "
                                 f"(default {lab_wiring.DEFAULT_FABRIC_SUBNET} for prefix "
                                 f"{lab_wiring.DEFAULT_PREFIX}, a /24 of 192.168.51-249 derived from any other "
                                 "prefix)")
        if name in ("up", "inventory", "down"):
            sp.add_argument("--inventory", default=None,
                            help=f"inventory file to write/remove (default {DEFAULT_INVENTORY})")
    return p


# ------------------------------------------------------------------ commands
def cmd_images(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    images, timings = lab_images.ensure_images(force=args.force)
    if args.print_env:
        for key, value in images.as_env().items():
            _out(f"export {key}={value}")
        return 0
    for name, tag in (("base", images.base), ("gpu-host", images.gpu_host), ("dpu", images.dpu)):
        size = lab_images.image_size(tag) / 1e6
        how = f"built in {timings[name]:.1f} s" if name in timings else "reused"
        _out(f"{name:<9} {tag:<32} {size:6.0f} MB  {how}")
    _out(f"images ready in {time.monotonic() - t0:.1f} s")
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    topo = Topology(args.prefix, args.pairs, args.profile, args.fabric_subnet)
    t0 = time.monotonic()
    lab_images.require_root("wiring veths into the containers' network namespaces (ip link ... netns PID)")
    lab_images.require_docker()
    images, timings = lab_images.ensure_images()
    t1 = time.monotonic()
    changes = lab_wiring.bring_up(topo, images.gpu_host, images.dpu)
    inv = _inventory_path(args.inventory)
    changes += lab_bmc.bring_up(topo, images.dpu, inv.parent / ".state")
    lab_wiring.write_inventory(topo, inv)
    for line in changes:
        _out(f"  changed: {line}")
    built = ", ".join("{} {:.0f} s".format(*kv) for kv in timings.items()) or "all reused"
    now = time.monotonic()
    _out(f"lab {topo.prefix}: {topo.pairs} pair(s) up in {now - t0:.1f} s (images: {built}; lab: {now - t1:.1f} s); "
         f"changed={len(changes)}; inventory {inv}")
    return 0


def cmd_wire(args: argparse.Namespace) -> int:
    topo = Topology(args.prefix, args.pairs, args.profile, args.fabric_subnet)
    lab_images.require_root("wiring veths into the containers' network namespaces (ip link ... netns PID)")
    lab_images.require_docker()
    changes = lab_wiring.wire(topo)
    for line in changes:
        _out(f"  changed: {line}")
    _out(f"bluefleet lab wire: changed={len(changes)}")
    return 0


def cmd_inventory(args: argparse.Namespace) -> int:
    topo = Topology(args.prefix, args.pairs, fabric_subnet=args.fabric_subnet)
    inv = _inventory_path(args.inventory)
    lab_wiring.write_inventory(topo, inv)
    _out(f"wrote {inv}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    lab_images.require_docker()
    removed = lab_wiring.teardown(args.prefix)
    inv = _inventory_path(args.inventory)
    if inv.exists() and f'"bluefleet_lab_prefix": "{args.prefix}"' in inv.read_text():
        inv.unlink()
        removed.append(str(inv))
    psk = inv.parent / ".state" / f"{args.prefix}-ipsec-psk"  # lab_wiring.LAB_PSK's file
    if psk.exists():
        psk.unlink()
        removed.append(str(psk))
    removed += lab_bmc.remove_files(inv.parent / ".state", args.prefix)
    _out("lab {}: removed {}".format(args.prefix, ", ".join(removed) if removed else "nothing (no such lab)"))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    lab_images.require_docker()
    res = lab_wiring.lab_resources(args.prefix)
    if not any(res.values()):
        _out(f"lab {args.prefix}: not up")
        return 0
    for name in res["containers"]:
        info = lab_wiring.inspect_container(name) or {}
        status, image = info.get("State", {}).get("Status", "?"), info.get("Config", {}).get("Image")
        _out(f"{name:<24} {status:<10} {image}")
    _out("networks: %s" % (", ".join(res["networks"]) or "-"))
    _out("volumes:  %s" % (", ".join(res["volumes"]) or "-"))
    return 0


def _first_line(container: str, argv: list[str]) -> str:
    proc = lab_wiring.exec_in(container, argv, check=False, timeout=30)
    text = (proc.stdout or proc.stderr).strip()
    return text.splitlines()[0] if text else "?"


def _summary_row(name: str, role: str) -> tuple[list[str], bool]:
    info = lab_wiring.inspect_container(name)
    if info is None or not info["State"]["Running"]:
        return [name, role, "missing" if info is None else info["State"]["Status"], "-", "-", "-"], False
    wanted = [lab_wiring.HOST_NETDEV] if role == "host" else [lab_wiring.HOST_REPRESENTOR, lab_wiring.UPLINK]
    proc = lab_wiring.exec_in(name, ["ip", "-j", "link", "show"], check=False)
    links = {x["ifname"]: x for x in json.loads(proc.stdout or "[]")} if proc.returncode == 0 else {}
    link_txt, ok = [], True
    for ifname in wanted:
        state = links.get(ifname, {}).get("operstate", "absent")
        ok &= state == "UP"
        link_txt.append(f"{ifname} {state}")
    st = lab_wiring.exec_in(name, ["dpusim", "state"], check=False)
    try:
        twin_role = json.loads(st.stdout).get("node", {}).get("role") if st.returncode == 0 else None
    except (json.JSONDecodeError, AttributeError):
        twin_role = None
    twin = f"role {twin_role}" if twin_role else "not answering"
    ok &= twin_role == role
    fw = "card ?"
    mst = lab_wiring.exec_in(name, ["mst", "status", "-v"], check=False)
    dev = re.search(r"^(\S+)\s+(/dev/mst/mt\d+_pciconf\d+)\s", mst.stdout, re.M) if mst.returncode == 0 else None
    if dev:
        q = lab_wiring.exec_in(name, ["flint", "-d", dev.group(2), "q"], check=False)
        ver = re.search(r"^FW Version:\s+(\S+)", q.stdout, re.M)
        fw = f"{dev.group(1)} FW {ver.group(1) if ver else '?'}"
    else:
        ok = False
    if role == "dpu":
        ovs = re.sub(r"^.*\) ", "OVS ", _first_line(name, ["ovs-vswitchd", "--version"]))
        swan = re.sub(r"^.*strongSwan", "strongSwan", _first_line(name, ["swanctl", "--version"]))
        versions = f"{ovs}, {swan}"
    else:
        versions = _first_line(name, ["sh", "-c", ". /etc/os-release; echo Debian $VERSION_ID"])
    return [name, role, "running", ", ".join(link_txt), twin, f"{fw}; {versions}"], ok


def cmd_summary(args: argparse.Namespace) -> int:
    lab_images.require_docker()
    topo = Topology(args.prefix, args.pairs)
    rows = [["container", "role", "state", "links", "twin", "versions"]]
    all_ok = True
    bmcs = lab_bmc.applies(topo) and topo.mgmt in lab_wiring.lab_resources(topo.prefix)["networks"]
    for pair in topo.all_pairs():
        for name, role in ((pair.host, "host"), (pair.dpu, "dpu")):
            row, ok = _summary_row(name, role)
            rows.append(row)
            all_ok &= ok
        if bmcs:  # a lab brought up by `lab up` has its management network (Molecule's has no BMCs)
            row, ok = lab_bmc.summary_row(topo, pair)
            rows.append(row)
            all_ok &= ok
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        _out("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    verdict = (f"all {2 * topo.pairs} containers wired, twin answering"
               + (f", {topo.pairs} BMC(s) answering" if bmcs else "") if all_ok
               else "NOT healthy: see the rows above; `bluefleet lab up` repairs wiring")
    _out(f"lab {topo.prefix}: {verdict}")
    return 0 if all_ok else 1


COMMANDS = {"images": cmd_images, "up": cmd_up, "wire": cmd_wire, "inventory": cmd_inventory, "down": cmd_down,
            "status": cmd_status, "summary": cmd_summary}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.cmd](args)
    except LabError as exc:
        print(f"bluefleet lab {args.cmd}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
