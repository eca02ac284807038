# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.ipsec_peers``: which DPUs build an IPsec tunnel with which, from the inventory.

Each DPU carries ``bluefleet_uplink_address`` (the fabric address on its uplink, CIDR) and
``bluefleet_vtep_address`` (its VXLAN tunnel end point, a /32 that the tunnel's traffic selectors name).
The topology picks the peers: ``pairs`` (the DPUs two by two, in the order of ``pairs`` or sorted by
name), ``mesh`` (every DPU with every other) or ``hub`` (every DPU with the ``hub`` DPU). Everything
is checked before a role writes anything: a bad address, a VTEP that is not a /32, a duplicate, a
VTEP inside a fabric subnet, a peer that is not in the inventory group, an odd number of DPUs for
``pairs``; each error names the host and the variable to fix.
"""

from __future__ import annotations

import ipaddress

from ansible.errors import AnsibleFilterError

TOPOLOGIES = ("pairs", "mesh", "hub")


def _fail(msg):
    raise AnsibleFilterError("ipsec_peers: %s" % msg)


def _iface(host, var, value):
    if value in (None, ""):
        _fail("%s has no %s: set it in the inventory (a CIDR such as 192.168.50.1/24)" % (host, var))
    if not isinstance(value, str) or "/" not in value:
        _fail("%s: %s=%r is not an address with a prefix length (e.g. 192.168.50.1/24)" % (host, var, value))
    try:
        iface = ipaddress.ip_interface(value)
    except ValueError as exc:
        _fail("%s: %s=%r is not a valid address: %s" % (host, var, value, exc))
    if iface.version != 4:
        _fail("%s: %s=%s: only IPv4 is supported" % (host, var, value))
    if iface.ip in (iface.network.network_address, iface.network.broadcast_address) and iface.network.prefixlen < 31:
        _fail("%s: %s=%s is the network or broadcast address of its subnet" % (host, var, value))
    return iface


def _nodes(hostvars, members, uplink_var, vtep_var):
    nodes = {}
    for name in members:
        hv = hostvars[name]
        uplink = _iface(name, uplink_var, hv.get(uplink_var))
        vtep = _iface(name, vtep_var, hv.get(vtep_var))
        if vtep.network.prefixlen != 32:
            _fail("%s: %s=%s must be a /32 (one tunnel end point per DPU)" % (name, vtep_var, vtep))
        nodes[name] = {"name": name, "uplink": uplink, "vtep": vtep}
    seen_uplink, seen_vtep = {}, {}
    for name, node in nodes.items():
        for seen, key, var in ((seen_uplink, "uplink", uplink_var), (seen_vtep, "vtep", vtep_var)):
            ip = node[key].ip
            if ip in seen:
                _fail("%s and %s have the same %s %s: give each DPU its own" % (seen[ip], name, var, ip))
            seen[ip] = name
    for name, node in nodes.items():
        for other in nodes.values():
            if node["vtep"].ip in other["uplink"].network:
                _fail("%s: %s=%s lies in the fabric subnet %s of %s (%s): VTEPs must be outside the fabric, or "
                      "the tunnel would route into itself" % (name, vtep_var, node["vtep"], other["uplink"].network,
                                                              other["name"], uplink_var))
    for name in members:
        host = hostvars[name].get("bluefleet_host")
        if not host or host not in hostvars:
            continue
        overlay = hostvars[host].get("bluefleet_host_overlay_address")
        if overlay in (None, ""):
            continue
        net = _iface(host, "bluefleet_host_overlay_address", overlay).network
        for other in nodes.values():
            if net.overlaps(other["uplink"].network) or other["vtep"].ip in net:
                _fail("%s: bluefleet_host_overlay_address=%s overlaps %s's fabric subnet %s or VTEP %s: the hosts' "
                      "overlay must be a network of its own" % (host, overlay, other["name"], other["uplink"].network,
                                                                other["vtep"].ip))
    return nodes


def _edges(members, topology, hub, pairs):
    if topology not in TOPOLOGIES:
        _fail("ipsec_topology=%r is not one of %s" % (topology, ", ".join(TOPOLOGIES)))
    member_set = set(members)
    if topology == "mesh":
        ordered = sorted(members)
        return [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:]]
    if topology == "hub":
        if not hub:
            _fail("ipsec_topology=hub needs ipsec_hub: the inventory name of the hub DPU")
        if hub not in member_set:
            _fail("ipsec_hub=%r is not a DPU of this inventory group (%s)" % (hub, ", ".join(sorted(members))))
        return [(hub, m) for m in sorted(members) if m != hub]
    if pairs:
        edges, used = [], {}
        for pair in pairs:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                _fail("ipsec_pairs entries are [dpu_a, dpu_b], got %r" % (pair,))
            for name in pair:
                if name not in member_set:
                    _fail("ipsec_pairs names %r, which is not a DPU of this inventory group (%s): add it to the "
                          "inventory or fix ipsec_pairs" % (name, ", ".join(sorted(members))))
                if name in used:
                    _fail("ipsec_pairs names %s twice (%r and %r): in the pairs topology a DPU has one peer; "
                          "use ipsec_topology=mesh or hub for more" % (name, used[name], pair))
                used[name] = list(pair)
            if pair[0] == pair[1]:
                _fail("ipsec_pairs pairs %s with itself" % pair[0])
            edges.append((pair[0], pair[1]))
        return edges
    ordered = sorted(members)
    if len(ordered) % 2:
        _fail("ipsec_topology=pairs with %d DPUs (%s): an odd number cannot be paired; list ipsec_pairs, or use "
              "mesh or hub" % (len(ordered), ", ".join(ordered)))
    return [(ordered[i], ordered[i + 1]) for i in range(0, len(ordered), 2)]


def ipsec_peers(hostvars, members, topology="pairs", hub=None, pairs=None,
                uplink_var="bluefleet_uplink_address", vtep_var="bluefleet_vtep_address"):
    """``{dpu: [{name, uplink_ip, vtep, initiator}, ...]}`` for every DPU in ``members``."""
    members = list(members or [])
    if not members:
        _fail("no DPU in the inventory group: nothing to connect")
    nodes = _nodes(hostvars, members, uplink_var, vtep_var)
    out = {name: [] for name in members}
    for a, b in _edges(members, topology, hub, pairs):
        for me, peer in ((a, b), (b, a)):
            node = nodes[peer]
            out[me].append({"name": peer, "uplink_ip": str(node["uplink"].ip), "vtep": str(node["vtep"]),
                            "local_uplink_ip": str(nodes[me]["uplink"].ip), "local_vtep": str(nodes[me]["vtep"]),
                            "initiator": me < peer})
    return out


class FilterModule:
    def filters(self):
        return {"ipsec_peers": ipsec_peers}
