# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The read of rdma_info, shared with roce_qos (``rdma_facts``), so that one module run per host does both.

- ``read_rdma(runner, netdevs, address)``: ``ibdev2netdev`` and ``show_gids`` once each; the netdevs (``netdevs``,
  or every netdev ibdev2netdev lists when it is empty) checked against ibdev2netdev; the RoCE v2 GID index of each
  and the one of ``address``. Returns rdma_info's keys (``links``, ``gids``, ``netdevs``, ``roce_v2_gid_index``,
  ``gid_index``, ``gid_netdev``); raises ToolError with rdma_info's messages.
- ``choose_gid(rows, address)``: the RoCE v2 GID index of one netdev's show_gids rows, or None.

Reads only. No AnsibleModule import.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rdma import parse_ibdev2netdev, parse_show_gids
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError, parse_output, run_tool


def choose_gid(rows, address):
    """The RoCE v2 GID index for one netdev's rows: the entry of ``address``, else the first RoCE v2 entry with an
    IPv4 address, else the first RoCE v2 entry (the link-local GID); None without a RoCE v2 entry."""
    v2 = [row for row in rows if (row["ver"] or "").lower() == "v2"]
    if address:
        for row in v2:
            if row["ipv4"] == address:
                return row["index"]
    for row in v2:
        if row["ipv4"]:
            return row["index"]
    return v2[0]["index"] if v2 else None


def read_rdma(runner, netdevs, address):
    """RDMA device ports, GID tables and the RoCE v2 GID index (see the module docstring)."""
    what = "list RDMA devices with ibdev2netdev"
    links = parse_output(parse_ibdev2netdev, run_tool(runner, ["ibdev2netdev"], what), what)["links"]
    what = "read the GID tables with show_gids"
    gids = parse_output(parse_show_gids, run_tool(runner, ["show_gids"], what), what)["gids"]
    known = [link["netdev"] for link in links]
    netdevs = list(netdevs) or known
    missing = [name for name in netdevs if name not in known]
    if missing:
        raise ToolError("read the RoCE GID index failed: %s has no RDMA device (ibdev2netdev lists: %s); name "
                        "RoCE netdevs only" % (", ".join(missing), ", ".join(known) or "none"))
    index = {name: choose_gid([row for row in gids if row["netdev"] == name], address) for name in netdevs}
    gid_netdev = None
    if address:
        carriers = [name for name in netdevs
                    if any(row["ipv4"] == address and row["netdev"] == name for row in gids)]
        if not carriers:
            where = ", ".join(netdevs) or "any netdev"
            raise ToolError("read the RoCE GID index failed: no GID of %s holds the address %s; set that address "
                            "on the RoCE netdev or fix bluefleet_roce_address" % (where, address))
        gid_netdev = carriers[0]
    else:
        gid_netdev = next((name for name in netdevs if index[name] is not None), None)
    return {
        "links": links,
        "gids": gids,
        "netdevs": netdevs,
        "roce_v2_gid_index": index,
        "gid_index": index[gid_netdev] if gid_netdev else None,
        "gid_netdev": gid_netdev,
    }
