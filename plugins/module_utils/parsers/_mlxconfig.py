# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``mlxconfig`` / ``mstconfig`` text output. Kinds: ``mlxconfig-query``, ``mlxconfig-set``.

Layout (shared/corpus/mlxconfig/FORMAT-from-source.md, from mstflint mlxcfg_ui.cpp, checked
against the samples): per device a ``Device #N:`` block with ``Device type:``, ``Name:``,
``Description:``, ``Device:`` (labels padded to 16 or 20 columns, values right-padded), then
``Configurations:`` followed by the column titles (``Next Boot``; with ``-e`` ``Default
Current Next Boot``; for ``set`` ``Next Boot New``) and one line per parameter:
a 8- or 9-character prefix holding the ``*`` (value differs) and ``RO`` (read only) marks,
the name, then the values. The widths changed five times between releases and a value
longer than its column runs into the next one with no space (``DEVICE_DEFAULT(0)`` in a
16-wide column), so lines are read by tokens; glued ``...)NAME(...)`` values are split.

Values stay as printed (``EMBEDDED_CPU(1)``, ``True(1)``, ``Array[0..7]``, ``N/A``); plain
integers become ints. ``split_value`` turns ``"EMBEDDED_CPU(1)"`` into ``("EMBEDDED_CPU", 1)``
for callers that compare with a desired value.

Errors are printed on stdout as ``-E- <text>``: they are returned in ``errors`` (the module
decides); output with neither a device block nor an ``-E-`` line is rejected.
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    no_structure,
    snake,
    split_lines,
    to_int,
)

_DEVICE_NO_RE = LazyPattern(r"^Device\s*#\s*(\d+)\s*:\s*$")
_HEADER_RE = LazyPattern(r"^(?P<label>Device type|Name|Description|Device)\s*:\s*(?P<value>.*?)\s*$")
_CONFIG_RE = LazyPattern(r"^Configurations\s*:\s*(?P<columns>.*?)\s*$")
_PARAM_NAME_RE = LazyPattern(r"^[A-Za-z][A-Za-z0-9_.]*(?:\[\d+(?:\.\.\d+)?\])?$")
_GLUE_RE = LazyPattern(r"(?<=\))(?=[^\s)])")
_VALUE_RE = LazyPattern(r"^(?P<name>.*)\((?P<number>-?\d+)\)$")
_MARKS = ("*", "RO", "*RO")
_NOTE_PREFIXES = (
    "The '*' shows",
    "The 'RO' shows",
    "Device Firmware does not support",
    "Device firmware does not support",
)
# Column titles as printed -> keys. Without titles (published copies sometimes lose them)
# the number of values decides, by the tool's defaults: query 1 = Next Boot, 3 = -e;
# set 2 = Next Boot + New. A 2-value query line without titles is read as Current + Next Boot
# (an assumption: no sample shows it).
_DEFAULT_COLUMNS = {
    "mlxconfig-query": {1: ["next_boot"], 2: ["current", "next_boot"], 3: ["default", "current", "next_boot"]},
    "mlxconfig-set": {1: ["next_boot"], 2: ["next_boot", "new"], 3: ["default", "current", "next_boot"]},
}


def split_value(value):
    """``"EMBEDDED_CPU(1)"`` -> ``("EMBEDDED_CPU", 1)``; ``16`` -> ``(None, 16)``; ``"Array[0..7]"`` ->
    ``("Array[0..7]", None)``; ``None`` -> ``(None, None)``."""
    if value is None:
        return None, None
    if isinstance(value, int):
        return None, value
    match = _VALUE_RE.match(value)
    if match:
        return match.group("name"), int(match.group("number"))
    return value, None


def _looks_like_param(line):
    tokens = line.split()
    while tokens and tokens[0] in _MARKS:
        tokens.pop(0)
    return len(tokens) >= 2 and bool(_PARAM_NAME_RE.match(tokens[0]))


def _columns(text):
    titles = [title for title in re.split(r"\s{2,}|\t", text.strip()) if title]
    return [snake(title) for title in titles]


def _values(tokens):
    values = []
    for token in tokens:
        values.extend(part for part in _GLUE_RE.split(token) if part)
    return [to_int(value) for value in values]


class _Reader:
    """Walks the lines once; ``kind`` only changes the column defaults and the error's kind."""

    def __init__(self, kind, text):
        self.kind = kind
        self.lines = split_lines(text)
        self.devices = []
        self.errors = []
        self.messages = []
        self.notes = []
        self.prompt = None
        self.answer = None
        self.apply_status = None
        self.device = None
        self.columns = None
        self.in_config = False

    def fail(self, reason, index):
        return ParseError(self.kind, reason, index + 1, self.lines[index])

    def new_device(self, number=None):
        self.device = {
            "number": number,
            "device_type": None,
            "name": None,
            "description": None,
            "device": None,
            "params": {},
        }
        self.devices.append(self.device)
        self.columns = None
        self.in_config = False

    def param(self, index, line):
        tokens = line.split()
        marks = ""
        while tokens and tokens[0] in _MARKS:
            marks += tokens.pop(0)
        if not tokens or not _PARAM_NAME_RE.match(tokens[0]):
            raise self.fail("expected a parameter line: [*][RO] NAME VALUE...", index)
        name = tokens[0]
        values = _values(tokens[1:])
        if not values:
            raise self.fail(f"parameter {name} has no value", index)
        columns = self.columns or _DEFAULT_COLUMNS[self.kind].get(len(values))
        if columns is None or len(columns) != len(values):
            expected = " ".join(self.columns) if self.columns else "1 to 3 values"
            raise self.fail(f"parameter {name} has {len(values)} values, the table has columns: {expected}", index)
        entry = {"default": None, "current": None, "next_boot": None}
        entry.update(zip(columns, values, strict=True))
        entry["modified"] = "*" in marks
        entry["read_only"] = "RO" in marks
        self.device["params"][name] = entry

    def read(self):
        for index, raw in enumerate(self.lines):
            line = raw.strip()
            if not line or set(line) <= {"-"} or set(line) == {"."}:
                continue  # blank, the ---- rule under "Device #1:", or a '...' elision in a published copy
            match = _DEVICE_NO_RE.match(line)
            if match:
                self.new_device(int(match.group(1)))
                continue
            if line.startswith(("-E-", "-W-", "-I-")):
                (self.errors if line.startswith("-E-") else self.messages).append(line[3:].strip())
                continue
            if "(y/n)" in line:
                question, dummy, answer = line.rpartition(":")
                self.prompt = question.strip()
                self.answer = answer.strip() or None
                continue
            if line.startswith("Applying..."):
                status = line[len("Applying..."):].strip().rstrip("!").strip()
                self.apply_status = status or None
                continue
            if line.startswith(_NOTE_PREFIXES):
                self.notes.append(line)
                continue
            match = _CONFIG_RE.match(line)
            if match:
                if self.device is None:
                    self.new_device()
                self.columns = _columns(match.group("columns")) or None
                self.in_config = True
                continue
            match = _HEADER_RE.match(line)
            if match and not self.in_config:
                if self.device is None or self.device[snake(match.group("label"))] is not None:
                    self.new_device()  # a filtered copy without "Device #N:", or the next device
                self.device[snake(match.group("label"))] = match.group("value")
                continue
            if self.in_config:
                if not raw[:1].isspace() and not _looks_like_param(line):
                    # an unindented sentence after the table (e.g. "Failed to query some of the TLVs:")
                    self.notes.append(line)
                    continue
                self.param(index, line)
                continue
            raise self.fail("not a line of mlxconfig output (device header, Configurations table, prompt or -E-)",
                            index)
        return self


def parse_mlxconfig_query(text):
    """``mlxconfig -d DEV [-e] q [PARAM...]``: ``{"devices": [...], "errors": [...], "messages": [...]}``."""
    kind = "mlxconfig-query"
    reader = _Reader(kind, text).read()
    if not reader.devices and not reader.errors:
        raise no_structure(kind, reader.lines, "a 'Device #1:' block with 'Configurations:' or an '-E-' line")
    return {
        "devices": reader.devices,
        "errors": reader.errors,
        "messages": reader.messages,
        "notes": reader.notes,
    }


_RESET_PROMPT_RE = LazyPattern(r"Reset configuration for device (?P<device>\S+?)\?")


def parse_mlxconfig_set(text):
    """``mlxconfig -d DEV -y set K=V ...`` (and ``... reset``): the table of changes, the answer and the result.

    ``applied`` is true only after ``Applying... Done!``; ``reboot_required`` / ``power_cycle_required``
    follow the ``-I-`` line the tool prints after applying.
    """
    kind = "mlxconfig-set"
    reader = _Reader(kind, text).read()
    if len(reader.devices) > 1:
        raise ParseError(kind, f"set output names one device, found {len(reader.devices)}")
    if not reader.devices and not reader.errors and reader.prompt is None and reader.apply_status is None:
        raise no_structure(kind, reader.lines, "a 'Configurations: Next Boot New' table, the "
                           "'Apply new Configuration? (y/n)' prompt and 'Applying... Done!'")
    device = reader.devices[0] if reader.devices else None
    changes = {}
    if device:
        for name, entry in device["params"].items():
            changes[name] = {"next_boot": entry["next_boot"], "new": entry.get("new")}
    target = device["device"] if device else None
    if target is None and reader.prompt:
        match = _RESET_PROMPT_RE.search(reader.prompt)
        if match:
            target = match.group("device")
    applied = reader.apply_status is not None and reader.apply_status.lower().startswith("done")
    info = " ".join(reader.messages).lower()
    return {
        "device": target,
        "device_type": device["device_type"] if device else None,
        "name": device["name"] if device else None,
        "description": device["description"] if device else None,
        "changes": changes,
        "prompt": reader.prompt,
        "answer": reader.answer,
        "apply_status": reader.apply_status,
        "applied": applied,
        "reboot_required": applied and "reboot" in info,
        "power_cycle_required": applied and "power cycle" in info,
        "errors": reader.errors,
        "messages": reader.messages,
    }


PARSERS = {
    "mlxconfig-query": parse_mlxconfig_query,
    "mlxconfig-set": parse_mlxconfig_set,
}
