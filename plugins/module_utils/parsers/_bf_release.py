# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for what the BlueField Arm OS says about its own software: ``/etc/mlnx-release``,
``bfver`` and ``mlxbf-bootctl``.

Kinds: ``mlnx-release``, ``bfver``, ``mlxbf-bootctl``. Samples: shared/corpus/bf-release,
shared/corpus/mlxbf-bootctl; the bfver print format is in shared/corpus/bfvcheck/FORMAT-from-source.md.
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

# /etc/mlnx-release, two naming schemes seen:
#   DOCA_1.3.0_BSP_3.9.0_Ubuntu_20.04-6.signed        (DOCA 1.x/2.x images)
#   bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod        (bf-bundle images; the bundle carries the DOCA version)
_DOCA_RE = LazyPattern(r"(?:^|[_\-.])DOCA[_\-]v?(\d+(?:\.\d+)+)", re.IGNORECASE)
_BSP_RE = LazyPattern(r"(?:^|[_\-.])BSP[_\-]v?(\d+(?:\.\d+)+)", re.IGNORECASE)
_BUNDLE_RE = LazyPattern(r"^bf-bundle-(?P<version>\d+(?:\.\d+)+)(?:-(?P<build>\d+))?(?:_(?P<rest>.*))?$", re.IGNORECASE)
_OS_RE = LazyPattern(r"(ubuntu|debian|rocky|centos|rhel|oracle|anolis|openeuler|mariner|ctyunos)[_\-]?(\d+(?:\.\d+)*)",
                     re.IGNORECASE)


def parse_mlnx_release(text):
    """``cat /etc/mlnx-release``: one line naming the installed BlueField image."""
    kind = "mlnx-release"
    lines = split_lines(text)
    content = [(i + 1, line.strip()) for i, line in enumerate(lines) if line.strip()]
    if not content:
        raise ParseError(kind, "the text is empty; expected the one line of /etc/mlnx-release")
    if len(content) > 1:
        line_no, line = content[1]
        raise ParseError(kind, "expected one line (the release name), found more", line_no, line)
    line_no, release = content[0]
    if any(not ch.isprintable() for ch in release) or " " in release or "\t" in release:
        raise ParseError(kind, "a release name is one printable word (e.g. bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod)",
                         line_no, lines[line_no - 1])
    doca = _DOCA_RE.search(release)
    bsp = _BSP_RE.search(release)
    bundle = _BUNDLE_RE.match(release)
    os_match = _OS_RE.search(release)
    result = {
        "release": release,
        "doca_version": doca.group(1) if doca else None,
        "bsp_version": bsp.group(1) if bsp else None,
        "bundle_version": None,
        "os": f"{os_match.group(1).lower()}-{os_match.group(2)}" if os_match else None,
        "signed": release.endswith(".signed"),
    }
    if bundle:
        version = bundle.group("version")
        build = bundle.group("build")
        result["bundle_version"] = version + ("-" + build if build else "")
        # A bf-bundle is numbered after the DOCA release it ships (bf-bundle-2.9.1-40 is DOCA 2.9.1).
        if result["doca_version"] is None:
            result["doca_version"] = version
    return result


_BFVER_RE = LazyPattern(r"^\s*(?:BlueField\s+)?(?P<label>[A-Za-z][A-Za-z0-9 ]*?)\s+[Vv]ersion\s*:\s*(?P<value>.*?)\s*$")


def parse_bfver(text):
    """``bfver``: boot-partition device line (``--/dev/mmcblk0boot1``), then ``BlueField X version: V`` lines and
    ``OS Release Version: V``.

    Returns ``versions`` per component as printed (``ATF``, ``UEFI``, ``BSP``, ``OS Release``) and the usual
    ones as snake_case keys (null when not printed).
    """
    kind = "bfver"
    lines = split_lines(text)
    versions = {}
    devices = []
    other = {}
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("--"):
            devices.append(line[2:].strip())
            continue
        match = _BFVER_RE.match(line)
        if match:
            label = " ".join(match.group("label").split())
            versions[label] = match.group("value") or None
            continue
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.strip().startswith("-"):
            other[key.strip()] = value.strip()  # a line a newer bfver may add; kept, not guessed at
            continue
        raise ParseError(kind, "expected '--<device>' or '<component> version: <value>'", index + 1, raw)
    if not versions:
        raise no_structure(kind, lines, "'BlueField ATF version: ...' lines")
    return {
        "boot_device": devices[0] if devices else None,
        "devices": devices,
        "atf_version": versions.get("ATF"),
        "uefi_version": versions.get("UEFI"),
        "bsp_version": versions.get("BSP"),
        "os_release_version": versions.get("OS Release"),
        "versions": versions,
        "other": other,
    }


# mlxbf-bootctl (no arguments) prints "key: value" lines; the names below are those printed by
# the BlueField-2 samples in the corpus. Unknown keys are kept under "fields".
_BOOTCTL_KEYS = {
    "primary": "primary",
    "backup": "backup",
    "boot-bus-width": "boot_bus_width",
    "reset to x1 after reboot": "reset_to_x1_after_reboot",
    "watchdog-swap": "watchdog_swap",
    "lifecycle state": "lifecycle_state",
    "secure boot key free slots": "secure_boot_key_free_slots",
}


def parse_mlxbf_bootctl(text):
    """``mlxbf-bootctl``: boot partitions, watchdog and the secure-boot lifecycle state.

    ``secured`` is true for the lifecycle states whose name says the device enforces secure boot
    (``GA Secured``, ``Secured (development)``), false for ``... Non-Secured``, null otherwise (e.g. ``RMA``).
    """
    kind = "mlxbf-bootctl"
    lines = split_lines(text)
    fields = {}
    for raw in lines:
        line = raw.strip()
        if ":" not in line:
            continue  # e.g. the command echoed above the output, or a blank line
        key, dummy, value = line.partition(":")
        key = " ".join(key.split()).lower()
        if not key:
            continue
        fields[key] = value.strip()
    if "lifecycle state" not in fields and "primary" not in fields:
        raise no_structure(kind, lines, "'primary: ...' and 'lifecycle state: ...' lines")
    result = {name: fields.get(key) for key, name in _BOOTCTL_KEYS.items()}
    slots = result["secure_boot_key_free_slots"]
    result["secure_boot_key_free_slots"] = to_int(slots) if slots is not None else None
    state = result["lifecycle_state"]
    secured = None
    if state:
        lowered = state.lower()
        if "non-secured" in lowered or "non secured" in lowered:
            secured = False
        elif "secured" in lowered:
            secured = True
    result["secured"] = secured
    result["fields"] = {snake(key): value for key, value in fields.items() if snake(key)}
    return result


PARSERS = {
    "mlnx-release": parse_mlnx_release,
    "bfver": parse_bfver,
    "mlxbf-bootctl": parse_mlxbf_bootctl,
}
