"""Twin ``mlnx_qos``, ``cma_roce_mode`` and ``cma_roce_tos`` (mlnx-tools) for the card's netdevs / RDMA devices.

Option handling and messages follow mlnx-tools python/mlnx_qos and sbin/cma_roce_{mode,tos} (see
``dpusim.render.qos``). All settings are runtime: lost on ``dpusim reboot`` / ``power-cycle``.
Trust is derived like mlnx_qos does on kernels without the ``qos/trust`` sysfs file: ``dscp`` when the DCB app
table holds DSCP entries, else ``pcp``. Not modelled: ``--defltprio`` (its output line is not in the corpus),
``-d fw`` on a running DCBX agent, lldpad. The root check of the cma scripts is not emulated.
"""

from __future__ import annotations

import argparse
import os

from dpusim import linux_state as ls
from dpusim import state
from dpusim.render import qos as render
from dpusim.tools._common import ToolExit, check_arm_up, emit, passthrough, real_binary, run_tool, visible_cards

NAMES = ("mlnx_qos", "cma_roce_mode", "cma_roce_tos")

USAGE = "Usage: mlnx_qos -i <interface> [options]\n"
TSA_NAMES = ("strict", "ets", "vendor")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # optparse's wording (mlnx_qos uses optparse): usage + error, exit status 2
        if message.startswith("unrecognized arguments: "):
            message = "no such option: " + message.split(": ", 1)[1].split(maxsplit=1)[0]
        elif message.endswith("expected one argument"):
            message = message.split()[1].split("/")[-1].rstrip(":") + " option requires 1 argument"
        raise ToolExit(USAGE + "\nmlnx_qos: error: " + message, rc=2, stream="stderr")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mlnx_qos", add_help=False)
    p.add_argument("-f", "--pfc")
    p.add_argument("-p", "--prio_tc")
    p.add_argument("-s", "--tsa")
    p.add_argument("-t", "--tcbw", dest="tc_bw")
    p.add_argument("-r", "--ratelimit")
    p.add_argument("-d", "--dcbx")
    p.add_argument("--trust")
    p.add_argument("--dscp2prio", action="append")
    p.add_argument("--defltprio")
    p.add_argument("--cable_len")
    p.add_argument("--prio2buffer")
    p.add_argument("--buffer_size")
    p.add_argument("-i", "--interface", dest="intf")
    p.add_argument("-a", action="store_true", dest="printall")
    p.add_argument("args", nargs="*")
    return p


def _ints(text: str, what: str, lo: int, hi: int, count_msg: str, too_many: str) -> list[int]:
    items = text.split(",")
    if len(items) > 8:
        raise ToolExit(too_many)
    out = []
    for t in items:
        try:
            v = int(t)
            if v < lo or v > hi:
                raise ValueError(f"{v} is not in the range {lo}..{hi}")
        except ValueError as e:
            raise ToolExit(f"Bad value for {what}: {e}\n{USAGE}") from e
        out.append(v)
    if len(out) != 8:
        raise ToolExit(count_msg)
    return out


def _mlnx_qos(argv: list[str]) -> int:
    o = _parser().parse_args(argv)
    if o.args:
        raise ToolExit("Bad arguments\n" + USAGE)
    if o.intf is None:
        raise ToolExit("Interface name is required\n" + USAGE)
    with state.open_node() as node:
        nd = ls.find_netdev(node, o.intf)
        if nd is None or nd["card"] not in visible_cards(node):
            if real_binary("mlnx_qos") is not None:
                return passthrough("mlnx_qos", argv)
            raise ToolExit(f"dpusim: mlnx_qos: {o.intf} is not a netdev of this node's card(s) and no real "
                           "mlnx_qos is installed for other interfaces", rc=1, stream="stderr")
        check_arm_up(node)
        layout = os.environ.get("DPUSIM_MLNX_TOOLS_LAYOUT") or nd["card"].profile.get("mlnx_tools_layout", "2024")
        if layout == "2025" and o.defltprio is not None:
            # mlnx-tools >= 25.07 has no --defltprio (commit 374d9b5): optparse refuses the option
            raise ToolExit(USAGE + "\nmlnx_qos: error: no such option: --defltprio", rc=2, stream="stderr")
        if nd["kind"] in ("hostrep", "vfrep", "sf"):
            raise ToolExit("ETS features are not supported on your system")
        q = ls.qos(node, o.intf)
        before = ls.qos(node, o.intf)
        if o.dcbx is not None:
            if o.dcbx not in ("os", "fw", "get"):
                raise ToolExit("Invalid dcbx mode command. Refer to the help.")
            if o.dcbx != "get":
                q["dcbx"] = o.dcbx
        if o.cable_len:
            try:
                q["cable_len"] = int(o.cable_len)
                if not 0 <= q["cable_len"] <= 0xffff:
                    raise ValueError(f"{q['cable_len']} is not in the range 0..65535")
            except ValueError as e:
                raise ToolExit(f"Bad value for cable_len: {e}\n{USAGE}") from e
        if o.pfc:
            q["pfc"] = _ints(o.pfc, "PFC", 0, 1, "pfc list must have 8 items", "Too many items for PFC")
        if o.dscp2prio and o.trust:
            raise ToolExit("trust and dscp2prio commands cannot be used at the same time.")
        ops = []
        for opt in o.dscp2prio or []:
            if opt == "flush":
                ops.append(("flush", 0, 0))
                continue
            try:
                action, dscp, prio = opt.split(",")
                dscp, prio = int(dscp), int(prio)
                if action not in ("set", "del") or not 0 <= dscp <= 63 or not 0 <= prio <= 7:
                    raise ValueError(opt)
            except ValueError as e:
                raise ToolExit("Invalid dscp2prio command. Refer to the help.") from e
            ops.append((action, dscp, prio))
        for action, dscp, prio in ops:
            if action == "set":
                q["app_table"] = render.app_table_set(q["app_table"], dscp, prio)
            elif action == "del":
                q["app_table"] = render.app_table_del(q["app_table"], dscp, prio)
            else:
                q["app_table"] = []
        if o.defltprio:
            raise ToolExit("dpusim: mlnx_qos --defltprio is not modelled by the twin (its output is not in the "
                           "corpus); set the default priority on a real card", rc=1, stream="stderr")
        if o.trust:
            if o.trust not in ("dscp", "pcp"):
                raise ToolExit("Invalid trust state command. Refer to the help.")
            if o.trust == "pcp":
                q["app_table"] = []
            elif not q["app_table"]:
                q["app_table"] = render.default_app_table()
        q["trust"] = "dscp" if q["app_table"] else "pcp"
        if o.prio2buffer:
            q["prio2buffer"] = _ints(o.prio2buffer, "prio buffer", 0, 7, "prio2buffer list must have 8 items",
                                     "Too many items for prio2buffer")
        if o.buffer_size:
            q["buffer_size"] = _ints(o.buffer_size, "buffer_size", 0, q["max_buffer_size"],
                                     "buffer_size list must have 8 items", "Too many items for buffer_size")
        if o.ratelimit:
            rates = _ints(o.ratelimit, "ratelimit", 0, 1000000, "ratelimit must have 8 items",
                          "Too many items for ratelimit")
            q["ratelimit"] = [r * 1000 * 1000 for r in rates]
        if o.tsa:
            items = o.tsa.split(",")
            if len(items) > 8:
                raise ToolExit("Too many items for TSA")
            for t in items:
                if t not in TSA_NAMES:
                    raise ToolExit(f"('Bad TSA value: ', '{t}')\n{USAGE}")
            if len(items) != 8:
                raise ToolExit("tsa list must have 8 items")
            q["tsa"] = items
        if o.tc_bw:
            bws = _ints(o.tc_bw, "ETS BW", 0, 100, "tcbw list must have 8 items", "Too many items for ETS BW")
            for tsa, bw in zip(q["tsa"], bws, strict=True):
                if tsa != "ets" and bw != 0:
                    raise ToolExit("ETS BW for a strict/vendor TC must be 0\n" + USAGE)
            q["tc_bw"] = bws
        if o.prio_tc:
            q["prio_tc"] = _ints(o.prio_tc, "UP => TC mapping", 0, 7, "prio_tc list must have 8 items",
                                 "Too many items in UP => TC mapping")
        if (o.tsa or o.tc_bw or o.prio_tc) and "ets" in q["tsa"]:
            total = sum(bw for tsa, bw in zip(q["tsa"], q["tc_bw"], strict=True) if tsa == "ets")
            if total != 100:  # mlx5e_dbcnl_validate_ets: ETS bandwidths must sum to 100
                raise ToolExit("[Errno 22] Invalid argument")
        if q != before:
            ls.set_qos(node, o.intf, q)
        q["printall"] = o.printall
        emit(render.mlnx_qos(dict(q, default_priority_line=layout != "2025")))
    return 0


def _cma(argv: list[str], prog: str) -> int:
    setting = "-m" if prog == "cma_roce_mode" else "-t"
    usage = render.CMA_ROCE_MODE_USAGE if prog == "cma_roce_mode" else render.CMA_ROCE_TOS_USAGE
    device, port, value = "mlx5_0", "1", None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-h":
            emit(usage)
            return 0
        if arg in ("-d", "-p", setting) and i + 1 < len(argv):
            if arg == "-d":
                device = argv[i + 1]
            elif arg == "-p":
                port = argv[i + 1]
            else:
                value = argv[i + 1]
            i += 2
            continue
        i += 1  # getopts ignores what it does not know after printing its own complaint
    with state.open_node() as node:
        check_arm_up(node)
        ports = {(p["ibdev"], str(p["port"])) for p in ls.rdma_ports(node) if p["card"] in visible_cards(node)}
        if device not in {d for d, _ in ports}:
            raise ToolExit(f"Failed to create configuration for {device}")
        if (device, port) not in ports:
            raise ToolExit(f"Device {device} port {port} does not exist")
        cur = ls.cma(node, device, int(port))
        if prog == "cma_roce_mode":
            if value in ("1", "2"):
                cur["mode"] = int(value)
                ls.set_cma(node, device, int(port), {"mode": cur["mode"]})
            emit(render.cma_roce_mode(cur["mode"]))
        else:
            if value is not None:
                try:
                    tos = int(value)
                except ValueError as e:
                    raise ToolExit(f"{prog}: line 1: [: {value}: integer expression expected", stream="stderr") from e
                if tos >= 0:
                    if tos > 255:
                        raise ToolExit(f"{prog}: echo: write error: Invalid argument", stream="stderr")
                    cur["tos"] = tos
                    ls.set_cma(node, device, int(port), {"tos": tos})
            emit(render.cma_roce_tos(cur["tos"]))
    return 0


def body(argv: list[str], prog: str) -> int:
    if prog == "mlnx_qos":
        return _mlnx_qos(argv)
    return _cma(argv, prog)


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
