"""Twin RDMA tools for the card's mlx5 devices: ``show_gids``, ``ibv_devinfo``, ``ibdev2netdev``, ``rdma``.

One RDMA device per PCI function, port 1, link layer Ethernet (RoCE). Port state follows the netdev as the twin
records it (up unless ``ip link set ... down`` or ``dpusim netdev set --down``; ``linux_state.set_netdev``).
The GID table holds the link-local GID from the netdev MAC and one GID per IPv4 address the twin holds for the
netdev (recorded from the twin's ``ip``, or by the lab with ``dpusim netdev set``), each as RoCE v1 and v2,
like mlx5 fills it.
``ibv_devinfo -v`` capability numbers are model values (no -v capture in the corpus; see ``render.rdma``).
"""

from __future__ import annotations

from dpusim import faults, state
from dpusim import linux_state as ls
from dpusim.render import rdma as render
from dpusim.tools._common import ToolExit, check_arm_up, emit, run_tool, visible_cards

NAMES = ("show_gids", "ibv_devinfo", "ibdev2netdev", "rdma")

VERBOSE_CAPS = {  # model values for a ConnectX-7 class device (ibv_devinfo -v)
    "max_mr_size": 0xFFFFFFFFFFFFFFFF, "page_size_cap": 0xFFFFFFFFFFFFF000, "max_qp": 131072, "max_qp_wr": 32768,
    "device_cap_flags": 0x21361C36, "max_sge": 30, "max_sge_rd": 30, "max_cq": 16777216, "max_cqe": 4194303,
    "max_mr": 16777216, "max_pd": 8388608, "max_qp_rd_atom": 16, "max_ee_rd_atom": 0, "max_res_rd_atom": 2097152,
    "max_qp_init_rd_atom": 16, "max_ee_init_rd_atom": 0, "atomic_cap": "ATOMIC_HCA (1)", "max_ee": 0,
    "max_rdd": 0, "max_mw": 16777216, "max_raw_ipv6_qp": 0, "max_raw_ethy_qp": 0, "max_mcast_grp": 2097152,
    "max_mcast_qp_attach": 240, "max_total_mcast_qp_attach": 503316480, "max_ah": 2147483647, "max_fmr": 0,
    "max_srq": 8388608, "max_srq_wr": 32767, "max_srq_sge": 31, "max_pkeys": 128, "local_ca_ack_delay": 16,
    "odp_general": 0x1, "odp_rc": 0x3F, "odp_uc": 0, "odp_ud": 0x1, "odp_xrc": 0x3F,
    "completion_timestamp_mask": 0x7FFFFFFFFFFFFFFF, "hca_core_clock": 156250, "raw_packet_caps": 0xF,
    "device_cap_flags_ex": 0x1421361C36, "max_tso": 262144, "tso_qpts": 1 << 8, "max_rwq_indirection_tables": 65536,
    "max_rwq_indirection_table_size": 2048, "rx_hash_function": 0x1, "rx_hash_fields_mask": 0x800000FF,
    "rss_qpts": 1 << 8, "max_wq_type_rq": 8388608, "qp_rate_limit_min": 1, "qp_rate_limit_max": 100000000,
    "pacing_qpts": 1 << 8, "max_cq_count": 65535, "max_cq_period": 4095, "max_dm_size": 131072,
}


def _ports(node: state.Node) -> list[dict]:
    vis = visible_cards(node)
    return [p for p in ls.rdma_ports(node) if p["card"] in vis]


def _active_mtu(netdev_mtu: int) -> int:
    """RoCE path MTU: the largest IB MTU that fits the netdev MTU minus RoCE v2 headers (kernel iboe_get_mtu)."""
    room = netdev_mtu - 96
    best = 256
    for mtu in (256, 512, 1024, 2048, 4096):
        if mtu <= room:
            best = mtu
    return best


def _hca(node: state.Node, p: dict, verbose: bool) -> dict:
    card = p["card"]
    up = ls.link_up(node, p["netdev"])
    port = {"port": p["port"], "state": "ACTIVE" if up else "DOWN", "max_mtu": 4096,
            "active_mtu": _active_mtu(ls.netdev_mtu(node, p["netdev"])), "sm_lid": 0, "port_lid": 0, "port_lmc": 0,
            "link_layer": "Ethernet"}
    if verbose:
        port.update({"max_msg_sz": 0x40000000, "port_cap_flags": 0x04010000, "port_cap_flags2": 0,
                     "pkey_tbl_len": 1, "gid_tbl_len": 255, "active_width": "4", "active_width_code": 2,
                     "active_speed": "50.0 Gbps", "active_speed_code": 64,
                     "phys_state": "LINK_UP" if up else "DISABLED", "phys_state_code": 5 if up else 3,
                     "gids": ls.gids(node, p)})
    return {"hca_id": p["ibdev"], "transport": 0, "fw_ver": card.data["firmware"]["running"]["version"],
            "node_guid": ls.colon_guid(ls.function_guid(card, p["fn"])),
            "sys_image_guid": ls.colon_guid(card.profile["base_guid"]), "vendor_id": 0x02C9,
            "vendor_part_id": int(card.profile["pci_device_id"], 16), "hw_ver": 0,
            "board_id": card.data["firmware"]["running"]["psid"], "ports": [port], "caps": VERBOSE_CAPS}


def _ibv_devinfo(node: state.Node, argv: list[str]) -> int:
    dev = None
    port = None
    verbose = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-v", "--verbose"):
            verbose = True
        elif arg in ("-l", "--list"):
            names = [p["ibdev"] for p in _ports(node)]
            emit("%d HCA%s found:\n" % (len(names), "s" if len(names) != 1 else "")
                 + "".join(f"\t{n}\n" for n in names) + "\n")
            return 0
        elif arg in ("-d", "--ib-dev") and i + 1 < len(argv):
            dev = argv[i + 1]
            i += 1
        elif arg.startswith("--ib-dev="):
            dev = arg.split("=", 1)[1]
        elif arg in ("-i", "--ib-port") and i + 1 < len(argv):
            try:
                port = int(argv[i + 1], 0)
            except ValueError:
                port = 0
            if port <= 0:
                raise ToolExit(_USAGE, rc=1)
            i += 1
        else:
            raise ToolExit(_USAGE, rc=255)
        i += 1
    ports = _ports(node)
    if dev is not None:
        ports = [p for p in ports if p["ibdev"] == dev]
        if not ports:
            raise ToolExit(f"IB device '{dev}' wasn't found", rc=255, stream="stderr")
    elif not ports:
        raise ToolExit("No IB devices found", rc=255, stream="stderr")
    if port is not None and port > 1:
        raise ToolExit("Invalid port requested for device", rc=4, stream="stderr")
    emit(render.ibv_devinfo([_hca(node, p, verbose) for p in ports], verbose=verbose, port=port))
    return 0


_USAGE = ("Usage: ibv_devinfo             print the ca attributes\n\nOptions:\n"
          "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n"
          "  -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n"
          "  -l, --list             print only the IB devices names\n"
          "  -v, --verbose          print all the attributes of the IB device(s)")


def _show_gids(node: state.Node, argv: list[str]) -> int:
    ports = _ports(node)
    if argv:
        ports = [p for p in ports if p["ibdev"] == argv[0]]
    rows = []
    for p in ports:
        for index, gid, ver in ls.gids(node, p):
            rows.append({"dev": p["ibdev"], "port": p["port"], "index": index, "gid": gid, "ver": ver,
                         "netdev": p["netdev"]})
    emit(render.show_gids(rows))
    return 0


def _ibdev2netdev(node: state.Node, argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        emit("ibdev2netdev <options>\n-h, --help                print help message\n"
             "-v, --verbose             print more info\n")
        return 0
    if len(argv) > 1 or (argv and argv[0] != "-v"):
        emit("ibdev2netdev <options>\n-h, --help                print help message\n"
             "-v, --verbose             print more info\n")
        return 255
    rows = []
    for p in _ports(node):
        card = p["card"]
        up = ls.link_up(node, p["netdev"])
        rows.append({"ibdev": p["ibdev"], "port": p["port"], "netdev": p["netdev"], "link": "Up" if up else "Down",
                     "pci": p["pci"], "devid": int(card.profile["pci_device_id"], 16),
                     "partid": card.profile["part_number"], "desc": card.profile["description"],
                     "fw": card.data["firmware"]["running"]["version"], "state": "ACTIVE" if up else "DOWN"})
    emit(render.ibdev2netdev(rows, verbose=bool(argv)))
    return 0


def _rdma(node: state.Node, argv: list[str], training: bool = False) -> tuple[int, bool]:
    """Exit status, and whether this was a read of the ports (``rdma link show``)."""
    args = [a for a in argv if a not in ("-d", "--details")]
    obj = args[0] if args else ""
    sub = args[1] if len(args) > 1 else "show"
    target = args[2] if len(args) > 2 else None
    ports = _ports(node)
    if obj in ("link", "l") and sub in ("show", "list"):
        links = []
        for p in ports:
            name = f"{p['ibdev']}/{p['port']}"
            if target is not None and target not in (name, p["ibdev"]):
                continue
            up = not training and ls.link_up(node, p["netdev"])
            links.append({"ibdev": p["ibdev"], "port": p["port"], "state": "ACTIVE" if up else "DOWN",
                          "physical_state": "LINK_UP" if up else "DISABLED", "netdev": p["netdev"]})
        if target is not None and not links:
            raise ToolExit("Wrong device name", rc=1, stream="stderr")
        emit(render.rdma_link(links))
        return 0, True
    if obj in ("dev", "d") and sub in ("show", "list"):
        devs = []
        for index, p in enumerate(ports):
            if target is not None and target != p["ibdev"]:
                continue
            card = p["card"]
            devs.append({"index": index, "ibdev": p["ibdev"], "node_type": "ca",
                         "fw": card.data["firmware"]["running"]["version"],
                         "node_guid": ls.colon_guid(ls.function_guid(card, p["fn"])),
                         "sys_image_guid": ls.colon_guid(card.profile["base_guid"])})
        if target is not None and not devs:
            raise ToolExit("Wrong device name", rc=1, stream="stderr")
        emit(render.rdma_dev(devs))
        return 0, False
    raise ToolExit("dpusim: rdma: the twin answers 'rdma link [show [DEV/PORT]]' and 'rdma dev [show [DEV]]' "
                   f"only, not {' '.join(argv) or '(no object)'}", rc=1, stream="stderr")


def _use_one_training_read() -> None:
    """Fault ``links_training``: a read of the ports found them DOWN; one of the fault's reads is used."""
    with state.open_node() as node:
        params = faults.active(node, "links_training")
        if params is None:
            return
        left = int(params.get("reads", 1)) - 1
        if left > 0:
            faults.set_fault(node, "links_training", dict(params, reads=left))
        else:
            faults.clear_fault(node, "links_training")


def body(argv: list[str], prog: str) -> int:
    with state.open_node(write=False) as node:
        check_arm_up(node)
        if prog == "ibv_devinfo":
            return _ibv_devinfo(node, argv)
        if prog == "show_gids":
            return _show_gids(node, argv)
        if prog == "ibdev2netdev":
            return _ibdev2netdev(node, argv)
        training = faults.active(node, "links_training") is not None
        rc, read_ports = _rdma(node, argv, training)
    if training and read_ports:  # after the read-only lock: the fault's count is written under the node's own lock
        _use_one_training_read()
    return rc


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
