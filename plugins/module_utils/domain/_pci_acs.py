# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the PCIe ACS Control of the bridges and the boot-time unit, and what ``pci_acs`` would change, shared by
the module ``pci_acs`` (its read and plan), ``gpu_info`` (section ``acs``: preflight's read) and the filter
``bluefleet.dpu.acs_plan`` (pci_acs's check, worked out on the controller from that read).

- ``read_acs(runner)``: every PCI device of ``lspci -D -vvv`` by its full slot (``devices_of`` its output);
  ``acs_view(devices)`` only what the plan compares (each device's ``class`` and ``acs``), what gpu_info keeps.
- ``read_unit(path)``: the unit file's text as pci_acs compares it (None when missing); ``unit_text(slots,
  setpci)`` the unit pci_acs writes.
- ``targets(devices, wanted)``: the bridges to manage (O(bridges), or every PCI bridge with ACS); a named device
  that is not a bridge with ACS raises ToolError.
- ``plan(devices, params, unit_before)``: ``slots``, ``before`` (ACS Control words), ``to_write``, ``unit_path``,
  ``unit_after`` and ``unit_change``, for the options ``params``.
- ``plan_from_read(section, params)``: pci_acs's check-mode answer from gpu_info's section, or why it cannot be
  given (lspci could not be read, the unit could not be read, the read was made under another root, the bridges
  asked are not bridges with ACS: then pci_acs fails with its own message).

Errors are ``_tooling.ToolError`` naming the command or file. No AnsibleModule import.
"""

from __future__ import annotations

import os

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._lspci import parse_lspci
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import fs_root_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_tool,
    timeout_spec,
)

UNIT = ("etc", "systemd", "system", "bluefleet-pci-acs.service")
REGISTER = "ECAP_ACS+6.w"
LSPCI = ["lspci", "-D", "-vvv"]


def slot_of(text):
    text = text.strip().lower()
    return text if text.count(":") == 2 else "0000:" + text


LSPCI_WHAT = "read the ACS control of the PCI bridges with lspci -D -vvv"


def devices_of(result):
    """Slot -> device of the ``lspci -D -vvv`` output in ``result``; ToolError when it cannot be parsed."""
    devices = parse_output(parse_lspci, result, LSPCI_WHAT)["devices"]
    return {slot_of(d["slot"]): d for d in devices}


def read_acs(runner):
    return devices_of(run_tool(runner, LSPCI, LSPCI_WHAT))


def acs_view(devices):
    """What ``targets`` and ``plan`` read of each device: its ``class`` and ``acs`` (None without the capability)."""
    return {slot: {"class": d["class"], "acs": d.get("acs")} for slot, d in devices.items()}


def unit_text(slots, setpci):
    lines = ["# Managed by bluefleet.dpu.pci_acs: PCIe ACS off on the bridges between GPUs and NICs (GPUDirect RDMA)",
             "[Unit]", "Description=Disable PCIe ACS on the GPU and NIC bridges", "After=sysinit.target", "",
             "[Service]", "Type=oneshot", "RemainAfterExit=yes"]
    lines += ["ExecStart=%s -s %s %s=0000" % (setpci, slot, REGISTER) for slot in slots]
    lines += ["", "[Install]", "WantedBy=multi-user.target"]
    return "\n".join(lines) + "\n"


def unit_path_of(params):
    return os.path.join(params["fs_root"], *UNIT) if params["persist"] else None


def read_unit(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8
        raise ToolError("read %s failed: %s" % (path, exc)) from exc


def targets(devices, wanted):
    with_acs = {s: d for s, d in devices.items() if d.get("acs") and d["acs"].get("ctl") is not None}
    bridges = {s: d for s, d in with_acs.items() if d["class"] == "PCI bridge"}
    if not wanted:
        return sorted(bridges)
    out = []
    for name in wanted:
        slot = slot_of(name)
        if slot not in devices:
            raise ToolError("disable PCIe ACS failed: %s is not a PCI device of this host (bridges with ACS: %s)"
                            % (name, ", ".join(sorted(bridges)) or "none"))
        if slot not in bridges:
            raise ToolError("disable PCIe ACS failed: %s (%s) is not a PCI bridge with ACS"
                            % (name, devices[slot]["class"]))
        out.append(slot)
    return sorted(set(out))


def words(devices, slots):
    """Slot -> the ACS Control word (4 hex digits) of each of ``slots`` that has the capability."""
    return {s: "%04x" % devices[s]["acs"]["ctl_word"] for s in slots if devices.get(s, {}).get("acs")}


def plan(devices, params, unit_before):
    """What pci_acs with ``params`` does on ``devices`` (``read_acs``) with the unit holding ``unit_before``."""
    slots = targets(devices, params["bridges"])
    before = {s: "%04x" % devices[s]["acs"]["ctl_word"] for s in slots}
    unit_path = unit_path_of(params)
    unit_after = unit_text(slots, params["setpci_path"]) if unit_path else None
    return {"slots": slots, "before": before, "to_write": [s for s in slots if before[s] != "0000"],
            "unit_path": unit_path, "unit_before": unit_before, "unit_after": unit_after,
            "unit_change": unit_path is not None and unit_before != unit_after}


def argument_spec():
    return {
        "bridges": {"type": "list", "elements": "str", "default": []},
        "persist": {"type": "bool", "default": True},
        "setpci_path": {"type": "path", "default": "/usr/bin/setpci"},
        "fs_root": fs_root_spec(),
        "timeout": timeout_spec(60),
    }


def plan_from_read(section, params):
    """pci_acs's check of ``params`` (its options, validated) from gpu_info's ``acs`` section.

    Returns ``{"answered": True, "changes": [bridge, ..., unit path]}`` (the bridges pci_acs would write, then the
    unit when it would write it), or ``{"answered": False, "why": "..."}``: then pci_acs must read the node itself.
    """
    def unanswered(why):
        return {"answered": False, "why": why}

    if not isinstance(section, dict) or not section.get("available"):
        return unanswered("preflight's read has no acs section%s" % (
            (": " + section["reason"]) if isinstance(section, dict) and section.get("reason") else ""))
    if os.path.normpath(section.get("root") or "/") != os.path.normpath(params["fs_root"] or "/"):
        return unanswered("the unit was read under %s, not %s" % (section.get("root"), params["fs_root"]))
    if params["persist"] and section.get("unit_error"):
        return unanswered(section["unit_error"])
    try:
        answer = plan(section["devices"], params, section.get("unit"))
    except ToolError as exc:
        return unanswered("pci_acs refuses the bridges: %s" % exc.msg)
    return {"answered": True,
            "changes": answer["to_write"] + ([answer["unit_path"]] if answer["unit_change"] else [])}
