# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""Node and card state of the device twin, stored as JSON under ``DPUSIM_ROOT``.

Layout (see ``docs/dpusim.md``)::

    $DPUSIM_ROOT/
        node.json        the node: role (host|dpu), the cards it sees, runtime settings, faults, replay
        node.lock        flock(2) lock for node.json
        bin/             the tool front-ends written by ``dpusim env``
        cards/card0/     default card directory (``--card-dir`` can point elsewhere)
            card.json    the card: profile, firmware banks, mlxconfig, privhost, rshim, DPU OS
            card.lock

A GPU host and its BlueField share ONE card: ``dpusim init --role host --card-dir SHARED`` in one
root and ``dpusim init --role dpu --card-dir SHARED`` in another make both sides read and write the
same ``card.json``. What lives in the card (firmware, non-volatile configuration, DPU OS version,
rshim, host restriction) is therefore seen from both sides; what lives in the node (runtime, i.e.
non-persistent, per-netdev settings such as QoS; faults) belongs to one OS instance.

Concurrency: every read-modify-write holds an exclusive ``flock`` on the node lock and on the lock
of each card (taken in a fixed order: node first, then cards by path), and every save writes a
temporary file in the same directory, fsyncs it and ``os.replace``-s it over the old file, so a
reader never sees a half-written file and two tools never lose each other's updates. Text written
into a host's ``$DPUSIM_ROOT/dev/rshimN/misc`` (``echo "SW_RESET 1" > .../misc``) is applied at the
next ``open_node``/``load_node`` of that root (``files.consume_writes``). Long
operations (burns, resets, bfb-install) must not sleep inside ``open_node``: do the state change,
leave the block, sleep, then open again.

Runtime state and reboots: ``node.data["runtime"]`` is cleared by ``dpusim reboot`` and
``dpusim power-cycle``. A DPU-role node also loses its runtime when its Arm OS reboots because of
something done from the host side (SW_RESET through rshim, bfb-install, a host power cycle): the
card carries ``arm_boot_id``, the DPU node remembers the id it last saw, and ``open_node`` clears
the runtime when they differ. Likewise a host node follows the card's ``power_cycles``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

from dpusim import driver, files, linux_state, profiles
from dpusim.jsondata import clone

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

ENV_ROOT = "DPUSIM_ROOT"
NODE_FILE = "node.json"
CARD_FILE = "card.json"
SCHEMA = 1
ROLES = ("host", "dpu")


class StateError(Exception):
    """The twin's state cannot be used (no root, node not initialised, corrupt file)."""


def root_dir(root: str | os.PathLike[str] | None = None) -> Path:
    """Return the node root: ``root`` if given, else ``$DPUSIM_ROOT``; raise ``StateError`` if neither."""
    value = os.fspath(root) if root is not None else os.environ.get(ENV_ROOT, "")
    if not value:
        raise StateError(
            "dpusim: DPUSIM_ROOT is not set; run: eval \"$(dpusim env --root DIR)\" and then "
            "dpusim init --profile NAME"
        )
    return Path(value).resolve()


def read_json(path: Path) -> dict[str, Any]:
    """Read a state file; a missing or corrupt file raises ``StateError`` naming it."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError as exc:
        raise StateError("dpusim: %s does not exist" % path) from exc
    except (OSError, ValueError) as exc:
        raise StateError("dpusim: cannot read %s: %s" % (path, exc)) from exc
    if not isinstance(data, dict):
        raise StateError("dpusim: %s does not hold a JSON object" % path)
    return data


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` atomically: temp file in the same directory, fsync, ``os.replace``."""
    import tempfile  # only on a write: a tool call that only reads starts without it

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _flock(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class Card:
    """One physical card (its ``card.json``), shared by the host and DPU roots that point at it."""

    def __init__(self, card_dir: Path, data: dict[str, Any]):
        self.dir = card_dir
        self.data = data
        self._original = clone(data)

    @property
    def profile_name(self) -> str:
        return self.data["profile"]

    @property
    def profile(self) -> dict[str, Any]:
        """The static device profile (``dpusim.profiles``) this card was made from."""
        return profiles.get(self.profile_name)

    @property
    def is_bluefield(self) -> bool:
        return bool(self.profile.get("bluefield"))

    def ident(self, key: str):
        """An identity value (part_number, description, base_guid, base_mac, guids_number, lifecycle,
        opn_str, security_attributes): the card's own ``identity`` override (one SKU of many) or the profile's."""
        return self.data.get("identity", {}).get(key, self.profile.get(key))

    def changed(self) -> bool:
        return self.data != self._original


class Node:
    """One OS instance (a GPU host or a DPU's Arm), holding one or more cards.

    Attributes: ``root`` (Path), ``data`` (the node dict), ``cards`` (list of ``Card``),
    ``role`` (``host`` or ``dpu``).
    """

    def __init__(self, root: Path, data: dict[str, Any], cards: list[Card]):
        self.root = root
        self.data = data
        self.cards = cards
        self._original = clone(data)

    @property
    def role(self) -> str:
        return self.data["role"]

    @property
    def runtime(self) -> dict[str, Any]:
        """Non-persistent settings of this OS instance; cleared by reboot and power cycle."""
        return self.data.setdefault("runtime", {})

    def runtime_for(self, netdev: str) -> dict[str, Any]:
        """The mutable runtime dict of one netdev (``runtime["netdevs"][netdev]``), created on demand."""
        return self.runtime.setdefault("netdevs", {}).setdefault(netdev, {})

    @property
    def faults(self) -> dict[str, Any]:
        """Active faults of this node: name -> parameters (see ``dpusim.faults``)."""
        return self.data.setdefault("faults", {})

    def card(self, index: int = 0) -> Card:
        try:
            return self.cards[index]
        except IndexError as exc:
            raise StateError("dpusim: node %s has no card #%d (it has %d)"
                             % (self.root, index, len(self.cards))) from exc

    def netdevs(self, card: Card | None = None) -> list[str]:
        """Netdev names this node sees on ``card`` (default: all cards), in profile order."""
        names: list[str] = []
        for c in [card] if card is not None else self.cards:
            entry = self.card_entry(c)
            names.extend(entry.get("netdevs", []))
        return names

    def card_entry(self, card: Card) -> dict[str, Any]:
        """The node's view of a card (mst name, PCI address, netdevs, rdma devices for this role)."""
        for entry in self.data["cards"]:
            if Path(entry["card_dir"]) == card.dir:
                return entry
        raise StateError("dpusim: card %s is not attached to node %s" % (card.dir, self.root))

    def changed(self) -> bool:
        return self.data != self._original


def node_file(root: Path) -> Path:
    return root / NODE_FILE


def is_initialised(root: Path) -> bool:
    return node_file(root).exists()


def _load_node_data(root: Path) -> dict[str, Any]:
    path = node_file(root)
    if not path.exists():
        raise StateError(
            "dpusim: node %s is not initialised; run: dpusim init --profile NAME [--role host|dpu]" % root
        )
    data = read_json(path)
    if data.get("schema") != SCHEMA:
        raise StateError("dpusim: %s has schema %r, this dpusim expects %r; re-run dpusim init"
                         % (path, data.get("schema"), SCHEMA))
    return data


@contextlib.contextmanager
def open_node(root: str | os.PathLike[str] | None = None, write: bool = True) -> Iterator[Node]:
    """Lock, load and (if ``write`` and something changed) save a node and its cards.

    Use for every read-modify-write. Do not sleep inside the block.
    """
    rdir = root_dir(root)
    with _flock(rdir / "node.lock"):
        data = _load_node_data(rdir)
        card_dirs = sorted({Path(entry["card_dir"]) for entry in data["cards"]})
        with contextlib.ExitStack() as stack:
            loaded: dict[Path, Card] = {}
            for cdir in card_dirs:
                stack.enter_context(_flock(cdir / "card.lock"))
                loaded[cdir] = Card(cdir, read_json(cdir / CARD_FILE))
            cards = [loaded[Path(entry["card_dir"])] for entry in data["cards"]]
            node = Node(rdir, data, cards)
            _sync_boot(node)
            written = files.consume_writes(node)
            if write:  # netdev sysfs (mtu, ecn) back to boot values after a reboot
                linux_state.sync_net_sysfs(node)
            if write:  # a DPU's mlx5 driver loads mlnx-bf.conf at the first call after a boot (dpusim.driver)
                driver.ensure_loaded(node)
            yield node
            if write or written:
                for card in loaded.values():
                    if card.changed():
                        write_json(card.dir / CARD_FILE, card.data)
                        files.render_card(node, card)
                if node.changed():
                    write_json(node_file(rdir), node.data)


def load_node(root: str | os.PathLike[str] | None = None) -> Node:
    """A read-only snapshot of a node and its cards (locks held only while reading)."""
    with open_node(root, write=False) as node:
        return node


def _sync_boot(node: Node) -> None:
    """Runtime settings are lost when the OS rebooted behind this root's back: a DPU node when its
    card's Arm rebooted (SW_RESET, bfb-install, FW reset, power cycle), a host node when the machine
    was power cycled from the DPU's root (both roots of a pair share the card's counters)."""
    if not node.cards:
        return
    if node.role == "dpu":
        boot_id = node.cards[0].data.get("arm_boot_id", 0)
        if node.data.get("seen_arm_boot_id") != boot_id:
            node.data["seen_arm_boot_id"] = boot_id
            node.data["runtime"] = {}
        return
    cycles = sum(c.data.get("power_cycles", 0) for c in node.cards)
    if node.data.get("seen_power_cycles", 0) != cycles:
        node.data["seen_power_cycles"] = cycles
        node.data["runtime"] = {}


def new_card_data(profile_name: str) -> dict[str, Any]:
    """Fresh card state from a profile: both firmware banks hold the profile's version."""
    prof = profiles.get(profile_name)
    fw = {
        "version": prof["fw_version"],
        "release_date": prof["fw_release_date"],
        "psid": prof["psid"],
        "device_id": prof["pci_device_id"],
        "roms": clone(prof.get("roms", [])),
    }
    card: dict[str, Any] = {
        "schema": SCHEMA,
        "profile": profile_name,
        # Dual flash banks: "running" is what the chip executes, "banks" what is on flash.
        # A burn writes the inactive bank and flips "active_bank"; the running image changes
        # only on a firmware reset / power cycle.
        "firmware": {
            "banks": [clone(fw), clone(fw)],
            "active_bank": 0,
            "running": clone(fw),
            "burn_in_progress": None,
        },
        # mlxconfig: "current" is what the firmware runs with, "next" what is stored in NV for the next boot.
        "mlxconfig": {
            "current": {name: p["default"] for name, p in prof["mlxconfig"].items()},
            "next": {name: p["default"] for name, p in prof["mlxconfig"].items()},
        },
        "privhost": {
            "level": "PRIVILEGED",
            "current": {"disable_rshim": False, "disable_tracer": False, "disable_port_owner": False,
                        "disable_counter_rd": False},
            "pending": {},
        },
        "arm_boot_id": 0,
        "power_cycles": 0,
    }
    if prof.get("bluefield"):
        card["rshim"] = {"owner": None, "misc": {"DISPLAY_LEVEL": 0, "BOOT_MODE": 1, "CLEAR_ON_READ": 0,
                                                  "BOOT_RESET_SKIP": 0, "DROP_MODE": 0},
                         "log": [], "boot_started_at": None}
        card["dpu_os"] = clone(prof["dpu_os"])
        card["arm"] = {"state": "running"}
    return card


def init_node(root: Path, profile_names: list[str], role: str, card_dirs: list[Path | None]) -> Node:
    """Create (or re-create) a node with one card per profile; reuse an existing shared card.json."""
    if role not in ROLES:
        raise StateError("dpusim: unknown role %r; use one of %s" % (role, ", ".join(ROLES)))
    root.mkdir(parents=True, exist_ok=True)
    entries = []
    rdma_base = 0
    for index, (pname, cdir) in enumerate(zip(profile_names, card_dirs, strict=True)):
        prof = profiles.get(pname)
        if role == "dpu" and not prof.get("bluefield"):
            raise StateError("dpusim: profile %s is not a BlueField; --role dpu needs bluefield2 or bluefield3" % pname)
        card_dir = (cdir if cdir is not None else root / "cards" / ("card%d" % index)).resolve()
        with _flock(card_dir / "card.lock"):
            path = card_dir / CARD_FILE
            if path.exists():
                existing = read_json(path)
                if existing.get("profile") != pname:
                    raise StateError(
                        "dpusim: %s already holds a %s card, not %s; use another --card-dir or remove it"
                        % (card_dir, existing.get("profile"), pname)
                    )
            else:
                write_json(path, new_card_data(pname))
        entries.append(profiles.role_view(pname, role, index, str(card_dir), rdma_base=rdma_base))
        rdma_base += prof["ports"]
    data = {"schema": SCHEMA, "role": role, "cards": entries, "runtime": {}, "faults": {}, "replay": None}
    with _flock(root / "node.lock"):
        write_json(node_file(root), data)
    node = load_node(root)
    for card in node.cards:
        files.render_card(node, card)
    files.link_node(node)
    driver.init_files(node)  # a DPU's /etc/mellanox/mlnx-bf.conf and /etc/init.d/openibd under the root
    with open_node(root) as node:
        pass  # the driver loads the file as the boot left it
    return node
