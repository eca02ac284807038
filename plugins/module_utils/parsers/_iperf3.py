# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``iperf3 --json`` (``-J``) reports.

Layout (iperf3 src/iperf_api.c ``iperf_json_start`` / ``iperf_json_finish``; real captures of iperf 3.18 in
``tests/unit/fixtures/parsers/iperf3-json/``): one JSON object with ``start``, ``intervals`` and ``end``.
A TCP test's totals are ``end.sum_sent`` / ``end.sum_received`` (``bytes``, ``seconds``,
``bits_per_second``); UDP tests have ``end.sum``. A failed run still prints the object, with
``error`` (``"unable to connect to server - ..."``) and an empty ``end``: that is returned as
``error`` with the numbers None, for the module to report.
"""

from __future__ import annotations

import json

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError

KIND = "iperf3-json"


def _number(part, key):
    value = part.get(key) if isinstance(part, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def parse_iperf3_json(text):
    """-> ``{"version", "error", "bytes_sent", "bytes_received", "seconds", "bits_per_second", "retransmits"}``."""
    if not isinstance(text, str):
        raise TypeError("parsers take str, got %s" % type(text).__name__)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(KIND, "not JSON (run iperf3 with --json): %s" % exc) from None
    if not isinstance(data, dict) or not isinstance(data.get("start"), dict) or "end" not in data:
        raise ParseError(KIND, "not an iperf3 report: 'start' and 'end' objects expected")
    end = data.get("end") if isinstance(data.get("end"), dict) else {}
    start = data["start"]
    out = {"version": start.get("version") if isinstance(start.get("version"), str) else None,
           "error": data.get("error") if isinstance(data.get("error"), str) else None,
           "bytes_sent": None, "bytes_received": None, "seconds": None, "bits_per_second": None,
           "retransmits": None}
    sent = end.get("sum_sent") if isinstance(end.get("sum_sent"), dict) else end.get("sum")
    received = end.get("sum_received") if isinstance(end.get("sum_received"), dict) else end.get("sum")
    if out["error"] is None:
        if not isinstance(sent, dict) or not isinstance(received, dict):
            raise ParseError(KIND, "no 'end.sum_sent' / 'end.sum_received' totals and no 'error'")
        out["bytes_sent"] = _number(sent, "bytes")
        out["bytes_received"] = _number(received, "bytes")
        out["seconds"] = _number(received, "seconds") or _number(sent, "seconds")
        out["bits_per_second"] = _number(received, "bits_per_second")
        out["retransmits"] = _number(sent, "retransmits")
        if out["bytes_received"] is None or out["seconds"] is None:
            raise ParseError(KIND, "the totals lack 'bytes' or 'seconds'")
    return out


PARSERS = {KIND: parse_iperf3_json}
