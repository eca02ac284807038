# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the RDMA ports are up, from the ports ``rdma link show`` lists (parsers/_rdma.parse_rdma_link); no I/O.

One rule for every health check that reads them (bluefleet.dpu.rdma_link_info, bluefleet.dpu.dpu_info's
``rdma_links`` section, which the rolling upgrade's health gate reads): at least one port is considered, no device
asked for is missing, and every port considered is ``ACTIVE``.
"""

from __future__ import annotations


def summarize_links(links, devices=()):
    """``{"links", "down", "missing", "all_active"}`` of ``links`` (parsed ports); ``devices``: the RDMA device
    names whose ports count (empty: every port listed)."""
    considered = [link for link in links if not devices or link["ibdev"] in devices]
    listed = {link["ibdev"] for link in links}
    missing = [name for name in devices if name not in listed]
    down = ["%s/%d %s" % (link["ibdev"], link["port"], link["state"]) for link in considered
            if link["state"] != "ACTIVE"]
    return {"links": links, "down": down, "missing": missing,
            "all_active": bool(considered) and not down and not missing}
