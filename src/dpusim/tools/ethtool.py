"""Twin ``ethtool`` for the card's netdevs: ``-k``/``--show-features``, ``-K``/``--features`` and ``-i``/``--driver``.

Everything else (other options, other interfaces) goes to the real ethtool found later on PATH; when there is
none, an unknown interface fails like the real tool does. Feature changes are runtime (lost on reboot). When the
card's netdev also exists in the kernel (the lab wires veths with the card's names), a successful ``-K`` is
applied to the real netdev too, so the lab's data path follows (e.g. ``tx off`` on the GPU host end).
"""

from __future__ import annotations

from dpusim import linux_state as ls
from dpusim import state
from dpusim.render import ethtool as render
from dpusim.tools._common import ToolExit, check_arm_up, emit, passthrough, real_binary, run_tool, visible_cards

NAMES = ("ethtool",)

SHOW = ("-k", "--show-features", "--show-offload")
SET = ("-K", "--features", "--offload")
DRIVER = ("-i", "--driver")


def _netdev(node: state.Node, name: str) -> dict | None:
    nd = ls.find_netdev(node, name)
    if nd is None or nd["card"] not in visible_cards(node):
        return None
    return nd


def _parse_requests(args: list[str]) -> list[tuple[str, bool]]:
    if not args:
        raise ToolExit("Could not change any device features", rc=1, stream="stderr")
    reqs = []
    i = 0
    while i < len(args):
        name = args[i]
        if i + 1 >= len(args) or args[i + 1] not in ("on", "off"):
            value = args[i + 1] if i + 1 < len(args) else "(null)"  # real ethtool 6.1 prints (null) here
            raise ToolExit(f"ethtool (-K): flag '{value}' for parameter '(null)' is not followed by 'on' or 'off'",
                           rc=1, stream="stderr")
        reqs.append((name, args[i + 1] == "on"))
        i += 2
    return reqs


def _driver_info(node: state.Node, nd: dict) -> dict:
    card = nd["card"]
    fw = card.data["firmware"]["running"]
    driver = "mlx5e_rep" if nd["kind"] in ("hostrep", "vfrep") else "mlx5_core"
    return {"driver": driver, "version": ls.kernel_release(node),
            "firmware_version": f"{fw['version']} ({fw['psid']})",
            "expansion_rom_version": "", "bus_info": nd["pci"], "supports_statistics": "yes",
            "supports_test": "no" if driver == "mlx5e_rep" else "yes", "supports_eeprom_access": "no",
            "supports_register_dump": "no", "supports_priv_flags": "no" if driver == "mlx5e_rep" else "yes"}


def body(argv: list[str], prog: str) -> int:
    if len(argv) >= 2 and argv[0] in SHOW + SET + DRIVER:
        opt, ifname, rest = argv[0], argv[1], argv[2:]
        with state.open_node() as node:
            nd = _netdev(node, ifname)
            if nd is not None:
                check_arm_up(node)
                return _card_netdev(node, nd, opt, rest, argv)
    if real_binary("ethtool") is not None:
        return passthrough("ethtool", argv)
    # no real ethtool here: answer for an interface the twin does not know like the real tool
    if len(argv) >= 2 and argv[0] in SHOW:
        raise ToolExit(render.NO_SUCH_DEVICE_K, rc=1, stream="stderr")
    if len(argv) >= 2 and argv[0] in SET:
        raise ToolExit(render.NO_SUCH_DEVICE_K, rc=92, stream="stderr")
    if len(argv) >= 2 and argv[0] in DRIVER:
        raise ToolExit(render.NO_SUCH_DEVICE_I, rc=71, stream="stderr")
    raise ToolExit("ethtool: the twin answers -k/-K/-i for the card's netdevs only, and no real ethtool is "
                   "installed for anything else (%s)" % " ".join(argv), rc=1, stream="stderr")


def _card_netdev(node: state.Node, nd: dict, opt: str, rest: list[str], argv: list[str]) -> int:
    name = nd["name"]
    if opt in SHOW:
        emit(render.features(name, ls.ethtool_features(node, name)))
        return 0
    if opt in DRIVER:
        emit(render.driver_info(_driver_info(node, nd)))
        return 0
    reqs = _parse_requests(rest)
    new, out, err, rc = render.apply_changes(name, ls.ethtool_features(node, name), reqs)
    if rc != 92:
        ls.set_ethtool_features(node, name, new)
    if out:
        emit(out)
    if err:
        emit(err, "stderr")
    if rc == 0:
        # the same change handed to the real ethtool too, for a lab veth of that name (its answer is not the
        # twin's: the twin's features come from its root alone, and no such device elsewhere is not an error)
        real = real_binary("ethtool")
        if real is not None:
            import subprocess  # only where a real ethtool is installed (the lab), see dpusim.tools._common.passthrough

            subprocess.run([real, *argv], capture_output=True, timeout=30, check=False)
    return rc


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
