# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for FRR ``vtysh -c 'show ip route json'`` (DOCA HBN is FRR-based; on a BlueField the command runs
inside the doca-hbn container).

Layout: FRRouting/frr zebra/zebra_vty.c: one JSON object keyed by prefix, each value a list of route entries
(``prefix``, ``prefixLen``, ``protocol``, ``vrfName``, ``selected``, ``installed``, ``distance``, ``metric``,
``nexthops``: ``ip``, ``interfaceName``, ``active``, ``fib``, ``directlyConnected``). FRR omits ``selected`` /
``installed`` rather than printing false. Real capture: tests/unit/fixtures/frr/show-ip-route-json.txt.
The ``vrf all`` form (one more level keyed by VRF name) is read as well.

Not registered in a ``PARSERS`` dict: the capture is not (yet) in shared/corpus. Pure: no I/O.
"""

from __future__ import annotations

import json

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError

KIND = "frr-ip-route-json"


def _route(prefix, entry, vrf):
    if not isinstance(entry, dict):
        raise ParseError(KIND, "route entry of %s is not an object: %r" % (prefix, entry))
    hops = []
    for hop in entry.get("nexthops") or []:
        if not isinstance(hop, dict):
            raise ParseError(KIND, "nexthop of %s is not an object: %r" % (prefix, hop))
        hops.append({
            "ip": hop.get("ip", ""),
            "interface": hop.get("interfaceName", ""),
            "active": bool(hop.get("active", False)),
            "fib": bool(hop.get("fib", False)),
            "directly_connected": bool(hop.get("directlyConnected", False)),
        })
    return {
        "prefix": entry.get("prefix", prefix),
        "protocol": entry.get("protocol", ""),
        "vrf": entry.get("vrfName", vrf),
        "selected": bool(entry.get("selected", False)),
        "installed": bool(entry.get("installed", False)),
        "distance": entry.get("distance"),
        "metric": entry.get("metric"),
        "nexthops": hops,
    }


def _table(doc, vrf, out):
    for prefix, entries in doc.items():
        if isinstance(entries, list):
            out.extend(_route(prefix, entry, vrf) for entry in entries)
        elif isinstance(entries, dict) and vrf is None:
            _table(entries, prefix, out)
        else:
            raise ParseError(KIND, "value of %r is neither a list of routes nor a VRF's table" % prefix)


def parse_ip_route_json(text):
    """List of routes (dicts: prefix, protocol, vrf, selected, installed, distance, metric, nexthops)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ParseError(KIND, "not JSON: %s" % exc) from None
    if not isinstance(doc, dict):
        raise ParseError(KIND, "top level is %s, expected an object keyed by prefix" % type(doc).__name__)
    out = []
    _table(doc, None, out)
    for route in out:
        if route["vrf"] is None:
            route["vrf"] = "default"
    return out


def selected_prefixes(routes, protocol=None):
    """Prefixes with a selected, installed route (of ``protocol`` when given)."""
    return sorted({r["prefix"] for r in routes if r["selected"] and r["installed"]
                   and (protocol is None or r["protocol"] == protocol)})
