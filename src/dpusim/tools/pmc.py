# ruff: noqa: UP031  (printf-style formats on purpose: they mirror linuxptp's printf formats)
"""``pmc -u -b 0 'GET PORT_DATA_SET'`` (linuxptp) against Firefly's ptp4l on the BlueField.

The port state comes from the twin state: Firefly's ptp4l configuration
(``<root>/etc/firefly/ptp4l.conf``, [global], written by roles/doca_services): ``slaveOnly 1`` or
``clientOnly 1`` -> ``SLAVE`` (it follows a grandmaster); otherwise ``MASTER`` (alone on the twin's
network, ptp4l assumes the grand master role). The clock identity is the twin's (EUI-64 from a hash of the
node name with ``fffe`` in the middle, as ptp4l builds it from a MAC).

Layout: linuxptp pmc_common.c / pmc.c (``sending: GET PORT_DATA_SET``, then per responding port a tab,
``<portIdentity> seq <n> RESPONSE MANAGEMENT PORT_DATA_SET `` and the fields on lines that start with two
tabs, names padded to 24 columns), as in the captures of tests/unit/fixtures/pmc/get-port-data-set.txt.
When ptp4l does not run (the Firefly container is not running) nothing answers: pmc prints only the
``sending:`` line and exits 0, as the real one does after its timeout.
"""

from __future__ import annotations

import hashlib

from dpusim import kubelet, state
from dpusim.tools._common import ToolExit, check_arm_up, emit, pop_flag, pop_value, run_tool
from dpusim.tools.vtysh import running

NAMES = ("pmc",)
CONTAINER = "doca-firefly"
CONF = ("etc", "firefly", "ptp4l.conf")
FIELDS = ("portIdentity", "portState", "logMinDelayReqInterval", "peerMeanPathDelay", "logAnnounceInterval",
          "announceReceiptTimeout", "logSyncInterval", "delayMechanism", "logMinPdelayReqInterval",
          "versionNumber")


def ptp_options(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if section == "global":
            parts = line.split(None, 1)
            out[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return out


def port_state(options: dict[str, str]) -> str:
    if options.get("slaveOnly") == "1" or options.get("clientOnly") == "1":
        return "SLAVE"
    return "MASTER"


def clock_id(name: str) -> str:
    digest = hashlib.sha256(name.encode()).hexdigest()
    return "%s.fffe.%s" % (digest[:6], digest[6:12])


def render(state_word: str, clock: str, options: dict[str, str]) -> str:
    port = clock + "-1"
    values = (port, state_word, options.get("logMinDelayReqInterval", "0"), "0",
              options.get("logAnnounceInterval", "1"), options.get("announceReceiptTimeout", "3"),
              options.get("logSyncInterval", "0"), "1", options.get("logMinPdelayReqInterval", "0"), "2")
    lines = ["\t%s seq 0 RESPONSE MANAGEMENT PORT_DATA_SET " % port]
    lines += ["\t\t%-24s%s" % (key, value) for key, value in zip(FIELDS, values, strict=True)]
    return "\n".join(lines) + "\n"


def body(argv: list[str], prog: str) -> int:
    args = list(argv)
    udp = pop_flag(args, "-u")
    boundary = pop_value(args, "-b")
    pop_value(args, "-f")
    pop_value(args, "-d")
    query = " ".join(" ".join(args).split()).upper()
    if query != "GET PORT_DATA_SET" or not udp or boundary not in (None, "0"):
        raise ToolExit("dpusim: %s in the twin answers only -u -b 0 'GET PORT_DATA_SET' (got %r)" % (prog, argv),
                       rc=1, stream="stderr")
    emit("sending: GET PORT_DATA_SET\n")
    with state.open_node() as node:
        check_arm_up(node)
        if node.role != "dpu" or not running(node, CONTAINER):
            return 0
        path = kubelet.fs_root(node).joinpath(*CONF)
        options = ptp_options(path.read_text(encoding="utf-8")) if path.is_file() else {}
        name = kubelet.node_name(node)
    emit(render(port_state(options), clock_id(name), options))
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
