# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the RDMA tools: ``ibv_devinfo [-v]``, ``ibdev2netdev``, ``show_gids``,
``rdma link show`` and ``cma_roce_mode``.

References: ``shared/corpus/ibv_devinfo/FORMAT-from-source.md`` (rdma-core devinfo.c),
``shared/corpus/show_gids/FORMAT-from-source.md`` (mlnx-tools show_gids, cma_roce_mode) and the
verbatim samples next to them. Published copies of these outputs often have TABs expanded to
spaces; every parser here splits on any whitespace, so both forms read the same.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
    to_int,
)

_IPV4_RE = LazyPattern(r"^\d{1,3}(?:\.\d{1,3}){3}$")


def _first_text_line(kind, lines, reason):
    for number, line in enumerate(lines, 1):
        if line.strip():
            raise ParseError(kind, reason, number, line)
    raise ParseError(kind, "empty output")


# ---------------------------------------------------------------------------------------------
# ibv_devinfo [-v]
# ---------------------------------------------------------------------------------------------

_DEVINFO_KV_RE = LazyPattern(r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_ .()/-]*?):\s*(?P<value>.*?)\s*$")
_GID_RE = LazyPattern(r"^\s*GID\[\s*(?P<index>\d+)\]:\s*(?P<gid>[0-9a-fA-F:.]+)(?:,\s*(?P<type>.*?))?\s*$")
_DEVICE_KEYS = ("transport", "fw_ver", "node_guid", "sys_image_guid", "vendor_id", "vendor_part_id", "hw_ver",
                "board_id", "phys_port_cnt")
_PORT_KEYS = ("state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc", "link_layer")


def parse_ibv_devinfo(text):
    """``{"devices": [{"hca_id", <device fields>, "ports": [{"port", <port fields>}]}]}``.

    Every ``key: value`` line is kept under its own name; values that are plain integers become
    ints, the rest stays as printed (``"PORT_ACTIVE (4)"``, ``"4096 (5)"``, ``"0x02c9"``). ``-v``
    adds device and port fields (kept the same way), flag lists (lines without a colon; ignored)
    and ``GID[ n]: gid[, type]`` lines (collected per port under ``gids``). Lines before the first
    ``hca_id:`` (a capture cut in the middle) are ignored.
    """
    kind = "ibv-devinfo"
    lines = split_lines(text)
    devices = []
    device = None
    port = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        gid = _GID_RE.match(line)
        if gid:
            if port is not None:
                port["gids"].append({"index": int(gid.group("index")), "gid": gid.group("gid"),
                                     "type": gid.group("type") or None})
            continue
        match = _DEVINFO_KV_RE.match(line)
        if not match:
            continue  # -v flag list entries, cut lines
        key, value = match.group("key").strip(), match.group("value")
        if key == "hca_id":
            if not value or " " in value:
                raise ParseError(kind, "hca_id without a device name", number, line)
            device = {"hca_id": value}
            device.update({name: None for name in _DEVICE_KEYS})
            device["ports"] = []
            devices.append(device)
            port = None
            continue
        if device is None:
            continue
        if key == "port":
            number_value = to_int(value)
            if not isinstance(number_value, int):
                raise ParseError(kind, "port number is not an integer", number, line)
            port = {"port": number_value}
            port.update({name: None for name in _PORT_KEYS})
            port["gids"] = []
            device["ports"].append(port)
            continue
        key = key.replace(" ", "_")
        target = port if port is not None else device
        if key in ("ports", "gids", "hca_id"):
            continue  # never let a -v field overwrite the structure
        target[key] = to_int(value)
    if not devices:
        _first_text_line(kind, lines, "no 'hca_id:' line (ibv_devinfo output expected)")
    return {"devices": devices}


# ---------------------------------------------------------------------------------------------
# ibdev2netdev
# ---------------------------------------------------------------------------------------------

# mlnx-tools ibdev2netdev prints "<ibdev> port <n> ==> <netdev> (<Up|Down>)"; the corpus copy went
# through ``column -t`` and has author comments after it, so spacing and trailing text are free.
_IBDEV2NETDEV_RE = LazyPattern(
    r"^\s*(?P<ibdev>\S+)\s+port\s+(?P<port>\d+)\s+==>\s+(?P<netdev>\S+)\s+\((?P<state>[^()\s]+)\)"
)


def parse_ibdev2netdev(text):
    kind = "ibdev2netdev"
    lines = split_lines(text)
    links = []
    for line in lines:
        match = _IBDEV2NETDEV_RE.match(line)
        if match:
            links.append({"ibdev": match.group("ibdev"), "port": int(match.group("port")),
                          "netdev": match.group("netdev"), "state": match.group("state")})
    if not links and any(line.strip() for line in lines):
        _first_text_line(kind, lines, "no 'IBDEV port N ==> NETDEV (STATE)' line")
    return {"links": links}


# ---------------------------------------------------------------------------------------------
# show_gids
# ---------------------------------------------------------------------------------------------

# 8 groups of hex digits; published captures often redact some groups with "x" (fe80:0000:0000:0000:xxxx:...)
_GID_TEXT_RE = LazyPattern(r"^[0-9a-fA-FxX]{1,4}(?::[0-9a-fA-FxX]{1,4}){7}$")


def parse_show_gids(text):
    """Rows ``DEV PORT INDEX GID [IPv4] VER NETDEV`` (TAB-separated; IPv4 only for IPv4-mapped GIDs)."""
    kind = "show-gids"
    lines = split_lines(text)
    gids = []
    found = None
    header_seen = False
    for number, line in enumerate(lines, 1):
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] == "DEV" and "GID" in tokens:
            header_seen = True
            continue
        if set(line.strip()) <= set("- \t"):
            continue
        if tokens[0].startswith("n_gids_found="):
            found = to_int(tokens[0].split("=", 1)[1])
            if not isinstance(found, int):
                raise ParseError(kind, "n_gids_found is not a number", number, line)
            continue
        if len(tokens) < 4 or not _GID_TEXT_RE.match(tokens[3]):
            if header_seen:
                raise ParseError(kind, "expected 'DEV PORT INDEX GID [IPv4] VER NETDEV'", number, line)
            continue
        port, index = to_int(tokens[1]), to_int(tokens[2])
        if not isinstance(port, int) or not isinstance(index, int):
            raise ParseError(kind, "PORT and INDEX must be numbers", number, line)
        rest = tokens[4:]
        ipv4 = rest.pop(0) if rest and _IPV4_RE.match(rest[0]) else None
        ver = rest.pop(0) if rest else None
        netdev = rest.pop(0) if rest else None
        if rest:
            raise ParseError(kind, "too many columns", number, line)
        gids.append({"dev": tokens[0], "port": port, "index": index, "gid": tokens[3], "ipv4": ipv4,
                     "ver": ver, "netdev": netdev})
    if not gids and not header_seen and found is None:
        _first_text_line(kind, lines, "no show_gids table (header 'DEV PORT INDEX GID ...' expected)")
    return {"gids": gids, "n_gids_found": found}


# ---------------------------------------------------------------------------------------------
# rdma link show
# ---------------------------------------------------------------------------------------------

_RDMA_LINK_RE = LazyPattern(
    r"^(?:link\s+|\d+/\d+:\s+)(?P<ibdev>[^\s/]+)/(?P<port>\d+):?(?P<rest>(?:\s.*)?)$"
)


def parse_rdma_link(text):
    """One line per port (iproute2 rdma/link.c); other lines (``rdma dev`` output, ``caps:``) ignored.

    Current iproute2 prints ``link DEV/PORT key value ...`` (corpus sample); the first releases
    (rdma/link.c link_parse_cb, read at iproute2/iproute2@17678d3059ade722eeab4e4f51d50445b87c0a61)
    printed ``IFINDEX/PORT: DEV/PORT: key value ...``. Keys in both: subnet_prefix, lid, sm_lid, lmc,
    state, physical_state, netdev[, netdev_index with -d].
    """
    kind = "rdma-link"
    lines = split_lines(text)
    links = []
    for number, line in enumerate(lines, 1):
        match = _RDMA_LINK_RE.match(line.strip())
        if not match:
            continue
        tokens = match.group("rest").split()
        link = {"ibdev": match.group("ibdev"), "port": int(match.group("port")), "state": None,
                "physical_state": None, "netdev": None}
        if len(tokens) % 2:
            raise ParseError(kind, "attributes are not 'key value' pairs", number, line)
        for i in range(0, len(tokens), 2):
            numeric = tokens[i] in ("lid", "sm_lid", "lmc", "netdev_index")
            link[tokens[i]] = to_int(tokens[i + 1]) if numeric else tokens[i + 1]
        links.append(link)
    if not links and any(line.strip() for line in lines):
        _first_text_line(kind, lines, "no 'link DEV/PORT ...' line (rdma link show output expected)")
    return {"links": links}


# ---------------------------------------------------------------------------------------------
# cma_roce_mode
# ---------------------------------------------------------------------------------------------

_ROCE_MODES = {"IB/RoCE v1": 1, "RoCE v2": 2}


def parse_cma_roce_mode(text):
    """One line, ``RoCE v2`` or ``IB/RoCE v1`` (the configfs default_roce_mode of the device port)."""
    kind = "cma-roce-mode"
    lines = split_lines(text)
    content = [(number, line) for number, line in enumerate(lines, 1) if line.strip()]
    if not content:
        raise ParseError(kind, "empty output")
    number, line = content[0]
    mode = line.strip()
    if mode not in _ROCE_MODES or len(content) > 1:
        if len(content) > 1 and mode in _ROCE_MODES:
            number, line = content[1]
        raise ParseError(kind, "expected exactly one line 'RoCE v2' or 'IB/RoCE v1'", number, line)
    return {"mode": mode, "roce_version": _ROCE_MODES[mode]}


PARSERS = {
    "ibv-devinfo": parse_ibv_devinfo,
    "ibdev2netdev": parse_ibdev2netdev,
    "show-gids": parse_show_gids,
    "rdma-link": parse_rdma_link,
    "cma-roce-mode": parse_cma_roce_mode,
}


# ---------------------------------------------------------------------------------------------
# cma_roce_tos
# ---------------------------------------------------------------------------------------------


def parse_cma_roce_tos(text):
    """One line, the ToS number of the device port (mlnx-tools sbin/cma_roce_tos prints the configfs file
    ``/sys/kernel/config/rdma_cm/<dev>/ports/<port>/default_roce_tos``; see show_gids/FORMAT-from-source.md)."""
    kind = "cma-roce-tos"
    lines = split_lines(text)
    content = [(number, line) for number, line in enumerate(lines, 1) if line.strip()]
    if not content:
        raise ParseError(kind, "empty output")
    number, line = content[0]
    tos = to_int(line.strip())
    if not isinstance(tos, int) or not 0 <= tos <= 255 or len(content) > 1:
        if len(content) > 1 and isinstance(tos, int):
            number, line = content[1]
        raise ParseError(kind, "expected exactly one line with the ToS number (0..255)", number, line)
    return {"tos": tos}


PARSERS["cma-roce-tos"] = parse_cma_roce_tos
