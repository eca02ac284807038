# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``lspci`` device lines (``lspci``, ``lspci -nn``, ``lspci -D``, a ``grep`` of them,
and the head of ``lspci -vv``). Kind: ``lspci``.

A device line is ``[DOMAIN:]BUS:DEV.FN CLASS[ [CCCC]]: DESCRIPTION[ [VVVV:DDDD]][ (rev RR)][ (prog-if PP ...)]``
(pciutils ``lspci.c`` show_slot_name / show_terse; samples in shared/corpus/lspci). Without
``-nn`` there are no numeric ids: ``class_id``, ``vendor_id`` and ``device_id`` are null.
Bracketed names such as ``[ConnectX-4 Virtual Function]`` are part of the description; only
``[xxxx:xxxx]`` (hex) is read as the ids.

Indented lines after a device (``-v``/``-vv``/``-k``) are read for a few useful facts (Subsystem,
Physical Slot, NUMA node, Kernel driver in use, Kernel modules, the Vital Product Data, and the Access
Control Services capability); the rest of them are ignored.

ACS (``-vv``): pciutils ls-ecaps.c ``cap_acs`` prints ``Capabilities: [OFF vN] Access Control Services``, then
``\t\tACSCap:\t`` and ``\t\tACSCtl:\t`` followed by ``SrcValid TransBlk ReqRedir CmpltRedir UpstreamFwd
EgressCtrl DirectTrans``, each with ``+`` or ``-`` (sample: an lspci -vvvs excerpt on the linux-pci list,
fixture lspci/lkml-lspci-vvv-acs-root-ports). ``acs`` = ``{"offset", "cap", "ctl", "ctl_word"}``: flags as
booleans and ``ctl_word`` the ACS Control register those flags make (bit 0 SrcValid ... bit 6 DirectTrans,
PCIe base spec), i.e. what ``setpci -s SLOT ECAP_ACS+6.w`` reads.
Empty text is no devices (``lspci | grep`` that matched nothing).
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
    to_int,
)

KIND = "lspci"
_LINE_RE = LazyPattern(
    r"^(?P<slot>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+"
    r"(?P<class>[^:\[]*?)(?:\s*\[(?P<class_id>[0-9a-fA-F]{4})\])?:\s*(?P<rest>.*)$"
)
_IDS_RE = LazyPattern(r"\s*\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\]")
_REV_RE = LazyPattern(r"\s*\(rev (?P<rev>[0-9a-fA-F]+)\)")
_PROGIF_RE = LazyPattern(r"\s*\(prog-if (?P<progif>[0-9a-fA-F]+)(?:\s*\[[^\]]*\])?\)")
_ACS_CAP_RE = LazyPattern(r"^Capabilities: \[(?P<offset>[0-9a-fA-F]+)(?: v\d+)?\] Access Control Services")
_ACS_FLAGS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
_ACS_FLAG_RE = LazyPattern(r"(?P<name>[A-Za-z]+)(?P<sign>[+-])")
_VPD_RE = LazyPattern(r"^\[(?P<code>[A-Z0-9]{2})\]\s*(?P<label>[^:]*):\s*(?P<value>.*)$")


def _device(match):
    rest = match.group("rest").strip()
    revision = None
    prog_if = None
    rev = _REV_RE.search(rest)
    if rev:
        revision = rev.group("rev")
        rest = (rest[: rev.start()] + rest[rev.end():]).strip()
    progif = _PROGIF_RE.search(rest)
    if progif:
        prog_if = progif.group("progif")
        rest = (rest[: progif.start()] + rest[progif.end():]).strip()
    vendor_id = device_id = None
    found = list(_IDS_RE.finditer(rest))
    if found:
        ids = found[-1]  # the last [vvvv:dddd] on the line is the device's
        vendor_id, device_id = ids.group("vendor").lower(), ids.group("device").lower()
        rest = (rest[: ids.start()] + rest[ids.end():]).strip()
    class_id = match.group("class_id")
    return {
        "slot": match.group("slot"),
        "class": match.group("class").strip(),
        "class_id": class_id.lower() if class_id else None,
        "vendor_id": vendor_id,
        "device_id": device_id,
        "description": rest,
        "revision": revision,
        "prog_if": prog_if,
    }


def _acs_flags(value, line):
    found = {m.group("name"): m.group("sign") == "+" for m in _ACS_FLAG_RE.finditer(value)}
    if set(found) != set(_ACS_FLAGS):
        raise ParseError(KIND, "an ACS line must give +/- for %s" % ", ".join(_ACS_FLAGS), 0, line)
    return {name: found[name] for name in _ACS_FLAGS}


def _detail(device, line):
    """One indented line of ``lspci -v/-vv`` for ``device``."""
    acs = _ACS_CAP_RE.match(line)
    if acs:
        device["acs"] = {"offset": acs.group("offset").lower(), "cap": None, "ctl": None, "ctl_word": None}
        return
    if line.startswith(("ACSCap:", "ACSCtl:")) and "acs" in device:
        flags = _acs_flags(line.split(":", 1)[1], line)
        if line.startswith("ACSCap:"):
            device["acs"]["cap"] = flags
        else:
            device["acs"]["ctl"] = flags
            device["acs"]["ctl_word"] = sum(1 << i for i, name in enumerate(_ACS_FLAGS) if flags[name])
        return
    vpd = _VPD_RE.match(line)
    if vpd:
        device.setdefault("vpd", {})[vpd.group("code")] = vpd.group("value").strip()
        return
    key, sep, value = line.partition(":")
    if not sep:
        return
    key = key.strip()
    value = value.strip()
    if key == "Subsystem":
        device["subsystem"] = value
    elif key == "Physical Slot":
        device["physical_slot"] = value
    elif key == "NUMA node":
        device["numa_node"] = to_int(value)
    elif key == "Kernel driver in use":
        device["kernel_driver"] = value
    elif key == "Kernel modules":
        device["kernel_modules"] = [name.strip() for name in value.split(",") if name.strip()]
    elif key == "Product Name":
        device.setdefault("vpd", {})["product_name"] = value


def parse_lspci(text):
    lines = split_lines(text)
    devices = []
    for index, raw in enumerate(lines):
        if not raw.strip():
            continue
        if raw[:1].isspace():
            if not devices:
                raise ParseError(KIND, "an indented detail line before any device line", index + 1, raw)
            _detail(devices[-1], raw.strip())
            continue
        match = _LINE_RE.match(raw.strip())
        if not match:
            raise ParseError(KIND, "expected '[domain:]bus:dev.fn class: description' (an lspci device line)",
                             index + 1, raw)
        devices.append(_device(match))
    return {"devices": devices}


PARSERS = {KIND: parse_lspci}
