# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.firewall_ruleset``: the DPU firewall policy checked and rendered to one nft file.

The GPU host's traffic crosses the DPU through a bridge between the host-facing port (``pf0hpf``) and the
fabric-facing port (``vxlan0`` in the lab, or the uplink). The policy is filtered where the bridge *sends*:
a ``netdev`` table with one ``egress`` chain per port (kernel 5.16 or later). Why egress: Open vSwitch's
userspace datapath reads the host's frames from an AF_PACKET socket before netfilter's ingress hook, so an
``inet`` table or a ``netdev`` ingress chain sees them but cannot stop them; the egress hook of the port that
OVS transmits on can (measured in the lab, roles/firewall/README.md).

Filtering at layer 2 without conntrack is stateless, so every allowed service gets both halves: the request
toward the side that serves it and the answer back (TCP answers may not be a bare SYN, so a peer cannot open a
connection through an answer rule).

The output starts with ``table`` + ``delete table`` of its own table, then the whole table: ``nft -f`` applies
the file as one transaction (the old rules are gone and the new ones in place at the same instant); no other
table is touched. Every problem in the policy raises AnsibleFilterError naming the network, the rule and what
to fix, before a role writes anything.
"""

from __future__ import annotations

import ipaddress
import re

from ansible.errors import AnsibleFilterError

PROTOCOLS = ("tcp", "udp", "icmp", "icmpv6", "any")
DIRECTIONS = ("both", "outbound", "inbound")
DEFAULTS = ("drop", "accept")
NETWORK_KEYS = ("name", "host_port", "fabric_port", "default", "allow_arp", "allow_ipv6_nd", "rules")
RULE_KEYS = ("name", "peers", "protocol", "ports", "direction")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,30}$")
_IFNAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")  # IFNAMSIZ is 16 with the NUL
_PORT_RANGE_RE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
# Neighbour discovery types as nft names them (nft(8), ICMPV6 TYPE).
_ND_TYPES = "nd-router-solicit, nd-router-advert, nd-neighbor-solicit, nd-neighbor-advert"


def _fail(msg):
    raise AnsibleFilterError("firewall_ruleset: %s" % msg)


def _ports(where, protocol, ports):
    if protocol not in ("tcp", "udp"):
        if ports not in (None, []):
            _fail("%s: ports apply only to tcp and udp, not %s: remove 'ports' or change 'protocol'"
                  % (where, protocol))
        return []
    if not isinstance(ports, list) or not ports:
        _fail("%s: protocol %s needs 'ports', a non-empty list of ports (22) or ranges ('5201-5210')"
              % (where, protocol))
    spans = []
    for port in ports:
        if isinstance(port, bool):
            _fail("%s: port %r is not a number" % (where, port))
        if isinstance(port, int):
            low = high = port
        elif isinstance(port, str) and port.strip().isdigit():
            low = high = int(port)
        elif isinstance(port, str) and _PORT_RANGE_RE.match(port):
            low, high = (int(x) for x in _PORT_RANGE_RE.match(port).groups())
            if low > high:
                _fail("%s: port range %r runs backwards: write it low-high" % (where, port))
        else:
            _fail("%s: port %r is neither a number nor a range 'low-high'" % (where, port))
        for value in (low, high):
            if not 1 <= value <= 65535:
                _fail("%s: port %r is out of range: ports are 1-65535" % (where, port))
        spans.append((low, high))
    spans.sort()
    merged = [list(spans[0])]
    for low, high in spans[1:]:  # nft refuses overlapping intervals in one anonymous set
        if low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return [str(low) if low == high else "%d-%d" % (low, high) for low, high in merged]


def _group_addresses(where, group, groups, hostvars, address_var, unaddressed):
    members = groups.get(group) or []
    if not members:
        _fail("%s: inventory group %r has no hosts: add hosts to it or name another group or CIDR" % (where, group))
    out = []
    for host in members:
        value = (hostvars.get(host) or {}).get(address_var)
        if value in (None, "") and unaddressed == "skip":
            continue  # an inventory without addresses (the sim): the member is simply not allowed
        if value in (None, ""):
            _fail("%s: %s (group %s) has no %s: set it in the inventory, or list the peer as a CIDR"
                  % (where, host, group, address_var))
        try:
            out.append(ipaddress.ip_interface(str(value)).ip)
        except ValueError:
            _fail("%s: %s: %s=%r is not an IP address" % (where, host, address_var, value))
    return [ipaddress.ip_network(ip) for ip in out]


def _peers(where, peers, groups, hostvars, address_var, unaddressed):
    if not isinstance(peers, list) or not peers:
        _fail("%s: 'peers' must be a non-empty list of CIDRs (10.10.0.0/24), addresses or inventory groups" % where)
    nets = []
    for item in peers:
        if not isinstance(item, str) or not item.strip():
            _fail("%s: peer %r is not a CIDR, an address or an inventory group name" % (where, item))
        peer = item.strip()
        problem = None
        try:
            nets.append(ipaddress.ip_network(peer, strict=True))
        except ValueError as exc:
            problem = str(exc)
        if problem is None:
            continue
        if peer in groups:
            nets.extend(_group_addresses(where, peer, groups, hostvars, address_var, unaddressed))
        elif re.match(r"^[0-9a-fA-F:.]+(/\d+)?$", peer):
            _fail("%s: peer %r is not a valid CIDR (%s): write the network address, e.g. 10.10.0.0/24"
                  % (where, peer, problem))
        else:
            _fail("%s: peer %r is neither a CIDR nor an inventory group (groups: %s)"
                  % (where, peer, ", ".join(sorted(g for g in groups if g not in ("all", "ungrouped")))))
    v4 = [str(n) for n in ipaddress.collapse_addresses(n for n in nets if n.version == 4)]
    v6 = [str(n) for n in ipaddress.collapse_addresses(n for n in nets if n.version == 6)]
    return v4, v6


def _set(items):
    return "{ %s }" % ", ".join(items)


def _rule_lines(rule):
    """(to_fabric, to_host) rule lines for one checked rule."""
    to_fabric, to_host = [], []
    comment = ' comment "%s"' % rule["name"] if rule["name"] else ""
    for family, peers in (("ip", rule["v4"]), ("ip6", rule["v6"])):
        if not peers:
            continue
        dst = "%s daddr %s" % (family, _set(peers))  # toward the peers (sent on the fabric port)
        src = "%s saddr %s" % (family, _set(peers))  # from the peers (sent on the host port)
        proto = rule["protocol"]
        if proto == "any":
            to_fabric.append("%s counter accept%s" % (dst, comment))
            to_host.append("%s counter accept%s" % (src, comment))
            continue
        if proto in ("icmp", "icmpv6"):
            # ICMPv6 behind extension headers (hop-by-hop, routing, fragment) has another ip6 nexthdr: match the
            # transport protocol nft finds after them (meta l4proto), as nft's own icmpv6 dependency does.
            match = "ip protocol icmp" if proto == "icmp" else "meta l4proto ipv6-icmp"
            to_fabric.append("%s %s counter accept%s" % (dst, match, comment))
            to_host.append("%s %s counter accept%s" % (src, match, comment))
            continue
        ports = _set(rule["ports"])
        answer = " tcp flags & (syn | ack) != syn" if proto == "tcp" else ""
        if rule["direction"] in ("both", "outbound"):  # the host opens connections to the peers' ports
            to_fabric.append("%s %s dport %s counter accept%s" % (dst, proto, ports, comment))
            to_host.append("%s %s sport %s%s counter accept%s" % (src, proto, ports, answer, comment))
        if rule["direction"] in ("both", "inbound"):  # the peers open connections to the host's ports
            to_host.append("%s %s dport %s counter accept%s" % (src, proto, ports, comment))
            to_fabric.append("%s %s sport %s%s counter accept%s" % (dst, proto, ports, answer, comment))
    return to_fabric, to_host


def _check_rule(net_name, index, rule, groups, hostvars, address_var, unaddressed):
    where = "network %s, rule %d" % (net_name, index + 1)
    if not isinstance(rule, dict):
        _fail("%s: a rule is a mapping with peers, protocol, ports and direction, got %r" % (where, rule))
    if rule.get("name"):
        where += " (%s)" % rule["name"]
    unknown = sorted(set(rule) - set(RULE_KEYS))
    if unknown:
        _fail("%s: unknown key(s) %s: a rule has %s" % (where, ", ".join(unknown), ", ".join(RULE_KEYS)))
    name = rule.get("name") or ""
    if not isinstance(name, str) or '"' in name or "\n" in name or len(name) > 100:
        _fail("%s: name must be text of at most 100 characters without quotes" % where)
    protocol = rule.get("protocol")
    if protocol not in PROTOCOLS:
        _fail("%s: unknown protocol %r: use one of %s" % (where, protocol, ", ".join(PROTOCOLS)))
    direction = rule.get("direction", "both")
    if direction not in DIRECTIONS:
        _fail("%s: unknown direction %r: use one of %s" % (where, direction, ", ".join(DIRECTIONS)))
    ports = _ports(where, protocol, rule.get("ports"))
    v4, v6 = _peers(where, rule.get("peers"), groups, hostvars, address_var, unaddressed)
    if protocol == "icmp" and v6:
        _fail("%s: protocol icmp is IPv4; the IPv6 peers %s need a rule with protocol icmpv6" % (where, ", ".join(v6)))
    if protocol == "icmpv6" and v4:
        _fail("%s: protocol icmpv6 is IPv6; the IPv4 peers %s need a rule with protocol icmp" % (where, ", ".join(v4)))
    return {"name": name, "protocol": protocol, "direction": direction, "ports": ports, "v4": v4, "v6": v6}


def _check_network(index, net, groups, hostvars, address_var, unaddressed):
    if not isinstance(net, dict):
        _fail("network %d: a network is a mapping (name, host_port, fabric_port, default, rules), got %r"
              % (index + 1, net))
    name = net.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        _fail("network %d: name %r must be lower case letters, digits and _ (at most 31, starting with a letter)"
              % (index + 1, name))
    unknown = sorted(set(net) - set(NETWORK_KEYS))
    if unknown:
        _fail("network %s: unknown key(s) %s: a network has %s" % (name, ", ".join(unknown), ", ".join(NETWORK_KEYS)))
    for key in ("host_port", "fabric_port"):
        if not isinstance(net.get(key), str) or not _IFNAME_RE.match(net[key]):
            _fail("network %s: %s %r is not an interface name (1-15 of letters, digits, _ . : -)"
                  % (name, key, net.get(key)))
    if net["host_port"] == net["fabric_port"]:
        _fail("network %s: host_port and fabric_port are both %s: name the port toward the GPU host and the port "
              "toward the fabric" % (name, net["host_port"]))
    default = net.get("default", "drop")
    if default not in DEFAULTS:
        _fail("network %s: default %r: use drop or accept" % (name, default))
    for key in ("allow_arp", "allow_ipv6_nd"):
        if not isinstance(net.get(key, True), bool):
            _fail("network %s: %s must be true or false, got %r" % (name, key, net.get(key)))
    rules = net.get("rules", [])
    if not isinstance(rules, list):
        _fail("network %s: rules must be a list" % name)
    return {"name": name, "host_port": net["host_port"], "fabric_port": net["fabric_port"], "default": default,
            "allow_arp": net.get("allow_arp", True), "allow_ipv6_nd": net.get("allow_ipv6_nd", True),
            "rules": [_check_rule(name, i, r, groups, hostvars, address_var, unaddressed) for i, r in enumerate(rules)]}


def _chain(name, device, net, lines):
    out = ["\tchain %s {" % name,
           '\t\ttype filter hook egress device "%s" priority filter; policy %s;' % (device, net["default"])]
    if net["allow_arp"]:
        out.append("\t\tether type arp accept")
    if net["allow_ipv6_nd"]:
        out.append("\t\ticmpv6 type { %s } accept" % _ND_TYPES)
    out.extend("\t\t" + line for line in lines)
    out.append("\t\tcounter %s" % net["default"])
    out.append("\t}")
    return out


def firewall_ruleset(networks, groups=None, hostvars=None, address_var="bluefleet_host_overlay_address",
                     table="bluefleet_firewall", unaddressed="fail"):
    """Check the policy ``networks`` and return the nft file that applies it (see the module docstring).

    ``unaddressed``: what a group member without ``address_var`` does: ``fail`` (the default) or ``skip``
    (it is left out of the rule, which then allows less; for inventories that carry no addresses at all).
    """
    if unaddressed not in ("fail", "skip"):
        _fail("unaddressed %r: use fail or skip" % (unaddressed,))
    groups = dict(groups or {})
    hostvars = hostvars or {}
    if not isinstance(table, str) or not _NAME_RE.match(table):
        _fail("table %r must be lower case letters, digits and _" % (table,))
    if not isinstance(networks, list):
        _fail("the policy must be a list of networks, got %s" % type(networks).__name__)
    checked = [_check_network(i, n, groups, hostvars, address_var, unaddressed) for i, n in enumerate(networks)]
    seen_names, seen_ports = set(), {}
    for net in checked:
        if net["name"] in seen_names:
            _fail("network %s is defined twice: give each network its own name" % net["name"])
        seen_names.add(net["name"])
        for key in ("host_port", "fabric_port"):
            port = net[key]
            if port in seen_ports:
                _fail("networks %s and %s both filter port %s: one network per port" % (seen_ports[port], net["name"],
                                                                                        port))
            seen_ports[port] = net["name"]
    lines = ["# bluefleet.dpu firewall (roles/firewall): generated by the firewall_ruleset filter; do not edit.",
             "# Applied with nft -f as one transaction: the table is replaced whole, no other table is touched.",
             "table netdev %s" % table,
             "delete table netdev %s" % table]
    if not checked:
        return "\n".join(lines) + "\n"
    lines.append("table netdev %s {" % table)
    for net in checked:
        to_fabric, to_host = [], []
        for rule in net["rules"]:
            fab, host = _rule_lines(rule)
            to_fabric += fab
            to_host += host
        lines += _chain("%s_from_host" % net["name"], net["fabric_port"], net, to_fabric)
        lines += _chain("%s_to_host" % net["name"], net["host_port"], net, to_host)
    lines.append("}")
    return "\n".join(lines) + "\n"


class FilterModule:
    """bluefleet.dpu firewall filters."""

    def filters(self):
        return {"firewall_ruleset": firewall_ruleset}
