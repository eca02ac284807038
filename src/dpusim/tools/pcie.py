"""Twin ``setpci`` for the ACS Control register of a GPU host's PCIe bridges, and the ``lspci -vv`` view of them.

- ``setpci [-D] -s SLOT ECAP_ACS+6.w`` prints the ACS Control word (``%04x``); ``...=VALUE`` writes it
  (``ECAP_ACS+0x6.w``, ``ECAP0d+6.w`` and ``ECAP_ACS+6.W`` are the same register: extended capability 0x0d,
  offset 6, a 16-bit word; pciutils setpci.c). Only the twin's bridges answer; any other slot or register is
  refused, never passed to the real setpci (it would change this machine's devices).
- ``lspci_vv(node, domain)``: the twin's functions and bridges for ``lspci -vv``/``-vvv``: each device line
  and, for a bridge, ``Capabilities: [2a0 v1] Access Control Services`` with ``ACSCap:`` / ``ACSCtl:`` (TAB
  indented, a TAB after the colon) and the seven flags (pciutils ls-ecaps.c ``cap_acs``; fixture
  lspci/lkml-lspci-vvv-acs-root-ports). The other ``-vv`` detail lines are not modelled (that fixture was
  edited down to these lines too).
"""

from __future__ import annotations

import re

from dpusim import linux_state as ls
from dpusim import state
from dpusim.render import system as render
from dpusim.tools._common import ToolExit, check_arm_up, emit, run_tool

NAMES = ("setpci",)

FLAGS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
REGISTER_RE = re.compile(r"^ECAP(?:_ACS|0?0?0d)\+(?:0x)?6\.[wW](?:=(?P<value>(?:0x)?[0-9a-fA-F]{1,4}))?$")
USAGE = "dpusim: setpci: the twin answers [-D] -s SLOT ECAP_ACS+6.w[=VALUE] for its PCIe bridges only, not: %s"


def flags(word: int) -> str:
    return " ".join("%s%s" % (name, "+" if word >> i & 1 else "-") for i, name in enumerate(FLAGS))


def bridge_function(bridge: dict) -> dict:
    cname, cid, vname, vid, dname, did, rev = ls.BRIDGE_LSPCI
    return {"address": bridge["address"], "class_name": cname, "class_id": cid, "vendor_name": vname,
            "vendor_id": vid, "device_name": dname, "device_id": did, "rev": rev}


def lspci_vv(node: state.Node, functions: list[dict], domain: bool) -> str:
    """``functions``: the twin's endpoint functions (system._functions); bridges are added here."""
    bridges = {b["address"]: b for b in ls.pcie_bridges(node)}
    every = list(functions) + [bridge_function(b) for b in bridges.values()]
    out = []
    for fn in sorted(every, key=lambda f: f["address"]):
        line = render.lspci_line(fn, domain)
        if fn["address"] in bridges:
            out.append(line + " (prog-if 00 [Normal decode])\n")
            out.append("\tCapabilities: [%s v1] Access Control Services\n" % ls.ACS_OFFSET)
            out.append("\t\tACSCap:\t%s\n" % flags(ls.ACS_CAP_WORD))
            out.append("\t\tACSCtl:\t%s\n" % flags(ls.acs_ctl(node, fn["address"])))
        else:
            out.append(line + "\n")
        out.append("\n")
    return "".join(out)


def _slot(text: str) -> str:
    return text.lower() if text.count(":") == 2 else "0000:" + text.lower()


def body(argv: list[str], prog: str) -> int:
    args = [a for a in argv if a != "-D"]
    if len(args) != 3 or args[0] != "-s" or not REGISTER_RE.match(args[2]):
        raise ToolExit(USAGE % " ".join(argv), rc=1, stream="stderr")
    slot = _slot(args[1])
    value = REGISTER_RE.match(args[2]).group("value")
    with state.open_node(write=value is not None) as node:
        check_arm_up(node)
        if slot not in {b["address"] for b in ls.pcie_bridges(node)}:
            raise ToolExit("dpusim: setpci: %s is not a PCIe bridge of this twin node (ACS is modelled on the "
                           "bridges above the GPUs and cards only)" % args[1], rc=1, stream="stderr")
        if value is None:
            emit("%04x\n" % ls.acs_ctl(node, slot))
            return 0
        ls.set_acs_ctl(node, slot, int(value, 16))
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
