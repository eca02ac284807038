# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``mlnx_qos -i IF`` (mlnx-tools).

Layout from ``shared/corpus/mlnx_qos/FORMAT-from-source.md`` (mlnx-tools python/mlnx_qos
pretty_print L294-L366) and the verbatim samples next to it::

    DCBX mode: OS controlled
    Priority trust state: dscp
    dscp2prio mapping:
    <TAB>prio:0 dscp:07,06,05,04,03,02,01,00,      (only when trust is dscp; a prio may take several lines)
    Receive buffer size (bytes): 19872,...,max_buffer_size=4151520   (absent on buffer errors)
    Cable len: 30
    PFC configuration:
    <TAB>priority    0   1   2   3   4   5   6   7
    <TAB>enabled     0   0   0   0   0   1   0   0
    <TAB>buffer      0   0   0   0   0   1   0   0   (absent on buffer errors)
    tc: 0 ratelimit: unlimited, tsa: ets, bw: 9%
    <TAB> priority:  0

Published copies expand the TABs; this parser splits on any whitespace. A ``default priority:`` line
(app table) and the lldpad warning are read or skipped; other unknown lines are ignored. Text without
any mlnx_qos line is a ParseError naming its first line.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
    to_int,
)

KIND = "mlnx-qos"
_TC_RE = LazyPattern(
    r"^tc:\s*(?P<tc>\d+)\s+ratelimit:\s*(?P<rate>[^,]+?)\s*,\s*tsa:\s*(?P<tsa>[A-Za-z_]+)"
    r"(?:\s*,\s*bw:\s*(?P<bw>\d+)\s*%)?\s*$"
)
_TC_PRIO_RE = LazyPattern(r"^\s*priority:\s*(?P<prio>\d+)\s*$")
_DSCP_RE = LazyPattern(r"^\s*prio:\s*(?P<prio>\d+)\s+dscp:\s*(?P<list>[\d,\s]*?)\s*$")
_RATE_RE = LazyPattern(r"^(?P<value>\d+(?:\.\d+)?)\s*Gbps$")


def _int_row(tokens, number, line):
    values = []
    for token in tokens:
        value = to_int(token)
        if not isinstance(value, int):
            raise ParseError(KIND, f"{token!r} is not a number", number, line)
        values.append(value)
    return values


def parse_mlnx_qos(text):
    lines = split_lines(text)
    result = {
        "dcbx_mode": None,
        "trust": None,
        "default_priority": None,
        "receive_buffer_size": None,
        "max_buffer_size": None,
        "cable_len": None,
        "pfc": {"priorities": None, "enabled": None, "buffer": None},
        "tcs": [],
        "dscp2prio": {},
        "prio2dscp": {},
    }
    recognised = 0
    tc = None
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("DCBX mode:"):
            result["dcbx_mode"] = stripped.split(":", 1)[1].strip() or None
        elif stripped.startswith(("Priority trust state:", "Priority trust mode:")):
            result["trust"] = stripped.split(":", 1)[1].strip() or None
        elif stripped in {"dscp2prio mapping:", "PFC configuration:"}:
            pass
        elif stripped.startswith("default priority:"):
            value = stripped.split(":", 1)[1].strip()
            result["default_priority"] = to_int(value) if value else None
        elif stripped.startswith("Receive buffer size (bytes):"):
            body = stripped.split(":", 1)[1].strip().rstrip(",")
            sizes = []
            for item in [part.strip() for part in body.split(",") if part.strip()]:
                if item.startswith("max_buffer_size="):
                    result["max_buffer_size"] = _int_row([item.split("=", 1)[1]], number, line)[0]
                else:
                    sizes.extend(_int_row([item], number, line))
            result["receive_buffer_size"] = sizes
        elif stripped.startswith("Cable len:"):
            result["cable_len"] = _int_row([stripped.split(":", 1)[1].strip()], number, line)[0]
        elif stripped.split()[0] in ("priority", "enabled", "buffer") and ":" not in stripped:
            tokens = stripped.split()
            key = "priorities" if tokens[0] == "priority" else tokens[0]
            result["pfc"][key] = _int_row(tokens[1:], number, line)
        elif _DSCP_RE.match(line):
            match = _DSCP_RE.match(line)
            prio = int(match.group("prio"))
            dscps = _int_row([d for d in match.group("list").replace(" ", "").split(",") if d], number, line)
            result["prio2dscp"].setdefault(str(prio), []).extend(dscps)
            for dscp in dscps:
                result["dscp2prio"][str(dscp)] = prio
        elif _TC_RE.match(stripped):
            match = _TC_RE.match(stripped)
            rate = match.group("rate").strip()
            rate_match = _RATE_RE.match(rate)
            tc = {
                "tc": int(match.group("tc")),
                "ratelimit": rate,
                "ratelimit_gbps": float(rate_match.group("value")) if rate_match else None,
                "tsa": match.group("tsa"),
                "bw": int(match.group("bw")) if match.group("bw") is not None else None,
                "priorities": [],
            }
            result["tcs"].append(tc)
        elif _TC_PRIO_RE.match(line):
            if tc is None:
                raise ParseError(KIND, "'priority:' line before any 'tc:' line", number, line)
            tc["priorities"].append(int(_TC_PRIO_RE.match(line).group("prio")))
        else:
            continue  # lldpad warning, app-table lines, unknown additions
        recognised += 1
    if not recognised:
        for number, line in enumerate(lines, 1):
            if line.strip():
                raise ParseError(KIND, "no mlnx_qos line ('DCBX mode:', 'PFC configuration:', 'tc: ...')",
                                 number, line)
        raise ParseError(KIND, "empty output")
    result["dscp2prio"] = {key: result["dscp2prio"][key] for key in sorted(result["dscp2prio"], key=int)}
    return result


PARSERS = {KIND: parse_mlnx_qos}
