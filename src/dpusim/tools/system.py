"""Twin ``lspci``, ``lsmod`` and ``modprobe``: they answer for the card(s), the host's GPUs and ``nvidia_peermem``
and pass everything else to the real tool found later on PATH.

- ``lspci`` (no option, ``-D``, ``-n``, ``-nn``, ``-s SLOT``): the twin's functions merged (by address) with the
  real tool's lines; ``-vv`` / ``-vvv`` (with ``-D``, ``-s``): the twin's functions and PCIe bridges with their ACS
  capability only (tools/pcie.py); other options go to the real lspci unchanged.
- ``lsmod``: the twin's modules (mlx5 stack on a node with a card; nvidia stack on a GPU host; nvidia_peermem
  when loaded) followed by the real modules.
- ``modprobe [-q] [-r] nvidia_peermem|nvidia-peermem``: loads/unloads it in the twin state (runtime: a reboot
  unloads it) and creates/removes ``$DPUSIM_ROOT/sys/kernel/mm/memory_peers/nv_mem/version``. Fault
  ``peermem_einval`` in the node's faults (``node.json``) makes the insert fail with EINVAL (hardware-facts 4).
  Modules of the twin's stack that are always loaded answer 0; anything else goes to the real modprobe.
"""

from __future__ import annotations

from dpusim import linux_state as ls
from dpusim import state
from dpusim.render import system as render
from dpusim.tools import pcie
from dpusim.tools._common import ToolExit, check_arm_up, emit, passthrough, run_tool, visible_cards

NAMES = ("lspci", "lsmod", "modprobe")

CLASS = {"eth": ("Ethernet controller", "0200"), "dma": ("DMA controller", "0801"),
         "3d": ("3D controller", "0302")}
# PCI device ids of the SoC management (rshim) function, as the rshim driver matches them (BF2 c2d2, BF3 c2d5)
RSHIM_DEVICE_ID = {2: "c2d2", 3: "c2d5"}
H100_LSPCI = ("NVIDIA Corporation", "10de", "GH100 [H100 SXM5 80GB]", "2330", "a1")  # pci.ids 10de:2330


def _functions(node: state.Node) -> list[dict]:
    out = []
    for card in visible_cards(node):
        prof = card.profile
        entry = node.card_entry(card)
        for fn in entry["functions"]:
            cname, cid = CLASS["eth"]
            out.append({"address": fn["pci"], "class_name": cname, "class_id": cid,
                        "vendor_name": "Mellanox Technologies", "vendor_id": ls.MELLANOX,
                        "device_name": prof["lspci_name"], "device_id": prof["pci_device_id"], "rev": "01"})
        if node.role == "host" and prof.get("lspci_rshim_name"):
            # the SoC management (rshim) function follows the PFs (corpus/lspci/bf3-host-lspci-grep-bluefield-3)
            bus_dev = entry["functions"][0]["pci"].rsplit(".", 1)[0]
            cname, cid = CLASS["dma"]
            out.append({"address": f"{bus_dev}.{len(entry['functions'])}", "class_name": cname, "class_id": cid,
                        "vendor_name": "Mellanox Technologies", "vendor_id": ls.MELLANOX,
                        "device_name": prof["lspci_rshim_name"],
                        "device_id": RSHIM_DEVICE_ID.get(prof.get("generation"), "c2d5"), "rev": "01"})
    for g in ls.gpus(node):
        vendor, vid, dname, did, rev = H100_LSPCI
        cname, cid = CLASS["3d"]
        out.append({"address": "0000:" + g["bus_id"][9:].lower(), "class_name": cname, "class_id": cid,
                    "vendor_name": vendor, "vendor_id": vid, "device_name": dname, "device_id": did, "rev": rev})
    return out


def _lspci(node: state.Node, argv: list[str]) -> int:
    domain = numeric = verbose = 0
    slot = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-vv", "-vvv"):
            verbose = len(arg) - 1
        elif arg == "-D":
            domain = 1
        elif arg == "-n":
            numeric = 1
        elif arg == "-nn":
            numeric = 2
        elif arg == "-s" and i + 1 < len(argv):
            slot = argv[i + 1]
            i += 1
        else:
            return passthrough("lspci", argv)
        i += 1
    fns = _functions(node)
    if verbose:
        # -vv / -vvv: the twin's devices and PCIe bridges only (ACS, tools/pcie.py); the real devices of this
        # machine are not merged in, so nothing acts on them by mistake
        if numeric:
            return passthrough("lspci", argv)
        text = pcie.lspci_vv(node, fns, bool(domain))
        if slot is not None:
            want = (slot if slot.count(":") == 2 else "0000:" + slot).lower()
            text = "".join(b + "\n\n" for b in text.split("\n\n") if b.strip() and
                           ("0000:" + b if not domain else b).startswith(want))
        emit(text)
        return 0
    if slot is not None:
        want = slot if slot.count(":") == 2 else "0000:" + slot
        fns = [f for f in fns if f["address"] == want.lower()]
    mine = {render.lspci_line(f, bool(domain), numeric).split(" ", 1)[0]: render.lspci_line(f, bool(domain), numeric)
            for f in fns}
    lines = dict(mine)  # the twin's devices only: this machine's own are not merged in (the twin never reads it)
    for addr in sorted(lines, key=lambda a: a if domain else "0000:" + a):
        emit(lines[addr] + "\n")
    return 0


def _modules(node: state.Node) -> list[dict]:
    loaded_peermem = "nvidia_peermem" in ls.modules(node)
    mods: list[dict] = []
    if loaded_peermem:
        mods.append({"name": ls.PEERMEM[0], "size": ls.PEERMEM[1], "refcnt": 0, "holders": []})
    if ls.gpus(node):
        for name, size, holders in ls.NVIDIA_MODULES:
            h = list(holders) + (["nvidia_peermem"] if loaded_peermem and name == "nvidia" else [])
            mods.append({"name": name, "size": size, "refcnt": len(h), "holders": h})
    if visible_cards(node):
        for name, size, holders in ls.MLX5_MODULES:
            h = (["nvidia_peermem"] if loaded_peermem and name in ("ib_core", "ib_uverbs") else []) + list(holders)
            mods.append({"name": name, "size": size, "refcnt": len(h), "holders": h})
    return mods


def _lsmod(node: state.Node, argv: list[str]) -> int:
    if argv:
        return passthrough("lsmod", argv)
    mods = _modules(node)
    text = render.lsmod(mods)
    emit(text)  # the twin's modules only: this machine's own are not merged in
    return 0


def _modprobe(node: state.Node, argv: list[str]) -> int:
    flags = [a for a in argv if a.startswith("-")]
    names = [a for a in argv if not a.startswith("-")]
    known = {"-q", "--quiet", "-r", "--remove", "-v", "--verbose"}
    if len(names) != 1 or set(flags) - known:
        return passthrough("modprobe", argv)
    name = names[0].replace("-", "_")
    remove = bool({"-r", "--remove"} & set(flags))
    quiet = bool({"-q", "--quiet"} & set(flags))
    twin_stack = {m[0] for m in ls.MLX5_MODULES} | {m[0] for m in ls.NVIDIA_MODULES}
    if name == "nvidia_peermem":
        if not ls.gpus(node):
            if quiet:
                return 1
            raise ToolExit(render.modprobe_not_found(names[0], ls.kernel_release(node)), rc=1, stream="stderr")
        if remove:
            ls.unload_peermem(node)
            return 0
        if "peermem_einval" in node.faults:
            raise ToolExit("modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument", rc=1,
                           stream="stderr")
        ls.load_peermem(node)
        return 0
    if name in twin_stack and not remove and (visible_cards(node) or ls.gpus(node)):
        return 0
    return passthrough("modprobe", argv)


def body(argv: list[str], prog: str) -> int:
    with state.open_node() as node:
        check_arm_up(node)
        ls.sync_sysfs(node)
        if prog == "lspci":
            return _lspci(node, argv)
        if prog == "lsmod":
            return _lsmod(node, argv)
        return _modprobe(node, argv)


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
