# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser of the Prometheus text exposition format, version 0.0.4 (what a DOCA Telemetry Service Prometheus
endpoint answers on ``GET /metrics``).

Format (prometheus.io/docs/instrumenting/exposition_formats, "Text-based format"): lines separated by ``\\n``;
``# HELP <name> <doc>`` and ``# TYPE <name> <counter|gauge|histogram|summary|untyped>``; other ``#`` lines are
comments; a sample is ``<name>[{<label>="<value>",...}] <value> [<timestamp ms>]``, names match
``[a-zA-Z_:][a-zA-Z0-9_:]*``, label values escape ``\\``, ``"`` and newline, values are Go floats (``NaN``,
``+Inf``, ``-Inf`` included).

Pure: no I/O. ``PrometheusError`` names the line that does not parse. Not registered in a ``PARSERS`` dict:
the parser-fixture suite wants a real capture from shared/corpus for every kind, and the corpus holds no
Prometheus page yet (tests/unit/module_utils/test_prometheus.py tests it on the format's rules).
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = LazyPattern(r"^(?P<name>" + _NAME + r")\s*(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+(?P<ts>-?\d+))?\s*$")
_LABEL = LazyPattern(r'\s*(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"(?P<value>(?:[^"\\]|\\.)*)"\s*(?:,|$)')
_TYPES = ("counter", "gauge", "histogram", "summary", "untyped")
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


class PrometheusError(ValueError):
    """A line of the page does not follow the text exposition format."""


def _value(text, lineno, line):
    special = {"NaN": float("nan"), "+Inf": float("inf"), "-Inf": float("-inf"), "Inf": float("inf")}
    if text in special:
        return special[text]
    try:
        return float(text)
    except ValueError:
        raise PrometheusError("line %d: value %r is not a number: %r" % (lineno, text, line)) from None


def _labels(text, lineno, line):
    labels = {}
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if not m:
            raise PrometheusError("line %d: labels do not parse at %r: %r" % (lineno, text[pos:], line))
        labels[m.group("key")] = re.sub(r'\\[\\"n]', lambda e: _ESCAPES[e.group(0)], m.group("value"))
        pos = m.end()
    return labels


def parse_metrics(text):
    """``{name: {"type": str, "help": str, "samples": [{"labels": {...}, "value": float, "timestamp": int|None}]}}``.

    A sample whose family has no ``# TYPE`` line is ``untyped``. Raises PrometheusError on a malformed line.
    """
    families = {}

    def family(name):
        return families.setdefault(name, {"type": "untyped", "help": "", "samples": []})

    for lineno, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            parts = stripped[1:].strip().split(None, 2)
            if len(parts) >= 2 and parts[0] in ("HELP", "TYPE"):
                if not re.match("^" + _NAME + "$", parts[1]):
                    raise PrometheusError("line %d: bad metric name %r: %r" % (lineno, parts[1], line))
                if parts[0] == "TYPE":
                    kind = parts[2].strip() if len(parts) > 2 else ""
                    if kind not in _TYPES:
                        raise PrometheusError("line %d: unknown type %r: %r" % (lineno, kind, line))
                    family(parts[1])["type"] = kind
                else:
                    family(parts[1])["help"] = parts[2] if len(parts) > 2 else ""
            continue
        m = _SAMPLE.match(stripped)
        if not m:
            raise PrometheusError("line %d is not a sample: %r" % (lineno, line))
        labels = _labels(m.group("labels"), lineno, line) if m.group("labels") else {}
        family(m.group("name"))["samples"].append({
            "labels": labels,
            "value": _value(m.group("value"), lineno, line),
            "timestamp": int(m.group("ts")) if m.group("ts") else None,
        })
    return families
