"""``bluefleet sim init -i INVENTORY``: create the device-twin roots of a simulated fleet.

The inventory plugin ``bluefleet.dpu.sim`` only reads (an inventory parse writes nothing); this command
is the one step that writes: for every host of the inventory whose twin root is missing or lacks a tool
front-end it runs ``dpusim init`` and ``dpusim env``, exactly as the plugin lays the fleet out (the
plugin's own option handling, environment variables included, and its ``layout()``). Existing roots are
kept, so it is safe to run again; ``bluefleet run`` runs it for a sim inventory.
"""

from __future__ import annotations

import argparse
import os
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
    args = p.parse_args(argv)
    try:
        created = init_fleet(args.inventory)
    except SimError as exc:
        print("bluefleet sim: %s" % exc, file=sys.stderr)
        return 2
    print("bluefleet sim: %d twin root(s) created under %s" % (len(created), args.inventory))
    return 0
