"""``bluefleet sim init -i INVENTORY``: create the device-twin roots of a simulated fleet.

The inventory plugin ``bluefleet.dpu.sim`` only reads (an inventory parse writes nothing); this command
is the one step that writes: for every host of the inventory whose twin root is missing or lacks a tool
front-end it runs ``dpusim init`` and ``dpusim env``, exactly as the plugin lays the fleet out (the
plugin's own option handling, environment variables included, and its ``layout()``). Existing roots are
kept, so it is safe to run again; ``bluefleet run`` runs it for a sim inventory. It starts nothing that
outlives it.

``bluefleet sim bmc -i INVENTORY``: for a sim inventory with the plugin's ``bmc_port`` option, serve every
DPU's twin BMC (one ``dpusim bmc serve`` per DPU over its twin root, on the loopback port the inventory
names, the password from ``BLUEFLEET_BMC_PASSWORD``) in the foreground until interrupted.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from bluefleet._collection import ensure_importable


class SimError(Exception):
    """A sim inventory that cannot be initialised; the message names the input and the fix."""


def sim_sources(inventory: str | os.PathLike[str]) -> list[Path]:
    """The ``*.sim.yml`` files of an inventory (a file, or a folder holding them)."""
    path = Path(inventory)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.name.endswith(("sim.yml", "sim.yaml")))
    if path.name.endswith(("sim.yml", "sim.yaml")) and path.is_file():
        return [path]
    return []


def _plugin(source: Path):
    ensure_importable()
    from ansible.plugins.loader import init_plugin_loader, inventory_loader  # noqa: PLC0415

    from bluefleet._collection import collection_root  # noqa: PLC0415

    init_plugin_loader([str(collection_root() / ".collections"), *_collections_paths()])
    plugin = inventory_loader.get("bluefleet.dpu.sim")
    if plugin is None:
        raise SimError("the inventory plugin bluefleet.dpu.sim is not found: run `make venv`")
    from ansible.parsing.dataloader import DataLoader  # noqa: PLC0415

    plugin.loader = DataLoader()
    try:
        plugin._read_config_data(str(source))  # Ansible's own option handling (file, then environment)
    except Exception as exc:  # AnsibleError: an unreadable or invalid plugin file
        raise SimError("%s: %s" % (source, exc)) from exc
    return plugin


def _collections_paths() -> list[str]:
    from ansible import constants as C  # noqa: PLC0415,N812

    return [str(p) for p in (C.COLLECTIONS_PATHS or [])]


def init_fleet(inventory: str | os.PathLike[str]) -> list[str]:
    """Create the missing twin roots of every sim source of ``inventory``; returns the roots created."""
    sources = sim_sources(inventory)
    if not sources:
        raise SimError("%s holds no *.sim.yml inventory of the bluefleet.dpu.sim plugin: give a sim inventory "
                       "(e.g. inventories/sim)" % inventory)
    created: list[str] = []
    for source in sources:
        plugin = _plugin(source)
        dpusim = plugin._dpusim()
        tools = _run([dpusim, "tools"]).split()
        for host in plugin.layout(str(source)):
            if plugin.ready(host["root"], tools):
                continue
            if not os.path.exists(os.path.join(host["root"], "node.json")):
                _run([dpusim, "--root", host["root"], "init", "--profile", host["profile"], "--role", host["role"],
                      "--card-dir", host["card_dir"]])
                created.append(host["root"])
            _run([dpusim, "env", "--root", host["root"]])
    return created


def bmc_hosts(inventory: str | os.PathLike[str]) -> list[tuple[str, dict]]:
    """``(dpusim, host)`` for every DPU of the sim sources of ``inventory`` that names a twin BMC."""
    out = []
    for source in sim_sources(inventory):
        plugin = _plugin(source)
        dpusim = plugin._dpusim()
        out += [(dpusim, h) for h in plugin.layout(str(source)) if h.get("bmc_listen")]
    return out


def serve_bmcs(inventory: str | os.PathLike[str]) -> int:
    """Serve the twin BMCs of ``inventory`` until SIGINT/SIGTERM; 0 then, 2 when one cannot start."""
    password = os.environ.get("BLUEFLEET_BMC_PASSWORD")
    if not password:
        raise SimError("BLUEFLEET_BMC_PASSWORD is not set: export the password the BMCs take (the bmc_* modules "
                       "read the same variable), then run this again")
    init_fleet(inventory)  # the BMCs serve the DPUs' twin roots
    hosts = bmc_hosts(inventory)
    if not hosts:
        raise SimError("%s names no twin BMC: set bmc_port in its *.sim.yml (or BLUEFLEET_SIM_BMC_PORT)" % inventory)
    env = dict(os.environ, DPUSIM_BMC_PASSWORD=password)
    procs: list[tuple[str, subprocess.Popen]] = []

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        for dpusim, h in hosts:
            proc = subprocess.Popen([dpusim, "bmc", "serve", "--root", h["root"], "--listen", h["bmc_listen"],
                                     "--user", "root"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True)
            procs.append((h["name"], proc))
            line = proc.stdout.readline().strip() if proc.stdout else ""
            if proc.poll() is not None or not line.startswith("dpusim bmc: serving"):
                rest = proc.stdout.read() if proc.stdout else ""
                raise SimError("the BMC of %s did not start on %s: %s" % (h["name"], h["bmc_listen"],
                                                                          (line + " " + rest).strip()))
            print("bluefleet sim: %s BMC at http://%s" % (h["name"], h["bmc_listen"]), flush=True)
        print("bluefleet sim: %d BMC(s) serving; Ctrl-C (or SIGTERM) stops them" % len(procs), flush=True)
        while all(proc.poll() is None for _name, proc in procs):
            try:
                procs[0][1].wait(timeout=1)
            except subprocess.TimeoutExpired:
                continue
        ended = [name for name, proc in procs if proc.poll() is not None]
        raise SimError("the BMC of %s stopped by itself" % ", ".join(ended))
    except KeyboardInterrupt:
        return 0
    finally:
        for _name, proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for _name, proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _run(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SimError("%s failed: %s" % (" ".join(argv), exc)) from exc
    if proc.returncode != 0:
        raise SimError("%s failed (rc=%d): %s" % (" ".join(argv), proc.returncode,
                                                  (proc.stderr or proc.stdout).strip()))
    return proc.stdout


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bluefleet sim", description="the simulated fleet (device twins)")
    sub = p.add_subparsers(dest="action", required=True)
    s = sub.add_parser("init", help="create the twin roots of a sim inventory (existing ones are kept)")
    s.add_argument("-i", "--inventory", default="inventories/sim")
    s = sub.add_parser("bmc", help="serve the twin BMCs of a sim inventory with bmc_port, until interrupted")
    s.add_argument("-i", "--inventory", default="inventories/sim")
    args = p.parse_args(argv)
    try:
        if args.action == "bmc":
            return serve_bmcs(args.inventory)
        created = init_fleet(args.inventory)
    except SimError as exc:
        print("bluefleet sim: %s" % exc, file=sys.stderr)
        return 2
    print("bluefleet sim: %d twin root(s) created under %s" % (len(created), args.inventory))
    return 0
