# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the rshim side of a BlueField: ``cat /dev/rshimN/misc`` and the console output of
``bfb-install``. Kinds: ``rshim-misc``, ``bfb-install``.

Layout: shared/corpus/rshim/FORMAT-from-source.md (rshim-user-space rshim_fuse.c, rshim_log.c,
scripts/bfb-install).

misc: ``KEY`` left-justified in 16 columns, then the value and, for most keys, a help text in
parentheses after a space (``BOOT_MODE       1 (0:rshim, 1:emmc, 2:emmc-boot-swap)``). The help
is dropped from the value and kept under ``help``; parentheses glued to the value are part of it
(``BlueField-3(Rev 1)``, ``9628(s)``). ``DISPLAY_LEVEL 2`` appends a banner and the boot log,
``LEVEL[SOURCE]: message`` lines (with a leading space in current releases, without in some copies).

bfb-install: ``Pushing bfb[ + cfg]`` with pv progress, ``Collecting BlueField booting status...``,
then the same log lines, ending on a marker such as ``Installation finished``, ``Linux up`` or
``DPU is ready``; failures print ``Error: ...`` or ``BlueField Update Failed``.
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    no_structure,
    split_lines,
    to_int,
)

_LOG_RE = LazyPattern(r"^\s*(?P<level>[A-Z]+)\[(?P<source>[A-Za-z0-9_]+)\]:\s?(?P<message>.*?)\s*$")
_MISC_RE = LazyPattern(r"^(?P<key>[A-Z][A-Z0-9_]*)(?:\s+(?P<value>.*?))?\s*$")
_HELP_RE = LazyPattern(r"^(?P<value>.*?)\s+\((?P<help>[^()]*)\)$")
_LIFECYCLE_RE = LazyPattern(r"^lifecycle\s+(?P<state>.+)$", re.IGNORECASE)
_FINISH_MARKERS = ("Installation finished", "DPU is ready", "Linux up")
_ERROR_LEVELS = ("ERR", "ERROR", "ASSERT")


def _log_entry(match):
    return {"level": match.group("level"), "source": match.group("source"), "message": match.group("message")}


def _lifecycle(log):
    for entry in log:
        match = _LIFECYCLE_RE.match(entry["message"])
        if match:
            return match.group("state").strip()
    return None


def parse_rshim_misc(text):
    """``cat /dev/rshimN/misc``: ``{"fields": {KEY: VALUE_TEXT}, "help": {...}, "log": [...]}``."""
    kind = "rshim-misc"
    lines = split_lines(text)
    fields = {}
    helps = {}
    log = []
    in_log = False
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if set(line) <= {"-"}:
            continue  # the banner rules around "Log Messages"
        if line.lower() == "log messages":
            in_log = True
            continue
        match = _LOG_RE.match(line)
        if match:
            in_log = True
            log.append(_log_entry(match))
            continue
        if in_log:
            log.append({"level": None, "source": None, "message": line})
            continue
        match = _MISC_RE.match(line)
        if not match or match.group("value") is None:
            raise ParseError(kind, "expected 'KEY   value (help)' (an rshim misc line)", index + 1, raw)
        value = match.group("value")
        helped = _HELP_RE.match(value)
        if helped:
            value = helped.group("value")
            helps[match.group("key")] = helped.group("help")
        fields[match.group("key")] = value
    if not fields:
        raise no_structure(kind, lines, "'DISPLAY_LEVEL', 'BOOT_MODE', 'DEV_NAME' ... lines")
    return {
        "fields": fields,
        "help": helps,
        "log": log,
        "display_level": to_int(fields["DISPLAY_LEVEL"]) if "DISPLAY_LEVEL" in fields else None,
        "boot_mode": to_int(fields["BOOT_MODE"]) if "BOOT_MODE" in fields else None,
        "bf_mode": fields.get("BF_MODE"),
        "dev_name": fields.get("DEV_NAME"),
        "dev_info": fields.get("DEV_INFO"),
        "lifecycle": _lifecycle(log),
    }


_PUSH_RE = LazyPattern(r"^Pushing bfb(?P<extra>(?:\s*\+\s*[a-z]+)*)\s*(?P<progress>.*)$")
_PV_RE = LazyPattern(r"^[\d.]+\s*[KMGT]?i?B\s+\d+:\d\d:\d\d\s*\[")
_NIC_FW_RE = LazyPattern(r"NIC firmware.*?(?P<version>\d+\.\d+\.\d+)", re.IGNORECASE)


def parse_bfb_install(text):
    """``bfb-install --rshim rshimN --bfb FILE [--config bf.cfg]`` console output.

    ``ok``: a finish marker was printed and no error (``Error:``, ``BlueField Update Failed``,
    an ERR/ASSERT log line). ``nic_firmware_version`` is taken from a ``NIC firmware`` log line
    that carries a version; the corpus capture prints none ("NIC firmware update done"), so it
    is null there.
    """
    kind = "bfb-install"
    lines = split_lines(text)
    log = []
    errors = []
    messages = []
    warnings = []
    pushed = None
    progress = None
    recognised = False
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        match = _LOG_RE.match(line)
        if match:
            entry = _log_entry(match)
            log.append(entry)
            if entry["level"] in _ERROR_LEVELS:
                errors.append(f"{entry['level']}[{entry['source']}]: {entry['message']}")
            recognised = True
            continue
        match = _PUSH_RE.match(line)
        if match:
            parts = [part.strip() for part in match.group("extra").split("+") if part.strip()]
            pushed = ["bfb", *parts]
            progress = match.group("progress") or progress
            recognised = True
            continue
        if _PV_RE.match(line):
            progress = line
            continue
        if line.startswith("Error:") or line.startswith("ERROR:") or "Update Failed" in line:
            errors.append(line)
            recognised = True
            continue
        if line.startswith(("Warn:", "Warning:", "WARNING:")):
            warnings.append(line)
            continue
        if line.startswith("Collecting BlueField booting status"):
            recognised = True
        messages.append(line)
    if not recognised:
        raise no_structure(kind, lines, "'Pushing bfb', 'Collecting BlueField booting status' and "
                           "' INFO[MISC]: ...' lines")
    finish = None
    for entry in log:
        if entry["message"] in _FINISH_MARKERS:
            finish = entry["message"]
    nic_version = None
    for entry in log:
        match = _NIC_FW_RE.search(entry["message"])
        if match:
            nic_version = match.group("version")
    return {
        "ok": finish is not None and not errors,
        "finish_marker": finish,
        "nic_firmware_version": nic_version,
        "nic_firmware_updated": any(entry["message"].startswith("NIC firmware update done") for entry in log),
        "lifecycle": _lifecycle(log),
        "pushed": pushed,
        "progress": progress,
        "errors": errors,
        "warnings": warnings,
        "messages": messages,
        "log": log,
    }


PARSERS = {
    "rshim-misc": parse_rshim_misc,
    "bfb-install": parse_bfb_install,
}
