"""Twin ``devlink`` (iproute2) for the card's mlx5 devices.

Supported: ``dev [show]``, ``dev info``, ``dev eswitch show|set``, ``dev param show|set``, ``port [show]``,
``port function set HANDLE state active|inactive``; global options ``-j``/``--json``, ``-p``/``--pretty``
(also ``-jp``). Errors use the strings the corpus shows (``kernel answers: ...``,
``Configuration mode not supported``). Eswitch mode and runtime/driverinit params are runtime state (lost on
reboot); ``cmode permanent`` params persist.
"""

from __future__ import annotations

from dpusim import device, state
from dpusim import linux_state as ls
from dpusim.render import devlink as render
from dpusim.tools._common import ToolExit, check_arm_up, emit, run_tool, visible_cards

NAMES = ("devlink",)

ESW_MODES = ("legacy", "switchdev")
INLINE_MODES = ("none", "link", "network", "transport")
ENCAP_MODES = ("none", "basic")
# Messages as the real devlink (iproute2 6.1) prints them.
DEV_EXPECTED = 'Devlink identification ("bus_name/dev_name") expected'
PORT_EXPECTED = 'Port identification ("bus_name/dev_name/port_index" or "netdev ifname") expected.'
MISSING_VALUE = {"name": "Parameter name expected.", "value": "Value to set expected.",
                 "cmode": "Configuration mode expected.", "mode": "E-Switch mode option expected.",
                 "inline-mode": "E-Switch inline-mode option expected.",
                 "encap-mode": "E-Switch encapsulation option expected."}
CMODES = ("runtime", "driverinit", "permanent")
USAGE = ("Usage: devlink [ OPTIONS ] OBJECT { COMMAND | help }\n"
         "where  OBJECT := { dev | port | param | info | health | resource | region | trap | rate }\n"
         "       OPTIONS := { -V[ersion] | -n[o-nice-names] | -j[son] | -p[retty] | -v[erbose] -s[tatistics] }\n")


def _handles(node: state.Node) -> list[str]:
    return ["pci/" + fn["pci"] for card in visible_cards(node) for fn in node.card_entry(card)["functions"]]


def _pci_of(node: state.Node, handle: str) -> str:
    if handle not in _handles(node):
        raise ToolExit("kernel answers: No such device", rc=1, stream="stderr")
    return handle[4:]


def _card_of(node: state.Node, pci: str) -> state.Card:
    return next(c for c in visible_cards(node) if any(fn["pci"] == pci for fn in node.card_entry(c)["functions"]))


def _opts(argv: list[str]) -> tuple[bool, bool, list[str]]:
    as_json = pretty = False
    rest = []
    for arg in argv:
        if arg in ("-j", "--json"):
            as_json = True
        elif arg in ("-p", "--pretty"):
            pretty = True
        elif arg in ("-jp", "-pj"):
            as_json = pretty = True
        else:
            rest.append(arg)
    return as_json, pretty, rest


def _kv(args: list[str], allowed: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for i in range(0, len(args), 2):
        key = args[i]
        if key not in allowed:
            raise ToolExit(f"Unknown option \"{key}\"", rc=1, stream="stderr")
        if i + 1 >= len(args):
            raise ToolExit(MISSING_VALUE.get(key, "Command line is not complete. Try option \"help\""), rc=1,
                           stream="stderr")
        out[key] = args[i + 1]
    return out


def _parse_value(text: str, current: object) -> object:
    if isinstance(current, bool):
        if text not in ("true", "false"):
            raise ToolExit("Value type not supported", rc=1, stream="stderr")
        return text == "true"
    if isinstance(current, int):
        try:
            return int(text, 0)
        except ValueError as exc:
            raise ToolExit("Value type not supported", rc=1, stream="stderr") from exc
    return text


def _dev(node: state.Node, args: list[str], as_json: bool, pretty: bool) -> str:
    sub = args[0] if args else "show"
    if sub in ("show", "list"):
        handles = _handles(node)
        if len(args) > 1:
            _pci_of(node, args[1])
            handles = [args[1]]
        return render.dev_show(handles, as_json, pretty)
    if sub == "info":
        devs = [d for d in ls.devlink_info(node) if d["handle"] in _handles(node)]
        if len(args) > 1:
            _pci_of(node, args[1])
            devs = [d for d in devs if d["handle"] == args[1]]
        return render.dev_info(devs, as_json, pretty)
    if sub == "eswitch":
        return _eswitch(node, args[1:], as_json, pretty)
    if sub == "param":
        return _param(node, args[1:], as_json, pretty)
    raise ToolExit(f"Command \"{sub}\" not found", rc=1, stream="stderr")


def _eswitch(node: state.Node, args: list[str], as_json: bool, pretty: bool) -> str:
    sub = args[0] if args else "show"
    if sub == "show":
        handles = [args[1]] if len(args) > 1 else _handles(node)
        devs = []
        for h in handles:
            esw = ls.eswitch(node, _pci_of(node, h))
            devs.append({"handle": h, **esw})
        return render.eswitch_show(devs, as_json, pretty)
    if sub == "set":
        if len(args) < 2:
            raise ToolExit(DEV_EXPECTED, rc=1, stream="stderr")
        pci = _pci_of(node, args[1])
        opts = _kv(args[2:], ("mode", "inline-mode", "encap-mode"))
        if not opts:
            raise ToolExit("Need to set at least one option", rc=1, stream="stderr")
        values = {}
        if "mode" in opts:
            if opts["mode"] not in ESW_MODES:
                raise ToolExit(f"Unknown eswitch mode \"{opts['mode']}\"", rc=1, stream="stderr")
            card = _card_of(node, pci)
            if node.role == "host" and opts["mode"] == "switchdev" and card.is_bluefield and device.dpu_mode(card):
                # a BlueField in DPU mode: the Arm (ECPF) is the eswitch manager, not the host PF
                raise ToolExit("kernel answers: Operation not supported", rc=1, stream="stderr")
            values["mode"] = opts["mode"]
        if "inline-mode" in opts:
            if opts["inline-mode"] not in INLINE_MODES:
                raise ToolExit(f"Unknown eswitch inline mode \"{opts['inline-mode']}\"", rc=1, stream="stderr")
            values["inline_mode"] = opts["inline-mode"]
        if "encap-mode" in opts:
            if opts["encap-mode"] not in ENCAP_MODES:
                raise ToolExit(f"Unknown eswitch encap mode \"{opts['encap-mode']}\"", rc=1, stream="stderr")
            values["encap_mode"] = opts["encap-mode"]
        ls.set_eswitch(node, pci, values)
        return ""
    raise ToolExit(f"Command \"{sub}\" not found", rc=1, stream="stderr")


def _param(node: state.Node, args: list[str], as_json: bool, pretty: bool) -> str:
    sub = args[0] if args else "show"
    if sub == "show":
        handles = _handles(node)
        name = None
        if len(args) > 1:
            _pci_of(node, args[1])
            handles = [args[1]]
            opts = _kv(args[2:], ("name",))
            name = opts.get("name")
        data = []
        for h in handles:
            params = ls.devlink_params(node, h[4:])
            if name is not None:
                params = [p for p in params if p["name"] == name]
                if not params:
                    raise ToolExit("kernel answers: Invalid argument", rc=1, stream="stderr")
            data.append((h, params))
        return render.param_show(data, as_json, pretty)
    if sub == "set":
        if len(args) < 2:
            raise ToolExit(DEV_EXPECTED, rc=1, stream="stderr")
        pci = _pci_of(node, args[1])
        opts = _kv(args[2:], ("name", "value", "cmode"))
        for key in ("name", "value", "cmode"):
            if key not in opts:
                raise ToolExit(MISSING_VALUE[key], rc=1, stream="stderr")
        if opts["cmode"] not in CMODES:
            raise ToolExit(f"Unknown configuration mode \"{opts['cmode']}\"", rc=1, stream="stderr")
        params = {p["name"]: p for p in ls.devlink_params(node, pci)}
        param = params.get(opts["name"])
        if param is None:
            raise ToolExit("kernel answers: Invalid argument", rc=1, stream="stderr")
        current = {v["cmode"]: v["value"] for v in param["values"]}
        if opts["cmode"] not in current:
            raise ToolExit("Configuration mode not supported", rc=1, stream="stderr")
        value = _parse_value(opts["value"], current[opts["cmode"]])
        choices = ls.PARAM_CHOICES.get(opts["name"])
        if choices is not None and value not in choices:
            raise ToolExit("kernel answers: Invalid argument", rc=1, stream="stderr")
        ls.set_devlink_param(node, pci, opts["name"], opts["cmode"], value)
        return ""
    raise ToolExit(f"Command \"{sub}\" not found", rc=1, stream="stderr")


def _port(node: state.Node, args: list[str], as_json: bool, pretty: bool) -> str:
    sub = args[0] if args else "show"
    handles = _handles(node)
    ports = [p for p in ls.devlink_ports(node) if p["handle"].rsplit("/", 1)[0] in handles]
    if sub in ("show", "list"):
        if len(args) > 1:
            ports = [p for p in ports if p["handle"] == args[1] or p.get("netdev") == args[1]]
            if not ports:
                raise ToolExit("kernel answers: No such device", rc=1, stream="stderr")
        return render.port_show(ports, as_json, pretty)
    if sub == "function" and len(args) >= 2 and args[1] == "set":
        if len(args) < 3:
            raise ToolExit(PORT_EXPECTED, rc=1, stream="stderr")
        match = [p for p in ports if p["handle"] == args[2]]
        if not match:
            raise ToolExit("kernel answers: No such device", rc=1, stream="stderr")
        opts = _kv(args[3:], ("state", "hw_addr", "roce"))
        if set(opts) != {"state"}:
            raise ToolExit("kernel answers: Operation not supported", rc=1, stream="stderr")
        if opts["state"] not in ("active", "inactive"):
            # not verified against iproute2 (the 6.1 binary has no such string): a bad state is refused here
            raise ToolExit(f"Unknown state \"{opts['state']}\"", rc=1, stream="stderr")
        if match[0].get("flavour") != "pcipf":
            raise ToolExit("kernel answers: Operation not supported", rc=1, stream="stderr")
        ls.linux_runtime(node).setdefault("port_fn_state", {})[args[2]] = opts["state"]
        return ""
    raise ToolExit(f"Command \"{sub}\" not found", rc=1, stream="stderr")


# ``devlink -V``: iproute2 prints "devlink utility, iproute2-<version>" (devlink.c main(); older releases
# "iproute2-ss<snapshot>"); the version is Debian 12's iproute2, the release the messages above come from.
VERSION = "devlink utility, iproute2-6.1.0\n"


def body(argv: list[str], prog: str) -> int:
    if argv[:1] in (["-V"], ["--Version"]):
        emit(VERSION)
        return 0
    as_json, pretty, args = _opts(argv)
    if not args or args[0] in ("help", "-h", "--help"):
        emit(USAGE, "stderr")
        return 0 if args else 255
    obj, rest = args[0], args[1:]
    with state.open_node() as node:
        check_arm_up(node)
        if obj == "dev":
            out = _dev(node, rest, as_json, pretty)
        elif obj == "port":
            out = _port(node, rest, as_json, pretty)
        else:
            raise ToolExit(f"Object \"{obj}\" not found", rc=1, stream="stderr")
    emit(out)
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
