"""RDMA tool renderers: show_gids, ibv_devinfo, ibdev2netdev, rdma (iproute2).

- show_gids: ``corpus/show_gids/FORMAT-from-source.md`` + verbatim cx7-vf-net1-container (TAB separated).
- ibv_devinfo: ``corpus/ibv_devinfo/FORMAT-from-source.md`` (rdma-core libibverbs/examples/devinfo.c): a blank
  line after every port block; ``-v`` adds the device scalar lines, the per-port lines and the GID table
  (RoCE v1 GIDs as 8 hex groups, RoCE v2 through inet_ntop, both with ``, RoCE vN`` on Ethernet).
  The ``-v`` device block (flag names, ODP/TSO/RSS/packet pacing/tag matching/CQ moderation caps) follows
  devinfo.c's print_hca_cap order; GID lines carry the RoCE type as later rdma-core prints it. No ``-v``
  capture exists in the corpus: the layout is from source only.
- ibdev2netdev: mlnx-tools ofed_scripts/ibdev2netdev: ``<ibdev> port <n> ==> <netdev> (Up|Down)``, devices in
  ``ls /sys/class/infiniband`` order; ``-v``: ``<pci> <ibdev> (MT<devid> - <partid %-11s>) <desc %-15s> fw <fw>
  port <n> (<state %-6s>) ==> <netdev> (<Up|Down>)``.
- rdma link / dev: verbatim corpus/rdma/sf-rdma-link-and-dev-show-parav.
"""

# ruff: noqa: UP031  (printf-style formats kept identical to the tools' own format strings)
from __future__ import annotations

import ipaddress


def _gid_bytes(gid: str) -> bytes:
    return bytes.fromhex(gid.replace(":", ""))


def gid_ipv4(gid: str) -> str | None:
    """The IPv4 address of an IPv4-mapped GID (``::ffff:a.b.c.d``), else None."""
    raw = _gid_bytes(gid)
    if raw[:12] == b"\x00" * 10 + b"\xff\xff":
        return str(ipaddress.IPv4Address(raw[12:]))
    return None


def show_gids(rows: list[dict]) -> str:
    """rows: ``[{"dev", "port", "index", "gid", "ver" ("v1"|"v2"), "netdev"}]`` in sysfs order."""
    out = ["DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV",
           "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---"]
    for r in rows:
        ipv4 = gid_ipv4(r["gid"])
        if ipv4:
            out.append(f"{r['dev']}\t{r['port']}\t{r['index']}\t{r['gid']}\t{ipv4}  \t{r['ver']}\t{r['netdev']}")
        else:
            out.append(f"{r['dev']}\t{r['port']}\t{r['index']}\t{r['gid']}\t\t\t{r['ver']}\t{r['netdev']}")
    out.append(f"n_gids_found={len(rows)}")
    return "".join(line + "\n" for line in out)


MTU_CODES = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
PORT_STATES = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4}


def _verbose_gid(index: int, gid: str, ver: str, link_layer: str) -> str:
    suffix = f", RoCE {ver}" if link_layer == "Ethernet" else ""
    if ver == "v2":
        addr = ipaddress.IPv6Address(_gid_bytes(gid))
        # glibc inet_ntop writes IPv4-mapped addresses in dotted form (Python < 3.13 does not)
        text = f"::ffff:{addr.ipv4_mapped}" if addr.ipv4_mapped else str(addr)
        return f"\t\t\tGID[{index:3d}]:\t\t{text}{suffix}"
    return f"\t\t\tGID[{index:3d}]:\t\t{gid}{suffix}"


# ibv_devinfo -v scalar device lines (devinfo.c print_hca_cap), in order: (label with its tabs, caps key, format).
VERBOSE_DEVICE_LINES: tuple[tuple[str, str, str], ...] = (
    ("\tmax_mr_size:\t\t\t", "max_mr_size", "0x%x"), ("\tpage_size_cap:\t\t\t", "page_size_cap", "0x%x"),
    ("\tmax_qp:\t\t\t\t", "max_qp", "%d"), ("\tmax_qp_wr:\t\t\t", "max_qp_wr", "%d"),
    ("\tdevice_cap_flags:\t\t", "device_cap_flags", "0x%08x"), ("\tmax_sge:\t\t\t", "max_sge", "%d"),
    ("\tmax_sge_rd:\t\t\t", "max_sge_rd", "%d"), ("\tmax_cq:\t\t\t\t", "max_cq", "%d"),
    ("\tmax_cqe:\t\t\t", "max_cqe", "%d"), ("\tmax_mr:\t\t\t\t", "max_mr", "%d"),
    ("\tmax_pd:\t\t\t\t", "max_pd", "%d"), ("\tmax_qp_rd_atom:\t\t\t", "max_qp_rd_atom", "%d"),
    ("\tmax_ee_rd_atom:\t\t\t", "max_ee_rd_atom", "%d"), ("\tmax_res_rd_atom:\t\t", "max_res_rd_atom", "%d"),
    ("\tmax_qp_init_rd_atom:\t\t", "max_qp_init_rd_atom", "%d"),
    ("\tmax_ee_init_rd_atom:\t\t", "max_ee_init_rd_atom", "%d"),
    ("\tatomic_cap:\t\t\t", "atomic_cap", "%s"), ("\tmax_ee:\t\t\t\t", "max_ee", "%d"),
    ("\tmax_rdd:\t\t\t", "max_rdd", "%d"), ("\tmax_mw:\t\t\t\t", "max_mw", "%d"),
    ("\tmax_raw_ipv6_qp:\t\t", "max_raw_ipv6_qp", "%d"), ("\tmax_raw_ethy_qp:\t\t", "max_raw_ethy_qp", "%d"),
    ("\tmax_mcast_grp:\t\t\t", "max_mcast_grp", "%d"), ("\tmax_mcast_qp_attach:\t\t", "max_mcast_qp_attach", "%d"),
    ("\tmax_total_mcast_qp_attach:\t", "max_total_mcast_qp_attach", "%d"), ("\tmax_ah:\t\t\t\t", "max_ah", "%d"),
    ("\tmax_fmr:\t\t\t", "max_fmr", "%d"), ("\tmax_srq:\t\t\t", "max_srq", "%d"),
    ("\tmax_srq_wr:\t\t\t", "max_srq_wr", "%d"), ("\tmax_srq_sge:\t\t\t", "max_srq_sge", "%d"),
    ("\tmax_pkeys:\t\t\t", "max_pkeys", "%d"), ("\tlocal_ca_ack_delay:\t\t", "local_ca_ack_delay", "%d"),
)


# ibv_device_cap_flags bits and the names devinfo.c prints for them, in its order.
DEVICE_CAP_FLAGS: tuple[tuple[int, str], ...] = (
    (0, "RESIZE_MAX_WR"), (1, "BAD_PKEY_CNTR"), (2, "BAD_QKEY_CNTR"), (3, "RAW_MULTI"), (4, "AUTO_PATH_MIG"),
    (5, "CHANGE_PHY_PORT"), (6, "UD_AV_PORT_ENFORCE"), (7, "CURR_QP_STATE_MOD"), (8, "SHUTDOWN_PORT"),
    (9, "INIT_TYPE"), (10, "PORT_ACTIVE_EVENT"), (11, "SYS_IMAGE_GUID"), (12, "RC_RNR_NAK_GEN"), (13, "SRQ_RESIZE"),
    (14, "N_NOTIFY_CQ"), (17, "MEM_WINDOW"), (18, "UD_IP_CSUM"), (20, "XRC"), (21, "MEM_MGT_EXTENSIONS"),
    (23, "MEM_WINDOW_TYPE_2A"), (24, "MEM_WINDOW_TYPE_2B"), (25, "RC_IP_CSUM"), (26, "RAW_IP_CSUM"),
    (29, "MANAGED_FLOW_STEERING"),
)
ODP_TRANSPORT = ((0, "SUPPORT_SEND"), (1, "SUPPORT_RECV"), (2, "SUPPORT_WRITE"), (3, "SUPPORT_READ"),
                 (4, "SUPPORT_ATOMIC"), (5, "SUPPORT_SRQ"))
RAW_PACKET_CAPS = ((0, "C-VLAN stripping offload"), (1, "Scatter FCS offload"), (2, "IP csum offload"),
                   (3, "Delay drop"))
FLAG_INDENT = "\t\t\t\t\t"


def _flags(value: int, table: tuple[tuple[int, str], ...], hex_width: str = "X") -> list[str]:
    out = [FLAG_INDENT + name for bit, name in table if value & (1 << bit)]
    unknown = value & ~sum(1 << bit for bit, _ in table)
    if unknown:
        out.append(FLAG_INDENT + ("Unknown flags: 0x%" + hex_width) % unknown)
    return out


def _qp_types(qpts: int) -> list[str]:
    out = []
    if qpts & (1 << 8):  # IBV_QPT_RAW_PACKET = 8
        out.append(FLAG_INDENT + "SUPPORT_RAW_PACKET")
    if qpts & (1 << 4):  # IBV_QPT_UD = 4
        out.append(FLAG_INDENT + "SUPPORT_UD")
    return out


def _verbose_device(c: dict) -> list[str]:
    """The ``-v`` device block of devinfo.c (print_hca_cap, verbose branch), in its order."""
    out = []
    for label, key, fmt in VERBOSE_DEVICE_LINES:
        if key in ("max_srq_wr", "max_srq_sge") and not c.get("max_srq"):
            continue
        out.append(label + fmt % c.get(key, 0))
        if key == "device_cap_flags":
            out += _flags(c.get(key, 0), DEVICE_CAP_FLAGS)
    out.append("\tgeneral_odp_caps:")
    out += _flags(c.get("odp_general", 0), ((0, "ODP_SUPPORT"), (1, "ODP_SUPPORT_IMPLICIT")))
    for name in ("rc", "uc", "ud", "xrc"):
        out.append(f"\t{name}_odp_caps:")
        trans = c.get(f"odp_{name}", 0)
        out += _flags(trans, ODP_TRANSPORT) if trans else [FLAG_INDENT + "NO SUPPORT"]
    if c.get("completion_timestamp_mask"):
        out.append("\tcompletion timestamp_mask:\t\t\t0x%016x" % c["completion_timestamp_mask"])
    else:
        out.append("\tcompletion_timestamp_mask not supported")
    if c.get("hca_core_clock"):
        out.append("\thca_core_clock:\t\t\t%dkHZ" % c["hca_core_clock"])
    else:
        out.append("\tcore clock not supported")
    if c.get("raw_packet_caps"):
        out.append("\traw packet caps:")
        out += [FLAG_INDENT + name for bit, name in RAW_PACKET_CAPS if c["raw_packet_caps"] & (1 << bit)]
    out.append("\tdevice_cap_flags_ex:\t\t0x%X" % c.get("device_cap_flags_ex", 0))
    ex = c.get("device_cap_flags_ex", 0) & 0xFFFFFFFF00000000
    out += _flags(ex, ((34, "RAW_SCATTER_FCS"), (36, "PCI_WRITE_END_PADDING")))  # IBV_DEVICE_* bits
    out.append("\ttso_caps:")
    out.append("\tmax_tso:\t\t\t%d" % c.get("max_tso", 0))
    if c.get("max_tso"):
        out.append("\tsupported_qp:")
        out += _qp_types(c.get("tso_qpts", 0))
    out.append("\trss_caps:")
    out.append("\t\tmax_rwq_indirection_tables:\t\t\t%u" % c.get("max_rwq_indirection_tables", 0))
    out.append("\t\tmax_rwq_indirection_table_size:\t\t\t%u" % c.get("max_rwq_indirection_table_size", 0))
    out.append("\t\trx_hash_function:\t\t\t\t0x%x" % c.get("rx_hash_function", 0))
    out.append("\t\trx_hash_fields_mask:\t\t\t\t0x%X" % c.get("rx_hash_fields_mask", 0))
    if c.get("rss_qpts"):
        out.append("\t\tsupported_qp:")
        out += _qp_types(c["rss_qpts"])
    out.append("\tmax_wq_type_rq:\t\t\t%u" % c.get("max_wq_type_rq", 0))
    out.append("\tpacket_pacing_caps:")
    out.append("\t\tqp_rate_limit_min:\t%ukbps" % c.get("qp_rate_limit_min", 0))
    out.append("\t\tqp_rate_limit_max:\t%ukbps" % c.get("qp_rate_limit_max", 0))
    if c.get("qp_rate_limit_max"):
        out.append("\t\tsupported_qp:")
        out += _qp_types(c.get("pacing_qpts", 0))
    if c.get("max_num_tags"):
        out.append("\tmax_rndv_hdr_size:\t\t%u" % c["max_rndv_hdr_size"])
        out.append("\tmax_num_tags:\t\t\t%u" % c["max_num_tags"])
        out.append("\tmax_ops:\t\t\t%u" % c["max_ops"])
        out.append("\tmax_sge:\t\t\t%u" % c["tm_max_sge"])
        out.append("\tflags:")
        out.append(FLAG_INDENT + "IBV_TM_CAP_RC")
    else:
        out.append("\ttag matching not supported")
    if c.get("max_cq_count") and c.get("max_cq_period"):
        out += ["", "\tcq moderation caps:", "\t\tmax_cq_count:\t%u" % c["max_cq_count"],
                "\t\tmax_cq_period:\t%u us" % c["max_cq_period"], ""]
    if c.get("max_dm_size"):
        out += ["\tmaximum available device memory:\t%dBytes" % c["max_dm_size"], ""]
    return out


def ibv_devinfo(hcas: list[dict], verbose: bool = False, port: int | None = None) -> str:
    """hcas: ``[{"hca_id", "transport" (int, 0 = InfiniBand), "fw_ver", "node_guid", "sys_image_guid",
    "vendor_id", "vendor_part_id", "hw_ver", "board_id", "ports": [{"port", "state", "max_mtu", "active_mtu",
    "sm_lid", "port_lid", "port_lmc", "link_layer", "gids"?: [(index, gid, ver)], ...}], "caps"?: {...}}]``."""
    out: list[str] = []
    for h in hcas:
        out.append(f"hca_id:\t{h['hca_id']}")
        out.append("\ttransport:\t\t\t%s (%d)" % ("InfiniBand" if h["transport"] == 0 else "unknown", h["transport"]))
        if h.get("fw_ver"):
            out.append(f"\tfw_ver:\t\t\t\t{h['fw_ver']}")
        out.append(f"\tnode_guid:\t\t\t{h['node_guid']}")
        out.append(f"\tsys_image_guid:\t\t\t{h['sys_image_guid']}")
        out.append("\tvendor_id:\t\t\t0x%04x" % h["vendor_id"])
        out.append("\tvendor_part_id:\t\t\t%d" % h["vendor_part_id"])
        out.append("\thw_ver:\t\t\t\t0x%X" % h["hw_ver"])
        if h.get("board_id"):
            out.append(f"\tboard_id:\t\t\t{h['board_id']}")
        out.append("\tphys_port_cnt:\t\t\t%d" % len(h["ports"]))
        if verbose:
            out += _verbose_device(h["caps"])
        for p in h["ports"]:
            if port is not None and p["port"] != port:
                continue
            out.append("\t\tport:\t%d" % p["port"])
            out.append("\t\t\tstate:\t\t\tPORT_%s (%d)" % (p["state"], PORT_STATES[p["state"]]))
            out.append("\t\t\tmax_mtu:\t\t%d (%d)" % (p["max_mtu"], MTU_CODES[p["max_mtu"]]))
            out.append("\t\t\tactive_mtu:\t\t%d (%d)" % (p["active_mtu"], MTU_CODES[p["active_mtu"]]))
            out.append("\t\t\tsm_lid:\t\t\t%d" % p["sm_lid"])
            out.append("\t\t\tport_lid:\t\t%d" % p["port_lid"])
            out.append("\t\t\tport_lmc:\t\t0x%02x" % p["port_lmc"])
            out.append("\t\t\tlink_layer:\t\t%s" % p["link_layer"])
            if verbose:
                out.append("\t\t\tmax_msg_sz:\t\t0x%x" % p["max_msg_sz"])
                out.append("\t\t\tport_cap_flags:\t\t0x%08x" % p["port_cap_flags"])
                out.append("\t\t\tport_cap_flags2:\t0x%04x" % p["port_cap_flags2"])
                out.append("\t\t\tmax_vl_num:\t\tinvalid value (0)")
                out.append("\t\t\tbad_pkey_cntr:\t\t0x0")
                out.append("\t\t\tqkey_viol_cntr:\t\t0x0")
                out.append("\t\t\tsm_sl:\t\t\t0")
                out.append("\t\t\tpkey_tbl_len:\t\t%d" % p["pkey_tbl_len"])
                out.append("\t\t\tgid_tbl_len:\t\t%d" % p["gid_tbl_len"])
                out.append("\t\t\tsubnet_timeout:\t\t0")
                out.append("\t\t\tinit_type_reply:\t0")
                out.append("\t\t\tactive_width:\t\t%sX (%d)" % (p["active_width"], p["active_width_code"]))
                out.append("\t\t\tactive_speed:\t\t%s (%d)" % (p["active_speed"], p["active_speed_code"]))
                out.append("\t\t\tphys_state:\t\t%s (%d)" % (p["phys_state"], p["phys_state_code"]))
                for index, gid, ver in p.get("gids", []):
                    out.append(_verbose_gid(index, gid, ver, p["link_layer"]))
            out.append("")
    return "".join(line + "\n" for line in out)


def ibdev2netdev(rows: list[dict], verbose: bool = False) -> str:
    """rows: ``[{"ibdev", "port", "netdev", "link" ("Up"|"Down"), "pci"?, "devid"?, "partid"?, "desc"?, "fw"?,
    "state"? ("ACTIVE"|"DOWN"...)}]``; printed in ``ls /sys/class/infiniband`` (byte-sorted) order."""
    out = []
    for r in sorted(rows, key=lambda r: (r["ibdev"], r["port"])):
        if verbose:
            out.append("%s %s (MT%d - %-11s) %-15s fw %s port %d (%-6s) ==> %s (%s)" % (
                r["pci"], r["ibdev"], r["devid"], r["partid"], r["desc"], r["fw"], r["port"], r["state"],
                r["netdev"], r["link"]))
        else:
            out.append(f"{r['ibdev']} port {r['port']} ==> {r['netdev']} ({r['link']})")
    return "".join(line + "\n" for line in out)


def rdma_link(links: list[dict]) -> str:
    """links: ``[{"ibdev", "port", "state", "physical_state", "netdev"?}]``."""
    out = []
    for link in links:
        line = f"link {link['ibdev']}/{link['port']} state {link['state']} physical_state {link['physical_state']}"
        if link.get("netdev"):
            line += f" netdev {link['netdev']}"
        out.append(line)
    return "".join(line + "\n" for line in out)


def rdma_dev(devs: list[dict]) -> str:
    """devs: ``[{"index", "ibdev", "node_type", "fw", "node_guid", "sys_image_guid"}]``."""
    return "".join(f"{d['index']}: {d['ibdev']}: node_type {d['node_type']} fw {d['fw']} node_guid {d['node_guid']} "
                   f"sys_image_guid {d['sys_image_guid']}\n" for d in devs)
