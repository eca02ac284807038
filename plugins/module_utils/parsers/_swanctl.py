# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for strongSwan ``swanctl --list-sas``.

Layout from ``shared/corpus/swanctl/FORMAT-from-source.md`` (strongswan src/swanctl/commands/list_sas.c)
and the verbatim sample next to it::

    NAME: #UID, STATE, IKEv2, SPI_i[*] SPI_r[*]          ("*" marks the local side's SPI)
      local  'ID' @ ADDR[PORT] [VIPS]
      remote 'ID' @ ADDR[PORT][ EAP: '..'][ XAuth: '..'] [VIPS]
      ENCR[-SIZE][/INTEG[-SIZE]]/PRF/DH
      established Ns ago[, rekeying in Ns][, reauth in Ns][, expires in Ns]
      CHILD: #UID, reqid N, STATE, MODE[-in-UDP], PROTO:ALGS
        installed Ns ago[, rekeying in Ns][, expires in Ns]
        in  SPI[/CPI][ (0xMARK[/0xMASK])], N bytes, N packets[, Ns ago]
        out SPI[/CPI][ (0xMARK[/0xMASK])], N bytes, N packets[, Ns ago]
        local  TS [TS ...]
        remote TS [TS ...]

swanctl prints no hardware-offload marker; offload is visible only in ``ip xfrm state``. Mode and
state stay as printed (``TUNNEL-in-UDP``); ``udp_encap`` says whether ``-in-UDP`` was there. Task
lines (``queued:``/``active:``/``passive:``) and unknown lines are skipped. No SA prints nothing: an
empty list. Text without any SA header line is a ParseError naming its first line.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
)

KIND = "swanctl-list-sas"
_IKE_RE = LazyPattern(
    r"^(?P<name>\S[^:]*): #(?P<uid>\d+), (?P<state>[A-Z_]+), IKEv(?P<version>\d)"
    r"(?:, (?P<spi_i>[0-9a-fA-F]+)_i(?P<star_i>\*?) (?P<spi_r>[0-9a-fA-F]+)_r(?P<star_r>\*?))?\s*$"
)
_CHILD_RE = LazyPattern(
    r"^\s+(?P<name>\S[^:]*): #(?P<uid>\d+), reqid (?P<reqid>\d+), (?P<state>[A-Z_]+), "
    r"(?P<mode>[A-Z]+(?:-in-UDP)?), (?P<proto>[A-Z]+)(?::(?P<algs>\S*))?\s*$"
)
_ENDPOINT_RE = LazyPattern(
    r"^\s+(?P<side>local|remote)\s+'(?P<id>[^']*)' @ (?P<addr>[^\s\[]+)\[(?P<port>\d+)\](?P<rest>.*)$"
)
_TRAFFIC_RE = LazyPattern(
    r"^\s+(?P<dir>in|out)\s+(?P<spi>[0-9a-fA-F]+)(?:/(?P<cpi>[0-9a-fA-F]+))?(?:\s+\((?P<mark>[^)]*)\))?,"
    r"\s*(?P<bytes>\d+) bytes,\s*(?P<packets>\d+) packets(?:,\s*(?P<ago>\d+)s ago)?\s*$"
)
_TS_RE = LazyPattern(r"^\s+(?P<side>local|remote)\s+(?P<ts>[^'\s].*?)\s*$")
_TIMES_RE = LazyPattern(r"(?P<what>established|installed|rekeying in|reauth in|expires in)\s+(?P<secs>\d+)s")
_ALGS_RE = LazyPattern(r"^\s+[A-Z0-9_]+(?:-\d+)?(?:/[A-Z0-9_]+(?:-\d+)?)+\s*$")


def _times(line):
    out = {}
    for match in _TIMES_RE.finditer(line):
        key = match.group("what").replace(" in", "").replace("rekeying", "rekey") + "_seconds"
        out[key] = int(match.group("secs"))
    return out


def parse_list_sas(text):
    lines = split_lines(text)
    sas = []
    sa = None
    child = None
    for line in lines:
        if not line.strip():
            continue
        ike = _IKE_RE.match(line)
        if ike:
            star_i = ike.group("star_i") == "*"
            star_r = ike.group("star_r") == "*"
            sa = {
                "name": ike.group("name"),
                "uniqueid": int(ike.group("uid")),
                "state": ike.group("state"),
                "version": int(ike.group("version")),
                "spi_i": ike.group("spi_i"),
                "spi_r": ike.group("spi_r"),
                "initiator": True if star_i else (False if star_r else None),
                "local": None,
                "remote": None,
                "algorithms": None,
                "established_seconds": None,
                "rekey_seconds": None,
                "reauth_seconds": None,
                "expires_seconds": None,
                "children": [],
            }
            sas.append(sa)
            child = None
            continue
        if sa is None:
            continue
        found = _CHILD_RE.match(line)
        if found:
            mode = found.group("mode")
            child = {
                "name": found.group("name"),
                "uniqueid": int(found.group("uid")),
                "reqid": int(found.group("reqid")),
                "state": found.group("state"),
                "mode": mode,
                "udp_encap": mode.endswith("-in-UDP"),
                "protocol": found.group("proto"),
                "algorithms": found.group("algs") or None,
                "spi_in": None, "spi_out": None,
                "bytes_in": None, "bytes_out": None, "packets_in": None, "packets_out": None,
                "local_ts": None, "remote_ts": None,
                "installed_seconds": None, "rekey_seconds": None, "expires_seconds": None,
            }
            sa["children"].append(child)
            continue
        endpoint = _ENDPOINT_RE.match(line)
        if endpoint and child is None:
            sa[endpoint.group("side")] = {"id": endpoint.group("id"), "address": endpoint.group("addr"),
                                          "port": int(endpoint.group("port"))}
            continue
        if child is None:
            if line.strip().startswith("established"):
                times = _times(line)
                sa.update({k: v for k, v in times.items() if k in sa})
            elif _ALGS_RE.match(line):
                sa["algorithms"] = line.strip()
            continue
        traffic = _TRAFFIC_RE.match(line)
        if traffic:
            side = traffic.group("dir")
            child["spi_" + side] = traffic.group("spi")
            child["bytes_" + side] = int(traffic.group("bytes"))
            child["packets_" + side] = int(traffic.group("packets"))
            continue
        if line.strip().startswith("installed"):
            child.update({k: v for k, v in _times(line).items() if k in child})
            continue
        ts = _TS_RE.match(line)
        if ts:
            child[ts.group("side") + "_ts"] = ts.group("ts").split()
    if not sas:
        for number, line in enumerate(lines, 1):
            if line.strip():
                raise ParseError(KIND, "no 'NAME: #N, STATE, IKEvN, ...' SA line (swanctl --list-sas expected)",
                                 number, line)
    return {"sas": sas}


PARSERS = {KIND: parse_list_sas}
