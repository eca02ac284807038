# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""Static device profiles: ``bluefield2``, ``bluefield3``, ``connectx7`` (one JSON file each).

Every value comes from ``../shared/corpus``; each JSON file's ``_sources`` says which sample.
Keys other helpers rely on (keep them stable):

``name``, ``bluefield`` (bool), ``generation``, ``device_type`` (as mst/mlxconfig print it),
``mst_chip`` (``mt41692``...), ``chip_rev``, ``pci_vendor_id``, ``pci_device_id``, ``lspci_name``,
``part_number``, ``description``, ``psid``, ``fw_version``, ``fw_release_date``, ``roms``,
``base_guid``, ``base_mac``, ``guids_number``, ``ports``, ``mlxconfig`` (name -> {type, default,
values?}), ``host`` / ``dpu`` (addressing per role), ``dpu_os`` (BlueField only).

``role_view(profile, role, index, card_dir)`` derives what ONE node sees of one card: mst device,
PCI functions with their RDMA device and netdevs. The node stores it in ``node.json`` under
``cards[i]`` so tools (and the twin-linux tools) read addresses from there.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

HERE = Path(__file__).resolve().parent
NAMES = ("bluefield2", "bluefield3", "connectx7")


class ProfileError(KeyError):
    """Unknown profile name."""

    def __str__(self) -> str:
        return str(self.args[0])


@functools.cache
def _load(name: str) -> dict[str, Any]:
    with open(HERE / (name + ".json"), encoding="utf-8") as fh:
        return json.load(fh)


def get(name: str) -> dict[str, Any]:
    """Return the profile ``name`` (a shared dict: do not mutate it)."""
    if name not in NAMES:
        raise ProfileError("dpusim: unknown profile %r; choose one of %s" % (name, ", ".join(NAMES)))
    return _load(name)


def _mac_plus(mac: str, n: int) -> str:
    return "%012x" % (int(mac, 16) + n)


def _colon_mac(mac: str) -> str:
    return ":".join(mac[i:i + 2] for i in range(0, 12, 2))


def role_view(name: str, role: str, index: int, card_dir: str, rdma_base: int | None = None) -> dict[str, Any]:
    """What a ``role`` node sees of card number ``index`` made from profile ``name``.

    Returns ``{"card_dir", "profile", "index", "mst", "pci", "functions": [...], "netdevs": [...],
    "rdma": [...], "rshim": "/dev/rshimN" or None}``; each function is
    ``{"pci": "0000:e2:00.0", "mst": "/dev/mst/mt41692_pciconf0", "rdma": "mlx5_0",
    "netdevs": [...], "uplink": "ens1f0np0", "mac": "94:6d:ae:4f:29:6a", "port": 1}``.

    Numbering for several cards on one node: card i uses PCI bus ``host.pci_bus[i]``, mst index i,
    RDMA devices numbered on from ``rdma_base`` (the ports of the cards before it; default 2i),
    netdevs ``ens{i+1}f0np0``... (a simplification of real slot naming).
    """
    prof = get(name)
    side = prof["dpu"] if role == "dpu" else prof["host"]
    bus = side["pci_bus"][index % len(side["pci_bus"])]
    domain = "0000"
    mst_base = "/dev/mst/%s_pciconf%d" % (prof["mst_chip"], index)
    functions = []
    nports = prof["ports"]
    for fn in range(nports):
        if role == "dpu":
            netdevs = list(side["netdevs_pf"][fn])
            uplink = side["uplinks"][fn]
        else:
            netdevs = [side["netdev_pattern"][fn].format(slot=index + 1)]
            uplink = netdevs[0]
        functions.append({
            "pci": "%s:%s:00.%d" % (domain, bus, fn),
            "mst": mst_base if fn == 0 else "%s.%d" % (mst_base, fn),
            "rdma": "mlx5_%d" % ((index * 2 if rdma_base is None else rdma_base) + fn),
            "netdevs": netdevs,
            "uplink": uplink,
            "mac": _colon_mac(_mac_plus(prof["base_mac"], fn)),
            "port": fn + 1,
        })
    rshim = None
    if prof.get("bluefield") and role == "host":
        rshim = "/dev/rshim%d" % index
    return {
        "card_dir": card_dir,
        "profile": name,
        "index": index,
        "mst": mst_base,
        "pci": functions[0]["pci"],
        "functions": functions,
        "netdevs": [n for f in functions for n in f["netdevs"]],
        "rdma": [f["rdma"] for f in functions],
        "numa": side["numa"],
        "rshim": rshim,
    }
