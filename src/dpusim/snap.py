"""SNAP storage emulation as the twin models it: what the SNAP pod on the DPU exposes to the GPU host.

On a BlueField, NVMe SNAP emulates an NVMe controller on the host's PCIe bus; its namespaces are backed by
SPDK bdevs, here remote NVMe-oF/TCP namespaces attached with ``bdev_nvme_attach_controller``. The twin reads
the two RPC-init files the SNAP container runs at start (``<config_dir>/spdk_rpc_init.conf`` and
``snap_rpc_init.conf``; config_dir ``/etc/nvda_snap`` under the kubelet's files root) and, while the SNAP
container runs, records in the CARD's state (``card.json`` key ``snap``, shared with the paired GPU host) the
emulated controllers and the namespaces the host sees. The record is cleared when the SNAP pod is removed or
its container is down (crashed and kept down); a crash that the kubelet restarts shows the namespace again at
the next reconcile.

Commands understood (one per line, ``#`` comments ignored; the forms the role's templates write, which follow
the SPDK RPC and snap_rpc.py option names):

* ``bdev_nvme_attach_controller -b NAME -t tcp -a ADDR [-f ipv4] [-s PORT] -n NQN`` -> bdevs ``NAMEn1``
  (SPDK names the bdev of namespace N of controller NAME ``NAMEnN``; the twin's remote target has one
  namespace);
* ``nvme_subsystem_create --nqn NQN [--mn MODEL] [--sn SERIAL]`` (DOCA SNAP-4 service guide: a subsystem is
  defined by its serial number, model number and NQN; the host reads them through Identify Controller);
  ``nvme_namespace_create -b BDEV -n NSID --nqn NQN``;
  ``nvme_controller_create --nqn NQN --ctrl NAME --pf_id N [--suspended]``;
  ``nvme_controller_attach_ns -c NAME -n NSID``; ``nvme_controller_resume -c NAME``.

A namespace is visible to the host when its bdev comes from a declared TCP target, it is attached to a
controller, and that controller is resumed. Anything else is left out and the reason kept in
``card.data["snap"]["problems"]`` (a real SNAP logs the failed RPC).

MODELLED, not captured: the remote target's namespace size (``TARGET_BLOCKS`` x 512 B, 1.00 TB: the twin has no
remote target to ask), the emulated controller's model string ``MODEL`` (no capture of a SNAP controller's
Identify data was found), its default serial (derived from the card directory) and firmware revision;
``--mn`` / ``--sn`` override model and serial.
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path

from dpusim import state

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

CONFIG_DIR = "etc/nvda_snap"
SPDK_FILE = "spdk_rpc_init.conf"
SNAP_FILE = "snap_rpc_init.conf"
IMAGE_REPO = "nvcr.io/nvidia/doca/doca_snap"
MODEL = "BlueField NVMe SNAP Controller"
FIRMWARE = "1.0"
BLOCK_SIZE = 512
TARGET_BLOCKS = 1953125000  # 1.00 TB at 512 B (modelled remote namespace)
EMPTY: dict[str, Any] = {"controllers": [], "namespaces": [], "problems": []}


def _opts(words: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        if word.startswith("-"):
            nxt = words[index + 1] if index + 1 < len(words) else ""
            if nxt and not nxt.startswith("-"):
                out[word] = nxt
                index += 2
                continue
            out[word] = ""
        index += 1
    return out


def _lines(path: Path) -> list[list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    rows = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            rows.append(shlex.split(line))
    return rows


def emulated(config_dir: Path, serial: str) -> dict[str, Any]:
    """What SNAP would expose with the RPC-init files in ``config_dir``: controllers, namespaces, problems."""
    bdevs: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for words in _lines(config_dir / SPDK_FILE):
        if words[0] != "bdev_nvme_attach_controller":
            continue
        opt = _opts(words[1:])
        if opt.get("-t", "").lower() != "tcp" or not opt.get("-a") or not opt.get("-n", "").startswith("nqn."):
            problems.append("bdev_nvme_attach_controller %s: needs -t tcp, -a ADDRESS and -n NQN"
                            % opt.get("-b", "?"))
            continue
        bdevs[opt["-b"] + "n1"] = {"address": opt["-a"], "port": int(opt.get("-s") or 4420),
                                   "target_nqn": opt["-n"]}
    namespaces: dict[int, dict[str, Any]] = {}
    controllers: dict[str, dict[str, Any]] = {}
    subsystem = ""
    model = MODEL
    for words in _lines(config_dir / SNAP_FILE):
        cmd, opt = words[0], _opts(words[1:])
        if cmd == "nvme_subsystem_create":  # --mn / --sn: the model and serial number the host reads
            subsystem = opt.get("--nqn", "")
            model, serial = opt.get("--mn") or model, opt.get("--sn") or serial
        elif cmd == "nvme_namespace_create":
            bdev, nsid = opt.get("-b", ""), int(opt.get("-n") or 0)
            if bdev not in bdevs:
                problems.append("nvme_namespace_create -b %s: no such bdev (no NVMe-oF/TCP target attached it)"
                                % bdev)
                continue
            namespaces[nsid] = dict(bdevs[bdev], bdev=bdev, nsid=nsid)
        elif cmd == "nvme_controller_create":
            controllers[opt.get("--ctrl", "")] = {"name": opt.get("--ctrl", ""), "pf_id": int(opt.get("--pf_id") or 0),
                                                  "nqn": opt.get("--nqn", subsystem), "namespaces": [],
                                                  "resumed": "--suspended" not in opt}
        elif cmd == "nvme_controller_attach_ns":
            ctrl, nsid = controllers.get(opt.get("-c", "")), int(opt.get("-n") or 0)
            if ctrl is None or nsid not in namespaces:
                problems.append("nvme_controller_attach_ns -c %s -n %s: unknown controller or namespace"
                                % (opt.get("-c"), opt.get("-n")))
                continue
            ctrl["namespaces"].append(nsid)
        elif cmd == "nvme_controller_resume":
            if opt.get("-c", "") in controllers:
                controllers[opt["-c"]]["resumed"] = True
    visible = []
    for index, ctrl in enumerate(sorted(controllers.values(), key=lambda c: c["pf_id"])):
        if not ctrl["resumed"]:
            continue
        for nsid in sorted(ctrl["namespaces"]):
            visible.append(dict(namespaces[nsid], controller=ctrl["name"], instance=index, subsystem_nqn=ctrl["nqn"],
                                model=model, serial=serial, firmware=FIRMWARE,
                                block_size=BLOCK_SIZE, blocks=TARGET_BLOCKS, used_blocks=TARGET_BLOCKS))
    return {"controllers": sorted(controllers.values(), key=lambda c: c["pf_id"]), "namespaces": visible,
            "problems": problems}


def _snap_running(kub: dict[str, Any]) -> bool:
    for pod in kub.get("pods", {}).values():
        for ctr in pod["containers"]:
            if ctr["image"].startswith(IMAGE_REPO) and ctr["state"] == "CONTAINER_RUNNING":
                return True
    return False


def reconcile(node: state.Node, kub: dict[str, Any], files_root: Path) -> None:
    """Record on every card of this DPU what SNAP exposes now (empty when no SNAP container runs)."""
    if node.role != "dpu":
        return
    for card in node.cards:
        if _snap_running(kub):
            serial = "SNAP" + hashlib.sha1(str(card.dir).encode()).hexdigest()[:8].upper()
            record = emulated(files_root / CONFIG_DIR, serial)
        else:
            record = {key: list(value) for key, value in EMPTY.items()}
        if card.data.get("snap", EMPTY) != record:  # a card that never ran SNAP keeps no ``snap`` key
            card.data["snap"] = record


def host_namespaces(node: state.Node) -> list[dict[str, Any]]:
    """The emulated namespaces the GPU host of these cards sees (``nvme list``)."""
    out = []
    for card in node.cards:
        out.extend((card.data.get("snap") or {}).get("namespaces", []))
    return out
