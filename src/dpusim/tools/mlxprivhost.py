# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""``mlxprivhost`` / ``mstprivhost``: q (query), r (restrict), p (privilege).

Layout: corpus/mlxprivhost/FORMAT-from-source.md (mstflint mstprivhost.py); the title is
"Current device configurations" before 2021-06 (the BlueField-2 profile's older MFT, as in
bf2-query-privileged-fixture) and "Host configurations" after. No RESTRICTED capture exists
(INDEX.md "Gaps"); the value string comes from the source.

Semantics (hardware-facts.md section 2): restrict/privilege take effect immediately;
``--disable_rshim`` needs a power cycle, ``--disable_tracer`` / ``--disable_counter_rd`` an FW
reset (held in ``privhost.pending`` until then). Only the Arm side (DPU role) can change it.

What the real tool does (mstflint mlxconfig/mstprivhost.py, ``queryConf`` / ``setConf``): ``q`` reads the
host-privilege TLV stored in NV, so it shows a flag as soon as ``r`` wrote it, before the reset that makes it
active (the twin shows ``current`` overlaid with ``pending``); ``r`` writes the whole TLV, so restricting
again replaces the flags (a restricted host is first privileged, then restricted with the new set); ``p``
writes 0 (every flag off) and refuses flags at the argument parser. ``r`` / ``p`` print
``-I- preparing configuration file...Done!`` and ``-I- configuring device...Done!`` (``info()`` prints
``-I-``, a space, the text, no newline; then ``Done!``). On the x86 side of a single-host card ``r`` prints
``-E- There is only a single host, it cannot restrict itself`` (rc 1), or ``-E- Host is already restricted``
(rc 0) when it is; ``p`` of a restricted host fails with ``Failed`` and ``-E- Removing the restriction only
effective on the ARM side``.
"""

from __future__ import annotations

from dpusim import state
from dpusim.tools._common import ToolExit, check_arm_up, emit, find_function, pop_flag, pop_value, run_tool

NAMES = ("mlxprivhost", "mstprivhost")
PREPARED = "-I- preparing configuration file...Done!\n"
CONFIGURED = "-I- configuring device...Done!\n"
USAGE = ("usage: %s [-h] [-v] --device DEVICE [--disable_rshim] [--disable_tracer] [--disable_counter_rd] "
         "[--disable_port_owner] {r,restrict,p,privilege,q,query}")
FLAGS = ("disable_rshim", "disable_tracer", "disable_port_owner", "disable_counter_rd")
NEEDS_POWER_CYCLE = ("disable_rshim",)
NEEDS_FW_RESET = ("disable_tracer", "disable_counter_rd")


def render_query(card: state.Card) -> str:
    old = card.profile.get("mft_era") == "old"
    title = "Current device configurations:" if old else "Host configurations"
    priv = card.data["privhost"]
    out = [title + "\n", "-" * len(title) + "\n", "%-30s: %s\n" % ("level", priv["level"])]
    sub = "\nPort functions status:"
    out.append(sub + "\n")
    out.append("-" * len(sub) + "\n")
    stored = dict(priv["current"], **priv.get("pending", {}))  # q reads NV: a flag shows before its reset
    for flag in FLAGS:
        out.append("%-30s: %s\n" % (flag, "TRUE" if stored.get(flag) else "FALSE"))
    out.append("\n")
    return "".join(out)


HELP = """usage: {prog} [-h] [-v] --device DEVICE [--disable_rshim] [--disable_tracer] [--disable_counter_rd] \
[--disable_port_owner] {{r,restrict,p,privilege,q,query}}

restrict or privilege host
Note: New configurations takes effect immediately.
Note: privileged host - host has all supported privileges.
      restricted host - host is not allowed to modify global
      per port/parameters or access other hosts parametersis.

optional arguments:
  -h, --help            show this help message and exit
  -v, --version         show program's version number and exit

Options:
  --device DEVICE, -d DEVICE
                        Device to work with.
  --disable_rshim       When TRUE, the host does not have an RSHIM function
                        to access the embedded CPU registers
  --disable_tracer      When TRUE, the host will not be allowed to own the Tracer
  --disable_counter_rd  When TRUE, the host will not be allowed to read Physical port counters
  --disable_port_owner  When TRUE, the host will not be allowed to be Port Owner

Commands:
  {{r,restrict,p,privilege,q,query}}
                        restrict:  Set host 1 (ARM) privileged, host 0 (x86_64) restricted.
                        privilege: Set host 1 (ARM) privileged, host 0 (x86_64) privileged
                                   (back to default).
                        query:     Query current host configuration.
"""  # corpus/mlxprivhost/bf2-help-with-query-fixture.txt (argparse help of mlxprivhost)


def body(argv: list[str], prog: str) -> int:
    argv = list(argv)
    if pop_flag(argv, "-h", "--help"):
        emit(HELP.format(prog=prog))
        return 0
    dev = pop_value(argv, "-d", "--device")
    chosen = {flag: pop_flag(argv, "--" + flag) for flag in FLAGS}
    if dev is None:
        raise ToolExit((USAGE + "\n%s: error: the following arguments are required: --device/-d") % (prog, prog),
                       rc=2, stream="stderr")
    cmd = argv[0] if argv else ""
    if cmd in ("p", "privilege") and any(chosen.values()):
        raise ToolExit((USAGE + "\n%s: error: disable flags are not allowed in privilege mode") % (prog, prog),
                       rc=2, stream="stderr")
    if cmd in ("q", "query") and any(chosen.values()):
        raise ToolExit((USAGE + "\n%s: error: privilege or restrict commands are not allowed with query")
                       % (prog, prog), rc=2, stream="stderr")
    node = state.load_node()
    check_arm_up(node)
    found = find_function(node, dev)
    if found is None:
        raise ToolExit("-E- Failed to open device: %s" % dev)
    card = found[0]
    if not card.is_bluefield:
        raise ToolExit("-E- Device is not supported")
    if cmd in ("q", "query"):
        emit(render_query(card))
        return 0
    if cmd not in ("r", "restrict", "p", "privilege"):
        raise ToolExit("%s: error: argument command: invalid choice: '%s'" % (prog, cmd), rc=2, stream="stderr")
    restricted = card.data["privhost"]["level"] == "RESTRICTED"
    if node.role != "dpu":
        if cmd in ("r", "restrict"):
            if restricted:
                raise ToolExit("-E- Host is already restricted", rc=0)
            raise ToolExit("-E- There is only a single host, it cannot restrict itself")
        if restricted:
            raise ToolExit(PREPARED + "-I- configuring device...Failed\n"
                           "-E- Removing the restriction only effective on the ARM side")
        emit(PREPARED + CONFIGURED)  # privileging a privileged host writes the same value again
        return 0
    wanted = chosen if cmd in ("r", "restrict") else dict.fromkeys(FLAGS, False)
    with state.open_node() as wnode:
        wcard = next(c for c in wnode.cards if c.dir == card.dir)
        priv = wcard.data["privhost"]
        priv["level"] = "RESTRICTED" if cmd in ("r", "restrict") else "PRIVILEGED"
        pending = priv.setdefault("pending", {})
        for flag in FLAGS:
            on = bool(wanted[flag])
            if flag in NEEDS_POWER_CYCLE or flag in NEEDS_FW_RESET:
                if bool(priv["current"].get(flag)) == on:
                    pending.pop(flag, None)
                else:
                    pending[flag] = on
            else:
                priv["current"][flag] = on
    emit(PREPARED + CONFIGURED)
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
