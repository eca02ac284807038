# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""The ``dpusim`` command: set up, inspect and drive twin nodes.

    dpusim env --root DIR            write DIR/bin/<tool> front-ends, print shell exports
    dpusim init --profile NAME [--profile NAME ...] [--role host|dpu] [--card-dir DIR ...]
    dpusim state                     the node and its cards as JSON
    dpusim reboot | power-cycle      reboot this node's OS / power-cycle the machine
    dpusim fault set NAME [--tool T] [--seconds S] [--reads N] | clear [NAME] | list
    dpusim replay CAPTURE_DIR | --off
    dpusim make-image --kind nic-fw|bfb --profile NAME --version V [--psid P] [--corrupt] -o FILE
    dpusim rshim cat | write "SW_RESET 1" [--index N]   /dev/rshimN/misc of a host's BlueField
    dpusim tools                     list the tool names
    dpusim kubelet crash NAME [--stay-down] [--exit-code N]   a DOCA service's container dies
    dpusim kubelet metrics NAME      what the telemetry pod NAME's Prometheus endpoint answers now (no daemon)
    dpusim kubelet serve [--interval S]   the kubelet as a daemon: reconcile, run the stand-in processes (lab)
    dpusim bmc serve --listen HOST:PORT [--user U --password P] [--tls] [--firmware 23.10|24.10]
    dpusim bmc make-image --kind bmc-fw|erot-fw --version V [--corrupt] -o FILE
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import stat
import sys
from pathlib import Path

from dpusim import clock, device, faults, images, linux_state, profiles, replay, rshim, state, tools

# boot (configparser, subprocess) and kubelet (secrets, socket): imported by the subcommands that use them; the
# others (`dpusim fault set`, `state`, `rshim`, ...) start without them (tests/unit/dpusim/test_tool_dispatch.py)

BIN_TEMPLATE = """#!{python}
# dpusim front-end for {name!r}; written by `dpusim env`.
import sys
sys.path.insert(0, {src!r})
from dpusim.tool import run
sys.exit(run({name!r}, sys.argv[1:]))
"""


def compile_twin(package: Path) -> None:
    """Compile the twin's modules to bytecode, as pip compiles a package it installs: the front-ends start a Python
    for every tool call, and where ``PYTHONDONTWRITEBYTECODE`` is set (CI containers often set it) and nothing had
    compiled a source checkout, each call compiled every module it imported again (about 50 instead of 34 ms of
    CPU per call). Files already compiled are skipped; a folder that cannot be written is left as it is."""
    import compileall

    with contextlib.suppress(OSError):
        compileall.compile_dir(str(package), quiet=2)


def write_bin(root: Path) -> Path:
    """Create ``root/bin`` with one executable per tool name (shebang: this Python)."""
    bindir = root / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    (bindir / ".dpusim-bin").write_text("tool front-ends of dpusim; skipped by passthrough lookups\n")
    package = Path(__file__).resolve().parent
    compile_twin(package)
    src = str(package.parent)
    for name in tools.names():
        path = bindir / name
        path.write_text(BIN_TEMPLATE.format(python=sys.executable, name=name, src=src))
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bindir


def cmd_env(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    bindir = write_bin(root)
    print("export PATH=%s:$PATH" % shlex.quote(str(bindir)))
    print("export DPUSIM_ROOT=%s" % shlex.quote(str(root)))
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    root = state.root_dir(args.root)
    names = args.profile or ["bluefield3"]
    card_dirs: list[Path | None] = [Path(d) for d in (args.card_dir or [])]
    if len(card_dirs) > len(names):
        raise state.StateError("dpusim init: %d --card-dir for %d --profile" % (len(card_dirs), len(names)))
    card_dirs += [None] * (len(names) - len(card_dirs))
    node = state.init_node(root, names, args.role, card_dirs)
    for entry in node.data["cards"]:
        print("dpusim: %s %s card %d at %s (%s)" % (node.role, entry["profile"], entry["index"], entry["card_dir"],
                                                    entry["mst"]))
    return 0


def cmd_state(args: argparse.Namespace) -> int:
    node = state.load_node(args.root)
    out = {"root": str(node.root), "node": node.data,
           "cards": [{"dir": str(c.dir), **c.data} for c in node.cards]}
    print(json.dumps(out, indent=2, sort_keys=True))
    return 0


def _boot(root: Path) -> list:
    """The machine comes up: the kernel's boot values (netdev sysfs, drivers) first, then the enabled boot units,
    once the reboot's state is saved and the lock released (the units' tools open the node themselves)."""
    from dpusim import boot

    with state.open_node(root):
        pass
    return boot.run_boot_units(root)


def _report_units(units: list) -> None:
    """A unit that failed at boot does not stop the boot (as systemd): it is said on stderr, as `systemctl --failed`."""
    for unit in units:
        if unit["result"] in ("failed", "not run"):
            print("dpusim: boot unit %s %s: %s" % (unit["unit"], unit["result"], unit.get("error", "")),
                  file=sys.stderr)


def cmd_reboot(args: argparse.Namespace) -> int:
    clock.sleep("warm_reboot")
    with state.open_node(args.root) as node:
        result = device.node_reboot(node)
    units = _boot(node.root)
    print(json.dumps({"rebooted": True, "activated": result, "boot_units": units}, sort_keys=True))
    _report_units(units)
    return 0


def cmd_power_cycle(args: argparse.Namespace) -> int:
    clock.sleep("power_cycle")
    with state.open_node(args.root) as node:
        result = device.power_cycle(node)
    units = _boot(node.root)
    print(json.dumps({"power_cycled": True, "activated": result, "boot_units": units}, sort_keys=True))
    _report_units(units)
    return 0


def cmd_fault(args: argparse.Namespace) -> int:
    with state.open_node(args.root) as node:
        if args.action == "set":
            if not args.name:
                raise faults.FaultError("dpusim fault set: name a fault (%s)" % ", ".join(sorted(faults.FAULTS)))
            params: dict = {}
            if args.tool:
                params["tools"] = args.tool
            if args.seconds is not None:
                params["seconds"] = args.seconds
            if args.reads is not None:
                if args.reads < 1:
                    raise faults.FaultError("dpusim fault set: --reads %d: give a whole number >= 1" % args.reads)
                params["reads"] = args.reads
            faults.set_fault(node, args.name, params)
            print("dpusim: fault %s set" % faults.check_name(args.name))
        elif args.action == "clear":
            cleared = faults.clear_fault(node, args.name)
            print("dpusim: cleared %s" % (", ".join(cleared) if cleared else "nothing"))
        else:
            active = faults.listing(node)
            for name in sorted(faults.FAULTS):
                mark = "on " if name in active else "off"
                print("%s %-22s %s%s" % (mark, name, faults.FAULTS[name][1],
                                         (" " + json.dumps(active[name])) if active.get(name) else ""))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    root = state.root_dir(args.root)
    if args.off:
        print("dpusim: replay %s" % ("off" if replay.deactivate(root) else "was not on"))
        return 0
    if not args.capture:
        raise replay.ReplayError("dpusim replay: give a capture directory (or --off)")
    count = replay.activate(root, Path(args.capture))
    print("dpusim: replaying %d captured commands from %s" % (count, Path(args.capture).resolve()))
    return 0


def cmd_make_image(args: argparse.Namespace) -> int:
    path = images.make_image(args.kind, args.profile, args.version, Path(args.output), psid=args.psid,
                             corrupt=args.corrupt, nic_fw_version=args.nic_fw_version)
    print("dpusim: wrote %s" % path)
    return 0


def cmd_rshim(args: argparse.Namespace) -> int:
    """``cat /dev/rshimN/misc`` / ``echo TEXT > /dev/rshimN/misc`` on the twin (host role)."""
    name = "rshim%d" % args.index
    with state.open_node(args.root) as node:
        try:
            card = rshim.find_card(node, name)
        except rshim.RshimError:
            print("cat: /dev/%s/misc: No such file or directory" % name, file=sys.stderr)
            return 1
        if args.action == "cat":
            sys.stdout.write(rshim.render_misc(node, card))
            return 0
        try:
            rshim.write_misc(node, card, " ".join(args.text))
        except rshim.RshimError as exc:
            print("bash: echo: write error: %s" % exc, file=sys.stderr)
            return 1
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    for name in tools.names():
        print(name)
    return 0


def cmd_kubelet(args: argparse.Namespace) -> int:
    if args.action == "serve":
        from dpusim import kubelet_serve
        return kubelet_serve.serve(args.interval, args.root)
    if not args.name:
        raise ValueError("dpusim kubelet %s: give the container or pod name (see `crictl ps -a`)" % args.action)
    from dpusim import kubelet

    if args.action == "metrics":
        with state.open_node(args.root) as node:
            text = kubelet.metrics(node, args.name)
        sys.stdout.write(text)
        return 0
    with state.open_node(args.root) as node:
        ctr = kubelet.crash(node, args.name, exit_code=args.exit_code, stay_down=args.stay_down)
    print("%s %s exited (code %d)%s" % (ctr["name"], ctr["id"][:13], ctr["exit_code"],
                                        "; kept down (crash loop)" if args.stay_down else ""))
    return 0


def cmd_gpus(args: argparse.Namespace) -> int:
    with state.open_node(args.root) as node:
        linux_state.configure_gpus(node, args.count, args.driver, args.cuda)
    return 0


def cmd_netdev(args: argparse.Namespace) -> int:
    """``dpusim netdev set NAME ...``: tell the twin what a card netdev's Linux side holds (the lab records what
    Docker gave its veths); ``dpusim netdev show NAME`` prints the record."""
    with state.open_node(args.root, write=args.action == "set") as node:
        if args.action == "set":
            link = "up" if args.up else "down" if args.down else None
            record = linux_state.set_netdev(node, args.name, link=link, mtu=args.mtu, mac=args.mac,
                                            ipv4_add=args.ipv4, ipv4_flush=args.flush_ipv4)
        else:
            if linux_state.find_netdev(node, args.name) is None:
                raise ValueError("%s is not a netdev of this node's card(s)" % args.name)
            record = {"link": "up" if linux_state.link_up(node, args.name) else "down",
                      "mtu": linux_state.netdev_mtu(node, args.name),
                      "mac": linux_state.netdev_mac(node, {"name": args.name,
                                                           "mac": linux_state.find_netdev(node, args.name)["mac"]}),
                      "ipv4": linux_state.netdev_ipv4(node, args.name)}
    print(json.dumps(record, sort_keys=True))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dpusim", description="BlueField / ConnectX device twin")
    p.add_argument("--root", help="node root (default: $DPUSIM_ROOT)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=argparse.SUPPRESS, help="node root (default: $DPUSIM_ROOT)")
    sub = p.add_subparsers(dest="command", required=True)
    real_add = sub.add_parser

    def add_parser(name: str, **kwargs):
        if name != "env":
            kwargs.setdefault("parents", [common])
        return real_add(name, **kwargs)

    sub.add_parser = add_parser  # every sub-command also takes --root after its name
    s = sub.add_parser("env", help="write DIR/bin and print shell exports")
    s.add_argument("--root", required=True)
    s.set_defaults(func=cmd_env)
    s = sub.add_parser("init", help="create a node")
    s.add_argument("--profile", action="append", choices=profiles.NAMES, help="repeat for several cards")
    s.add_argument("--role", choices=state.ROLES, default="host")
    s.add_argument("--card-dir", action="append", help="shared card directory (host and DPU of one card)")
    s.set_defaults(func=cmd_init)
    for name, func, text in (("state", cmd_state, "print the state as JSON"),
                             ("reboot", cmd_reboot, "warm reboot of this node"),
                             ("power-cycle", cmd_power_cycle, "power cycle the machine")):
        s = sub.add_parser(name, help=text)
        s.set_defaults(func=func)
    s = sub.add_parser("fault", help="inject faults")
    s.add_argument("action", choices=("set", "clear", "list"))
    s.add_argument("name", nargs="?")
    s.add_argument("--tool", action="append")
    s.add_argument("--seconds", type=float)
    s.add_argument("--reads", type=int, help="links_training: how many reads see the ports DOWN (default 1)")
    s.set_defaults(func=cmd_fault)
    s = sub.add_parser("replay", help="answer from a bluefleet capture")
    s.add_argument("capture", nargs="?")
    s.add_argument("--off", action="store_true")
    s.set_defaults(func=cmd_replay)
    s = sub.add_parser("make-image", help="write a firmware image or BFB the twin accepts")
    s.add_argument("--kind", required=True, choices=images.KINDS)
    s.add_argument("--profile", required=True, choices=profiles.NAMES)
    s.add_argument("--version", required=True)
    s.add_argument("--psid")
    s.add_argument("--corrupt", action="store_true")
    s.add_argument("--nic-fw-version", help="bfb only: NIC firmware bundled (default: the profile's)")
    s.add_argument("-o", "--output", required=True)
    s.set_defaults(func=cmd_make_image)
    s = sub.add_parser("rshim", help="read (cat) or write /dev/rshimN/misc of this host's BlueField")
    s.add_argument("action", choices=("cat", "write"))
    s.add_argument("text", nargs="*", help='for write: e.g. SW_RESET 1')
    s.add_argument("--index", type=int, default=0)
    s.set_defaults(func=cmd_rshim)
    s = sub.add_parser("kubelet", help="the DPU's standalone kubelet: crash a service's container")
    s.add_argument("action", choices=("crash", "metrics", "serve"))
    s.add_argument("name", nargs="?", help="container name, id, or the pod name's prefix (crash, metrics)")
    s.add_argument("--interval", type=float, default=2.0, help="serve: seconds between reconciles")
    s.add_argument("--stay-down", action="store_true", help="the kubelet does not restart it (crash loop)")
    s.add_argument("--exit-code", type=int, default=1)
    s.set_defaults(func=cmd_kubelet)
    s = sub.add_parser("gpus", help="set a host node's GPU inventory")
    s.add_argument("count", type=int)
    s.add_argument("--driver", help="driver version (default 550.127.08)")
    s.add_argument("--cuda", help="CUDA version (default 12.4)")
    s.set_defaults(func=cmd_gpus)
    s = sub.add_parser("netdev", help="a card netdev's Linux-side record (link, MTU, MAC, IPv4) in the twin's root")
    s.add_argument("action", choices=("set", "show"))
    s.add_argument("name")
    updown = s.add_mutually_exclusive_group()
    updown.add_argument("--up", action="store_true")
    updown.add_argument("--down", action="store_true")
    s.add_argument("--mtu", type=int)
    s.add_argument("--mac")
    s.add_argument("--ipv4", action="append", help="ADDR/LEN; repeat")
    s.add_argument("--flush-ipv4", action="store_true", help="drop the recorded addresses first")
    s.set_defaults(func=cmd_netdev)
    from dpusim.bmc import cli as bmc_cli
    bmc_cli.add_parser(sub)
    s = sub.add_parser("tools", help="list tool names")
    s.set_defaults(func=cmd_tools)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if getattr(args, "root", None) is None:
        args.root = os.environ.get(state.ENV_ROOT) or None
    try:
        return int(args.func(args) or 0)
    except (state.StateError, faults.FaultError, replay.ReplayError, images.ImageError,
            profiles.ProfileError, linux_state.LinuxStateError, ValueError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except BrokenPipeError:  # `dpusim state | head`
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # silence the interpreter's flush at exit
        return 141


if __name__ == "__main__":
    sys.exit(main())
