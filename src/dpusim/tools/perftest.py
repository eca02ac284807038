# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tool)
"""Twin ``ib_write_bw`` (perftest), RoCE, with or without ``--use_cuda``.

Layout: byte for byte the verbatim samples ``corpus/perftest/ib_write_bw-cuda-{client-rdma_cm-16qp,
server-complete,server-waiting}`` (TABs kept): the ``BW peak won't be measured`` warning with ``-D``, the CUDA
inline note, the server's ``Waiting for client`` banner, the active-MTU note, the CUDA init lines, the settings
block, per QP the local (then remote) address and GID (bytes as ``%02d``), and the result row
`` %-7lu    %-10lu       %-7.2lf            %-7.2lf\\t\\t     %-7.6lf`` (Gb/sec with ``--report_gbits``).

The ``ibv_wr* API`` line follows the perftest release the profile's ``perftest_layout`` names (override
``DPUSIM_PERFTEST_LAYOUT``; linux-rdma/perftest src/perftest_parameters.c): ``2024`` (before 25.01, e.g. Debian's
4.5-0.17) the line alone; ``2025`` (25.01 .. 25.07, commit 1ed34b1) ``\t\tUsing DDP      : OFF`` after it;
``2025-10`` (25.10 and later, commit 799923f) ``\t\tUsing Enhanced Reorder      : OFF``.

Forms answered: ``ib_write_bw -d DEV [-i PORT] -x GID -R -T TOS [-s SIZE] [-q QPS] [-D SEC | -n ITERS] [-m MTU]
[-F] [--report_gbits] [-p TCPPORT] [--source_ip IP] [--use_cuda[=N]] [--use_cuda_dmabuf] [SERVER]``;
other forms are refused with a message naming what the twin answers.

Model (not a capture), so results follow the node's state:
- line rate 200 Gb/s (the profile's 4x 50 Gb/s port of ``ibv_devinfo -v``); payload efficiency
  MTU / (MTU + 98) (RoCE v2 per-packet bytes on the wire: Ethernet 14 + FCS 4 + preamble/IFG 20 + IPv4 20 + UDP 8
  + BTH 12 + RETH 16 + ICRC 4); the corpus client (MTU 1024 on a 200 G port) measured 181.46, this gives 182.6;
- lossless when PFC is on for the priority the traffic gets: with trust dscp the configured dscp2prio entry of the
  ToS's DSCP (``priority_of``; no entry: priority 0), with trust pcp priority 0; else a lossy factor 0.6
  (retransmissions under load; a model value) and the port's ``out_of_sequence`` / ``packet_seq_err`` counters
  rise by one in ``LOSS_EVERY`` packets sent (``_count``; lossless traffic raises only the packet/octet counters);
- ``--use_cuda`` without ``nvidia_peermem`` loaded: the GPU buffer cannot be registered, and the tool stops with
  perftest's MR error lines (as a real ``ib_read_bw`` run printed them, public issue report raids-lab/crater #339:
  ``Couldn't allocate MR`` / ``failed to create mr`` / ``Failed to create MR`` / `` Couldn't create IB resources``).
- A server (no SERVER argument) prints its banner, then waits (at most ``DPUSIM_PERFTEST_WAIT`` s, default 300) for a
  client of the same TCP port on this machine (rendezvous files under ``$TMPDIR/dpusim-perftest``: ``PORT.wait``
  holds the listening server's pid) and prints the client's numbers.
- A client needs a listening server, as the real one does: perftest's ``ethernet_client_connect`` tries the
  address once, with no retry, so a client started before its server (or after it ended) stops with rc 1 and
  ``Couldn't connect to ADDR:PORT`` (``CONNECT_ERROR``, src/perftest_communication.c and src/write_bw.c; the
  message ran on without a newline before commit 5b7407d, first released in 24.01, hence the ``2024`` layout's form).
"""

from __future__ import annotations

import ipaddress
import json
import os
import tempfile
import time
from pathlib import Path

from dpusim import linux_state as ls
from dpusim import state, telemetry
from dpusim.tools._common import ToolExit, emit, run_tool, visible_cards

NAMES = ("ib_write_bw",)

LINE = "-" * 87 + "\n"
LINE_RATE_GBPS = 200.0
WIRE_OVERHEAD = 98
LOSSY_FACTOR = 0.6
# Model value: on a priority without PFC, 1 packet in LOSS_EVERY is dropped under load; the receiver counts it as
# out_of_sequence and the sender gets a packet_seq_err NAK and retransmits (mlx5 hw_counters, Linux
# Documentation/ABI/stable/sysfs-class-infiniband). Lossless traffic counts neither.
LOSS_EVERY = 1000
IB_MTUS = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
DEFAULT_PORT = 18515
GPU_BUFFER = 2097152
# establish_connection's failure on the client (rdma_cm QPs, TCP exchange): by perftest layout
CONNECT_ERROR = {
    "2024": "Couldn't connect to %s:%d\nUnable to open file descriptor for socket connection Unable to init the socket "
            "connection\n",
    "2025": "Couldn't connect to %s:%d\nUnable to open file descriptor for socket connection\n Unable to init the "
            "socket connection\n",
}
MR_ERROR = "Couldn't allocate MR\nfailed to create mr\nFailed to create MR\n Couldn't create IB resources\n"
USAGE = ("dpusim: ib_write_bw: the twin answers -d DEV [-i PORT] -x GID -R -T TOS [-s SIZE] [-q QPS] "
         "[-D SEC|-n ITERS] [-m MTU] [-F] [--report_gbits] [-p PORT] [--source_ip IP] [--use_cuda[=N]] "
         "[--use_cuda_dmabuf] [SERVER] only, not: %s")


# ----------------------------------------------------------------------------------------------- rendering

def gid_text(gid: str) -> str:
    """``fe80:0000:...`` (8 groups of 4 hex digits) -> perftest's 16 bytes as ``%02d`` joined by ``:``."""
    digits = gid.replace(":", "")
    return ":".join("%02d" % int(digits[i:i + 2], 16) for i in range(0, 32, 2))


def render_head(r: dict) -> str:
    out = []
    if r.get("duration"):
        out.append(" WARNING: BW peak won't be measured in this run.\n")
    if r.get("cuda"):
        out.append("Perftest doesn't supports CUDA tests with inline messages: inline size set to 0\n")
    if r.get("server"):
        out.append("\n" + "*" * 36 + "\n* Waiting for client to connect... *\n" + "*" * 36 + "\n")
    return "".join(out)


def render_cuda(r: dict) -> str:
    out = []
    if r.get("mtu_reduced_to"):
        out.append("Requested mtu is higher than active mtu \nChanging to active mtu - %d\n" % r["mtu_reduced_to"])
    cuda = r.get("cuda")
    if cuda:
        out.append("initializing CUDA\nListing all CUDA devices in system:\n")
        for i, addr in enumerate(cuda["devices"]):
            out.append("CUDA device %d: PCIe address is %s\n" % (i, addr))
        out.append("\nPicking device No. %d\n" % cuda["index"])
        out.append("[pid = %d, dev = %d] device name = [%s]\n" % (cuda["pid"], cuda["index"], cuda["name"]))
        out.append("creating CUDA Ctx\nmaking it the current CUDA Ctx\nCUDA device integrated: 0\n")
        out.append("cuMemAlloc() of a %d bytes GPU buffer\n" % GPU_BUFFER)
        out.append("allocated GPU buffer address at %016x pointer=0x%x\n" % (cuda["address"], cuda["address"]))
    return "".join(out)


WR_API_LINE = {
    "2024": " ibv_wr* API     : ON\n",
    "2025": " ibv_wr* API     : ON\t\tUsing DDP      : OFF\n",
    "2025-10": " ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF\n",
}


def layout_of(node: state.Node) -> str:
    layout = os.environ.get("DPUSIM_PERFTEST_LAYOUT") or (
        node.cards[0].profile.get("perftest_layout", "2025") if node.cards else "2025")
    if layout not in WR_API_LINE:
        raise ToolExit("dpusim: unknown perftest layout %r (%s)" % (layout, ", ".join(WR_API_LINE)), rc=1,
                       stream="stderr")
    return layout


def render_report(r: dict) -> str:
    out = [LINE, "                    RDMA_Write BW Test\n"]
    out.append(" Dual-port       : OFF\t\tDevice         : %s\n" % r["device"])
    out.append(" Number of qps   : %d\t\tTransport type : IB\n" % r["qps"])
    out.append(" Connection type : RC\t\tUsing SRQ      : OFF\n")
    out.append(" PCIe relax order: ON\t\tLock-free      : OFF\n")
    out.append(WR_API_LINE[r.get("layout", "2025")])
    if not r.get("server"):
        out.append(" TX depth        : 128\n")
    out.append(" CQ Moderation   : 1\n")
    out.append(" Mtu             : %d[B]\n" % r["mtu"])
    out.append(" Link type       : Ethernet\n")
    out.append(" GID index       : %d\n" % r["gid_index"])
    out.append(" Max inline data : 0[B]\n")
    out.append(" rdma_cm QPs\t : ON\n")
    out.append(" Data ex. method : rdma_cm \tTOS    : %d\n" % r["tos"])
    out.append(LINE)
    if r.get("server"):
        out.append(" Waiting for client rdma_cm QP to connect\n"
                   " Please run the same command with the IB/RoCE interface IP\n")
        out.append(LINE)
    for side in ("local", "remote"):
        for qpn, psn, gid in r[side]:
            out.append(" %s address: LID 0000 QPN 0x%04x PSN 0x%06x\n GID: %s\n" % (side, qpn, psn, gid_text(gid)))
    out.append(LINE)
    out.append(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n")
    size, iters, peak, avg, rate = r["row"]
    out.append(" %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f\n" % (size, iters, peak, avg, rate))
    out.append(LINE)
    if r.get("cuda"):
        out.append("deallocating GPU buffer %016x\ndestroying current CUDA Ctx\n" % r["cuda"]["address"])
    return "".join(out)


# ----------------------------------------------------------------------------------------------- model

def _args(argv: list[str]) -> dict:
    opts = {"device": None, "ib_port": 1, "gid_index": None, "rdma_cm": False, "tos": None, "size": 65536, "qps": 1,
            "duration": None, "iters": 5000, "mtu": None, "port": DEFAULT_PORT, "cuda": None, "server_addr": None}
    valued = {"-d": "device", "-i": "ib_port", "-x": "gid_index", "-T": "tos", "-s": "size", "-q": "qps",
              "-D": "duration", "-n": "iters", "-m": "mtu", "-p": "port", "--source_ip": None}
    ints = {"ib_port", "gid_index", "tos", "size", "qps", "duration", "iters", "mtu", "port"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in valued:
            if i + 1 >= len(argv):
                raise ToolExit(USAGE % " ".join(argv), rc=1, stream="stderr")
            key = valued[arg]
            if key:
                value = argv[i + 1]
                try:
                    opts[key] = int(value) if key in ints else value
                except ValueError:
                    raise ToolExit(USAGE % " ".join(argv), rc=1, stream="stderr") from None
            i += 2
            continue
        if arg == "-R":
            opts["rdma_cm"] = True
        elif arg == "--use_cuda" or arg.startswith("--use_cuda="):
            opts["cuda"] = int(arg.split("=", 1)[1]) if "=" in arg else 0
        elif arg in ("-F", "--report_gbits", "--use_cuda_dmabuf"):
            pass
        elif not arg.startswith("-") and opts["server_addr"] is None:
            opts["server_addr"] = arg
        else:
            raise ToolExit(USAGE % " ".join(argv), rc=1, stream="stderr")
        i += 1
    if not opts["rdma_cm"] or opts["tos"] is None or opts["gid_index"] is None or not opts["device"]:
        raise ToolExit(USAGE % " ".join(argv), rc=1, stream="stderr")
    return opts


def _port(node: state.Node, device: str) -> dict:
    if not visible_cards(node):
        raise ToolExit("No IB devices found", rc=1, stream="stderr")
    for p in ls.rdma_ports(node):
        if p["ibdev"] == device:
            return p
    # perftest src/perftest_resources.c ctx_find_dev: fprintf(stderr, "IB device %s not found\n", ib_devname)
    raise ToolExit("IB device %s not found\n Unable to find the Infiniband/RoCE device" % device, rc=1,
                   stream="stderr")


def active_mtu(netdev_mtu: int) -> int:
    room = netdev_mtu - 96  # kernel iboe_get_mtu: RoCE v2 headers
    return max([m for m in IB_MTUS if m <= room] or [256])


def bandwidth_gbps(mtu: int, lossless: bool) -> float:
    bw = LINE_RATE_GBPS * mtu / (mtu + WIRE_OVERHEAD)
    return bw if lossless else bw * LOSSY_FACTOR


def priority_of(q: dict, tos: int) -> int:
    """The priority RoCE traffic of ToS ``tos`` gets on a port with the mlnx_qos state ``q``: with trust dscp, the
    configured dscp2prio entry of its DSCP (the DCB app table ``mlnx_qos --dscp2prio`` / ``--trust dscp`` fill;
    a DSCP without an entry gets priority 0, mlx5 en_dcbnl.c mlx5e_set_trust_state / dscp2prio); with trust pcp,
    the VLAN PCP, 0 for the untagged RoCE the twin models."""
    if q.get("trust") != "dscp":
        return 0
    dscp = tos >> 2
    return next((prio for d, prio in q.get("app_table", []) if d == dscp), 0)


def _lossless(node: state.Node, netdev: str, tos: int) -> bool:
    q = ls.qos(node, netdev)
    return bool(q.get("pfc", [0] * 8)[priority_of(q, tos)])


def _count(opts: dict, bw_gbps: float, mtu: int, lossless: bool) -> None:
    """The client's traffic on its port's counters (shared by the card's host and DPU sides): packets and octets
    sent; on a lossy priority also the drops' out_of_sequence / packet_seq_err."""
    seconds = opts["duration"] or opts["iters"] * opts["size"] * 8 / (bw_gbps * 1e9)
    packets = int(bw_gbps * 1e9 / 8 * seconds / mtu)
    deltas = {"port_xmit_packets": packets, "port_xmit_data": packets * mtu // 4}
    if not lossless:
        deltas.update(out_of_sequence=packets // LOSS_EVERY, packet_seq_err=packets // LOSS_EVERY)
    with state.open_node() as node:
        port = _port(node, opts["device"])
        telemetry.add_traffic(port["card"], port["fn"], **deltas)


def _rendezvous(port: int, what: str = "json") -> Path:
    """``PORT.wait`` (a server listens), ``PORT.json`` (the client's numbers for it)."""
    d = Path(os.environ.get("TMPDIR") or tempfile.gettempdir()) / "dpusim-perftest"
    d.mkdir(parents=True, exist_ok=True)
    return d / ("%d.%s" % (port, what))


def _listening(port: int) -> bool:
    """A server waits on PORT: its ``PORT.wait`` names a live process (a killed server's file is no listener)."""
    try:
        pid = int(_rendezvous(port, "wait").read_text())
        if pid <= 0:
            return False
        os.kill(pid, 0)
    except PermissionError:
        return True  # alive, another user's
    except (OSError, ValueError):  # no file, no number, no such process
        return False
    return True


def _qps(seed: int, count: int, gid: str) -> list[tuple[int, int, str]]:
    return [(0xC6 + i, (seed * 2654435761 + i * 40503) & 0xFFFFFF, gid) for i in range(count)]


def _peer_gid(addr: str | None, fallback: str) -> str:
    if addr and addr.count(".") == 3 and all(p.isdigit() for p in addr.split(".")):
        return ls.gid_from_ipv6(ipaddress.IPv6Address("::ffff:" + addr))
    return fallback


def body(argv: list[str], prog: str) -> int:
    opts = _args(argv)
    with state.open_node(write=False) as node:
        p = _port(node, opts["device"])
        table = ls.gids(node, p)
        gid = next((g for i, g, _v in table if i == opts["gid_index"]), None)
        if gid is None:
            # the real message for an empty GID entry is not in the corpus: a twin message instead
            raise ToolExit("dpusim: ib_write_bw: GID index %d of %s port %d is empty (see show_gids)"
                           % (opts["gid_index"], opts["device"], opts["ib_port"]), rc=1, stream="stderr")
        active = active_mtu(ls.netdev_mtu(node, p["netdev"]))
        lossless = _lossless(node, p["netdev"], opts["tos"])
        peermem = "nvidia_peermem" in ls.modules(node)
        gpus = ls.gpus(node)
        layout = layout_of(node)
    server = opts["server_addr"] is None
    mtu = min(opts["mtu"], active) if opts["mtu"] else active
    r = {"duration": opts["duration"], "server": server, "device": opts["device"], "qps": opts["qps"], "mtu": mtu,
         "gid_index": opts["gid_index"], "tos": opts["tos"],
         "mtu_reduced_to": IB_MTUS[active] if opts["mtu"] and opts["mtu"] > active else None, "cuda": None,
         "layout": layout}
    if opts["cuda"] is not None:
        if opts["cuda"] >= len(gpus):
            raise ToolExit("dpusim: ib_write_bw: no CUDA device %d (this node has %d)" % (opts["cuda"], len(gpus)),
                           rc=1, stream="stderr")
        g = gpus[opts["cuda"]]
        r["cuda"] = {"devices": [x["bus_id"][9:14] for x in gpus], "index": opts["cuda"], "pid": os.getpid(),
                     "name": g["name"], "address": 0x7F0000000000 + (os.getpid() << 21)}
    emit(render_head(r))
    if not server and not _listening(opts["port"]):
        raise ToolExit(CONNECT_ERROR["2024" if layout == "2024" else "2025"] % (opts["server_addr"], opts["port"]),
                       rc=1, stream="stderr")
    if server:
        rv = _rendezvous(opts["port"])
        rv.unlink(missing_ok=True)
        _rendezvous(opts["port"], "wait").write_text(str(os.getpid()))
        limit = float(os.environ.get("DPUSIM_PERFTEST_WAIT", "300"))
        started = time.monotonic()
        while not rv.exists():
            if time.monotonic() - started > limit:
                _rendezvous(opts["port"], "wait").unlink(missing_ok=True)
                raise ToolExit("dpusim: ib_write_bw server: no client on port %d within %g s" % (opts["port"], limit),
                               rc=1, stream="stderr")
            time.sleep(0.2)
        time.sleep(0.05)  # the client writes the file in one go; let it finish
        peer = json.loads(rv.read_text())
        rv.unlink()
        _rendezvous(opts["port"], "wait").unlink(missing_ok=True)
    emit(render_cuda(r))
    if r["cuda"] and not peermem:
        raise ToolExit(MR_ERROR, rc=1, stream="stderr")
    if server:
        row = tuple(peer["row"])
        remote_gid = peer["gid"]
    else:
        bw = bandwidth_gbps(mtu, lossless)
        size = opts["size"]
        iters = int(bw * 1e9 * opts["duration"] / (size * 8)) if opts["duration"] else opts["iters"]
        row = (size, iters, 0.0 if opts["duration"] else bw, bw, bw * 1e9 / (size * 8) / 1e6)
        remote_gid = _peer_gid(opts["server_addr"], gid)
        _count(opts, bw, mtu, lossless)
        if _listening(opts["port"]):
            tmp = _rendezvous(opts["port"], "tmp")
            tmp.write_text(json.dumps({"row": row, "gid": gid}))
            tmp.replace(_rendezvous(opts["port"]))
    seed = sum(map(ord, opts["device"])) + opts["port"]
    r.update({"local": _qps(seed, opts["qps"], gid), "remote": _qps(seed + 1, opts["qps"], remote_gid), "row": row})
    emit(render_report(r))
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
