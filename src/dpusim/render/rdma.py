"""RDMA tool renderers: show_gids, ibv_devinfo, ibdev2netdev, rdma (iproute2).

- show_gids: ``corpus/show_gids/FORMAT-from-source.md`` + verbatim cx7-vf-net1-container (TAB separated).
- ibv_devinfo: ``corpus/ibv_devinfo/FORMAT-from-source.md`` (rdma-core libibverbs/examples/devinfo.c): a blank
  line after every port block; ``-v`` adds the device scalar lines, the per-port lines and the GID table
  (RoCE v1 GIDs as 8 hex groups, RoCE v2 through inet_ntop, both with ``, RoCE vN`` on Ethernet).
  NOT rendered in ``-v``: the decoded capability blocks (device_cap_flags names, ODP/TSO/RSS/packet pacing/
  tag matching/CQ moderation caps, raw packet caps, device_cap_flags_ex names). No -v capture exists in the corpus.
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
            c = h["caps"]
            for label, key, fmt in VERBOSE_DEVICE_LINES:
                out.append(label + fmt % c.get(key, 0))
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
