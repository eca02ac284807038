"""``bluefleet capture DIR``: run the read-only queries on a real machine and save them for ``dpusim replay``.

Only commands that read are run (queries, never set/burn/reset). Each command runs with
``LC_ALL=C`` and a timeout; its stdout, stderr and exit status go to ``DIR/out/NNN.*`` and
``DIR/manifest.json`` (format 1, see docs/dpusim.md). Commands whose program is not installed are
listed under ``skipped``; a command that times out is recorded with rc 124.

Devices are found in sysfs (PCI vendor 0x15b3, function 0, the netdevs bound to them and the RDMA
devices in /sys/class/infiniband), or given with ``--device BDF`` (repeatable), ``--netdev NAME`` and
``--rdma-device NAME``. ``cma_roce_mode -d`` takes an RDMA device (``mlx5_0``, mlnx-tools' cma_roce_mode),
not a netdev.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

MELLANOX = "0x15b3"
# MFT's program -> the same program in Debian/Ubuntu's mstflint package (used when MFT's is not installed).
MSTFLINT_NAMES = {"mlxconfig": "mstconfig", "flint": "mstflint", "mlxfwreset": "mstfwreset",
                  "mlxprivhost": "mstprivhost"}


def installed_argv(argv: list[str]) -> list[str] | None:
    """``argv`` as it can run here: MFT's program, else mstflint's name of it, else None (not installed)."""
    if shutil.which(argv[0]) is not None:
        return argv
    other = MSTFLINT_NAMES.get(argv[0])
    if other and shutil.which(other) is not None:
        return [other] + argv[1:]
    return None


def discover_devices(sysfs: Path = Path("/sys/bus/pci/devices")) -> list[str]:
    """PCI addresses of function 0 of every Mellanox/NVIDIA networking device."""
    found = []
    if not sysfs.is_dir():
        return found
    for dev in sorted(sysfs.iterdir()):
        try:
            vendor = (dev / "vendor").read_text().strip()
            klass = (dev / "class").read_text().strip()
        except OSError:
            continue
        if vendor == MELLANOX and dev.name.endswith(".0") and klass.startswith(("0x02", "0x0c06")):
            found.append(dev.name)
    return found


def discover_netdevs(sysfs: Path = Path("/sys/class/net")) -> list[str]:
    found = []
    if not sysfs.is_dir():
        return found
    for net in sorted(sysfs.iterdir()):
        try:
            vendor = (net / "device" / "vendor").read_text().strip()
        except OSError:
            continue
        if vendor == MELLANOX:
            found.append(net.name)
    return found


def discover_rdma_devices(sysfs: Path = Path("/sys/class/infiniband")) -> list[str]:
    """RDMA device names (``mlx5_0``) of the machine."""
    if not sysfs.is_dir():
        return []
    return sorted(dev.name for dev in sysfs.iterdir())


def command_list(devices: list[str], netdevs: list[str], rdma_devices: list[str] = ()) -> list[list[str]]:
    """The read-only queries, in the order they run."""
    cmds: list[list[str]] = [
        ["mst", "status"],
        ["mst", "status", "-v"],
        ["mlxfwmanager", "--query"],
    ]
    for dev in devices:
        cmds += [
            ["mlxconfig", "-d", dev, "-e", "q"],
            ["mlxconfig", "-d", dev, "q"],
            ["flint", "-d", dev, "q"],
            ["mlxfwreset", "-d", dev, "q"],
            ["mlxprivhost", "-d", dev, "q"],
            ["devlink", "dev", "eswitch", "show", "pci/" + dev],
        ]
    cmds += [["bfver"], ["bfvcheck"], ["mlxbf-bootctl"], ["devlink", "dev", "show"], ["devlink", "port", "show"],
             ["ibdev2netdev"], ["ibv_devinfo"], ["rdma", "link", "show"], ["show_gids"], ["nvidia-smi"],
             ["nvidia-smi", "topo", "-m"]]
    for net in netdevs:
        cmds += [["ethtool", "-i", net], ["ethtool", "-k", net], ["mlnx_qos", "-i", net]]
    for rdma in rdma_devices:
        cmds += [["cma_roce_mode", "-d", rdma, "-p", "1"], ["cma_roce_tos", "-d", rdma, "-p", "1"]]
    return cmds


def run_capture(out_dir: Path, commands: list[list[str]], timeout: float) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "out").mkdir(exist_ok=True)
    env = dict(os.environ, LC_ALL="C")
    manifest: dict = {
        "format": 1,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "commands": [],
        "skipped": [],
    }
    for index, wanted in enumerate(commands):
        argv = installed_argv(wanted)
        if argv is None:
            manifest["skipped"].append({"argv": wanted, "reason": "not installed"})
            continue
        try:
            proc = subprocess.run(argv, capture_output=True, env=env, timeout=timeout, check=False)
            rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, stdout, stderr = 124, exc.stdout or b"", (exc.stderr or b"") + b"\n[bluefleet capture: timed out]\n"
        base = "out/%03d" % index
        (out_dir / (base + ".stdout")).write_bytes(stdout)
        (out_dir / (base + ".stderr")).write_bytes(stderr)
        manifest["commands"].append({"argv": argv, "rc": rc, "stdout": base + ".stdout", "stderr": base + ".stderr"})
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bluefleet capture", description=__doc__.splitlines()[0])
    p.add_argument("dir", help="output directory (created)")
    p.add_argument("--device", action="append", help="PCI address to query (default: found in sysfs)")
    p.add_argument("--netdev", action="append", help="netdev to query (default: found in sysfs)")
    p.add_argument("--rdma-device", action="append", help="RDMA device to query (default: found in sysfs)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per command (default 60)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    devices = args.device if args.device else discover_devices()
    netdevs = args.netdev if args.netdev else discover_netdevs()
    rdma = args.rdma_device if args.rdma_device else discover_rdma_devices()
    manifest = run_capture(Path(args.dir), command_list(devices, netdevs, rdma), args.timeout)
    print("bluefleet capture: %d commands saved, %d skipped (not installed), in %s"
          % (len(manifest["commands"]), len(manifest["skipped"]), Path(args.dir).resolve()))
    if not manifest["commands"]:
        print("bluefleet capture: nothing was captured: none of the tools is installed here", file=sys.stderr)
        return 1
    return 0
