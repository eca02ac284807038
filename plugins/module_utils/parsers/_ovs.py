# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for Open vSwitch: ``ovs-vsctl show`` and ``ovs-appctl dpctl/dump-flows [-m] [type=offloaded]``.

``ovs-vsctl show`` (verbatim samples ``shared/corpus/ovs/*vsctl-show*``): the database UUID on the
first line, then records indented by 4 spaces per level: ``Bridge NAME`` > ``Port NAME`` >
``Interface NAME``, each followed by deeper ``key: value`` lines (``tag: 200``, ``type: internal``,
``options: {k=v, k="v"}``, ``error: "..."``), and ``ovs_version: "X"`` at the end. Older releases
quote names (``Bridge "br-int"``); quotes are removed. The tree is rebuilt from the indentation, so
unknown record kinds (Manager, Controller ...) are kept under their parent without breaking it.

``dpctl/dump-flows`` (verbatim samples ``shared/corpus/ovs/*dump-flows*``): one flow per line,
``[ufid:U, ]MATCH, packets:N, bytes:N, used:T[, flags:F][, offloaded:yes|partial, dp:tc|ovs|dpdk], actions:A``
and, on the userspace (netdev/DPDK) datapath, ``, dp-extra-info:miniflow_bits(X,Y)`` after the actions
(public OVS-DPDK sample in the fixtures); the ``offloaded``/``dp`` fields exist only with ``-m``.
``offloaded`` is True for ``yes``, False for ``partial`` (only the match is in hardware) and None
when the line does not say (non-verbose form).
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
    to_int,
)

_STRUCTURE_KEYS = ("ports", "interfaces", "name")
_UUID_RE = LazyPattern(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_RECORD_RE = LazyPattern(r"^(?P<kind>[A-Z][A-Za-z_]*) (?P<name>\S.*)$")
_KV_RE = LazyPattern(r"^(?P<key>[a-z_][a-z0-9_:-]*): ?(?P<value>.*)$")
_OPTION_RE = LazyPattern(r'\s*(?P<key>[^=,{}\s]+)=(?P<value>"(?:[^"\\]|\\.)*"|[^,}]*)\s*(?:,|$)')


def _unquote(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return text[1:-1].replace('\\"', '"')
    return text


def _options(value):
    body = value.strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    body = body[1:-1].strip()
    options = {}
    pos = 0
    while pos < len(body):
        match = _OPTION_RE.match(body, pos)
        if not match or match.end() == pos:
            return None
        options[match.group("key")] = _unquote(match.group("value"))
        pos = match.end()
    return options


def _kv_value(key, value):
    if key == "tag":
        return to_int(value)
    if value.startswith("{"):
        parsed = _options(value)
        return parsed if parsed is not None else value
    return _unquote(value)


def parse_vsctl_show(text):
    kind = "ovs-vsctl-show"
    lines = split_lines(text)
    content = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    if not content:
        raise ParseError(kind, "empty output")
    number, first = content[0]
    if not _UUID_RE.match(first.strip()):
        raise ParseError(kind, "first line is not the Open_vSwitch UUID (ovs-vsctl show output expected)",
                         number, first)
    result = {"uuid": first.strip(), "ovs_version": None, "bridges": {}, "other": {}}
    stack = []  # (indent, record-kind, object)
    for number, line in content[1:]:
        expanded = line.expandtabs(8)
        indent = len(expanded) - len(expanded.lstrip(" "))
        stripped = expanded.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent_kind = stack[-1][1] if stack else None
        parent = stack[-1][2] if stack else None
        record = _RECORD_RE.match(stripped)
        if record and ":" not in record.group("kind"):
            rkind, name = record.group("kind"), _unquote(record.group("name"))
            if rkind == "Bridge" and parent_kind is None:
                obj = result["bridges"].setdefault(name, {"ports": {}})
            elif rkind == "Port" and parent_kind == "Bridge":
                obj = parent["ports"].setdefault(name, {"interfaces": {}})
            elif rkind == "Interface" and parent_kind == "Port":
                obj = parent["interfaces"].setdefault(name, {"type": None, "options": None})
            else:
                holder = parent if parent is not None else result["other"]
                obj = {"name": name}
                records = holder.setdefault(rkind.lower(), [])
                if not isinstance(records, list):
                    raise ParseError(kind, f"{rkind} record clashes with a '{rkind.lower()}:' value", number, line)
                records.append(obj)
                rkind = "other"  # its children are kept as generic records too
            stack.append((indent, rkind, obj))
            continue
        pair = _KV_RE.match(stripped)
        if pair:
            key, value = pair.group("key"), pair.group("value")
            if parent is None:
                if key == "ovs_version":
                    result["ovs_version"] = _unquote(value)
                else:
                    result["other"][key] = _kv_value(key, value)
            elif key in _STRUCTURE_KEYS or isinstance(parent.get(key), list):
                raise ParseError(kind, f"'{key}:' clashes with the structure of the listing", number, line)
            else:
                parent[key] = _kv_value(key, value)
            continue
        raise ParseError(kind, "expected 'Bridge|Port|Interface NAME' or 'key: value'", number, line)
    return result


_FLOW_HEAD_RE = LazyPattern(r"^(?:ufid:(?P<ufid>[0-9a-fA-F-]+),\s*)?(?P<match>.*?),\s*packets:(?P<stats>.*)$")
_EXTRA_RE = LazyPattern(r",\s*dp-extra-info:(?P<extra>\S+)\s*$")
_STAT_RE = LazyPattern(r"^(?P<key>[a-z_-]+):(?P<value>\S*)$")


def _flow(line):
    """One flow line as a dict, or None when the line is not a flow.

    ``MATCH, packets:N, bytes:N[, other:N ...], used:T[, flags:F][, offloaded:S, dp:D], actions:A
    [, dp-extra-info:X]``: the statistics are read as ``key:value`` fields between the match and
    ``actions:`` (the userspace datapath appends ``dp-extra-info`` after the actions).
    """
    head = _FLOW_HEAD_RE.match(line)
    if not head or ", actions:" not in head.group("stats") and not head.group("stats").startswith("actions:"):
        return None
    stats_text, dummy, actions = ("packets:" + head.group("stats")).partition(", actions:")
    extra = _EXTRA_RE.search(actions)
    if extra:
        actions = actions[: extra.start()]
    stats = {}
    for field in stats_text.split(","):
        pair = _STAT_RE.match(field.strip())
        if not pair:
            return None
        stats[pair.group("key")] = pair.group("value")
    packets, nbytes = to_int(stats.get("packets", "")), to_int(stats.get("bytes", ""))
    if not isinstance(packets, int) or not isinstance(nbytes, int) or "used" not in stats:
        return None
    state = stats.get("offloaded")
    return {
        "ufid": head.group("ufid"),
        "match": head.group("match"),
        "packets": packets,
        "bytes": nbytes,
        "used": stats["used"],
        "flags": stats.get("flags"),
        "offloaded": None if state is None else state == "yes",
        "offload_state": state,
        "dp": stats.get("dp"),
        "actions": actions.strip(),
        "dp_extra_info": extra.group("extra") if extra else None,
    }


def parse_dump_flows(text):
    kind = "ovs-offloaded-flows"
    lines = split_lines(text)
    flows = []
    first_other = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        flow = _flow(line.strip())
        if flow is None:
            if first_other is None:
                first_other = (number, line)
            continue  # "flow-dump from pmd on cpu core: N" headers of the userspace datapath
        flows.append(flow)
    if not flows and first_other is not None:
        raise ParseError(kind, "no flow line ('MATCH, packets:N, bytes:N, used:T, actions:A')", *first_other)
    return {"flows": flows}


def parse_vsctl_get_map(text):
    """``ovs-vsctl get TABLE RECORD COLUMN`` of a map column (``other_config``, ``external_ids``): one line
    ``{key=value, key="value"}`` (``{}`` when empty), values quoted where OVSDB needs it (verbatim sample
    ``shared/corpus/ovs/cx6-proxmox-get-other_config.txt``). Quotes are removed: ``{"hw-offload": "true"}``.
    """
    kind = "ovs-vsctl-get-map"
    lines = [(n, line) for n, line in enumerate(split_lines(text), 1) if line.strip()]
    if len(lines) != 1:
        raise ParseError(kind, "expected exactly one line '{key=value, ...}', got %d" % len(lines),
                         *(lines[1] if lines else (0, None)))
    number, line = lines[0]
    parsed = _options(line)
    if parsed is None:
        raise ParseError(kind, "not an OVSDB map '{key=value, ...}'", number, line)
    return {"map": parsed}


PARSERS = {"ovs-vsctl-show": parse_vsctl_show, "ovs-offloaded-flows": parse_dump_flows,
           "ovs-vsctl-get-map": parse_vsctl_get_map}
