# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reset planner: which reset activates a change, and the smallest single reset for a node.

Pure: data in, data out; no I/O, no AnsibleModule. Facts: shared/docs/hardware-facts.md
sections 2 and 3 (cited per rule below).

Reset classes, smallest first (``reset_required`` values of every bluefleet module):

* ``none``: takes effect at once (the class DESIGN.md calls "immediate").
* ``driver_restart``: a driver or service restart on the node (openibd, openvswitch).
* ``firmware_reset``: ``mlxfwreset`` level 3 (driver restart plus PCI reset).
* ``warm_reboot``: reboot of the node's OS.
* ``power_cycle``: cold boot of the whole server, card included.

A bigger reset activates everything a smaller one does. Two context rules change which reset
a node really needs (``escalate``):

* BlueField in DPU mode: a host reboot does not reload the card's firmware (SRIOV PR #816) and a
  reboot of the Arm OS does not either, so where firmware_reset is not available the next step
  is a power cycle, not a warm reboot.
* BlueField in NIC mode: a firmware reset flips it back to DPU mode (NCO PR #86): use a warm
  reboot of the host instead.

Where a rule is not known the planner is conservative and says so in ``reason``.
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxconfig import split_value
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern

RESETS = ("none", "driver_restart", "firmware_reset", "warm_reboot", "power_cycle")

DISRUPTION = {
    "none": "none: the change is active at once",
    "driver_restart": "driver or service restart on the node: its links and RDMA devices drop for seconds",
    "firmware_reset": "firmware reset (mlxfwreset level 3: driver restart and PCI reset): the card's links drop "
                      "for about a minute; on a BlueField the Arm OS restarts",
    "warm_reboot": "warm reboot of the node: everything running on it stops for several minutes",
    "power_cycle": "power cycle of the whole server (GPU host and card): every workload on the machine stops "
                   "for several minutes",
}

# mlxconfig parameters, by name pattern, in order: the first match decides.
_FW_RESET_RULE = ("firmware_reset", "mlxconfig writes Next Boot; mlxfwreset level 3, a reboot or a power cycle "
                  "activates it (hardware-facts 2: NCO #188, SRIOV #1082, #449)")
_PARAM_RULES = (
    (LazyPattern(r"^INTERNAL_CPU_(MODEL|OFFLOAD_ENGINE)$"), "power_cycle",
     "DPU/NIC mode parameter: needs an AC power cycle (hardware-facts 2 and 3, BMC docs)"),
    (LazyPattern(r"^INTERNAL_CPU_(PAGE_SUPPLIER|ESWITCH_MANAGER|IB_VPORT0)$"), "power_cycle",
     "part of the BlueField-2 mode set; 'Persistent through AC cycle' in the UEFI menu; conservative: "
     "treated like the mode parameters"),
    (LazyPattern(r"^INTERNAL_CPU_"), "power_cycle",
     "BlueField internal CPU parameter: no activation fact found; conservative: power cycle"),
    (LazyPattern(r"^(SRIOV_EN|NUM_OF_VFS|NUM_OF_PF|NUM_PF_MSIX.*|NUM_VF_MSIX|PF_.*|VF_.*|LINK_TYPE_P\d+|"
                 r"NVME_EMULATION_.*|VIRTIO_.*|PCI_SWITCH_EMULATION_.*|PCI_DOWNSTREAM_PORT_OWNER|ATS_ENABLED|"
                 r"ADVANCED_PCI_SETTINGS|MAX_ACC_OUT_READ|PCI_WR_ORDERING|ROCE_.*|FLEX_.*|PROG_PARSE_GRAPH|"
                 r"HIDE_PORT2_PF|LAG_RESOURCE_ALLOCATION|MEMIC_.*|HOST_CHAINING_.*|ESWITCH_HAIRPIN_.*|"
                 r"STRICT_VF_MSIX_NUM|NON_PREFETCHABLE_PF_BAR|PER_PF_NUM_SF|DPA_AUTHENTICATION|"
                 r"INT_LOG_MAX_PAYLOAD_SIZE|PCIE_CREDIT_TOKEN_TIMEOUT|RT_PPS_ENABLED_ON_POWERUP|"
                 r"ACCURATE_TX_SCHEDULER|PARTIAL_RESET_EN|RESET_WITH_HOST_ON_ERRORS|CQE_COMPRESSION|"
                 r"KEEP_.*_LINK_UP.*|LLDP_NB_.*|MODULE_SPLIT_M\d+)$"),) + _FW_RESET_RULE,
)
_UNKNOWN_PARAM = ("power_cycle", "parameter not in the planner's table: no activation fact known; conservative: "
                  "power cycle (add a rule to _reset_plan.py with its source)")

# Other kinds of change (hardware-facts 2).
_KIND_RULES = {
    "mode": ("power_cycle", "DPU <-> NIC mode needs an AC power cycle (hardware-facts 2 and 3)"),
    "nic_firmware": ("firmware_reset", "a burnt NIC firmware runs after mlxfwreset or a reboot (flint: 'To load "
                                       "new FW run mlxfwreset or reboot machine')"),
    "bfb_nic_firmware": ("power_cycle", "NIC firmware delivered in a BFB needs a host power cycle unless "
                                        "mlxfwreset -l 3 --sync 1 is supported (NICo docs, bfb-build fw_reset())"),
    "bfb_os": ("none", "bfb-install reboots the DPU itself (hardware-facts 2, DPF #21)"),
    "ovs_hw_offload": ("driver_restart", "restart openvswitch (DOCA OVS docs)"),
    "ipsec_full_offload": ("driver_restart", "openibd restart on the Arm, or a reboot (BSP IPsec docs)"),
    "runtime": ("none", "runtime setting, active at once and lost on reboot (NCO README)"),
}
_PRIVHOST_RULES = {
    "restrict": ("none", "mlxprivhost r takes effect immediately (MFT docs)"),
    "privilege": ("none", "mlxprivhost p takes effect immediately (MFT docs)"),
    "disable_rshim": ("power_cycle", "mlxprivhost --disable_rshim needs a power cycle (MFT docs)"),
    "disable_tracer": ("firmware_reset", "mlxprivhost --disable_tracer needs a firmware reset (MFT docs)"),
    "disable_counter_rd": ("firmware_reset", "mlxprivhost --disable_counter_rd needs a firmware reset (MFT docs)"),
    "disable_port_owner": ("firmware_reset", "no fact found for --disable_port_owner; conservative: like the "
                                             "other firmware-held restrictions, a firmware reset"),
}

MODE_PARAMS = ("INTERNAL_CPU_MODEL", "INTERNAL_CPU_PAGE_SUPPLIER", "INTERNAL_CPU_ESWITCH_MANAGER",
               "INTERNAL_CPU_IB_VPORT0", "INTERNAL_CPU_OFFLOAD_ENGINE")


class PlanError(ValueError):
    """A change or context the planner cannot classify (names the input)."""


def rank(reset):
    """Position of ``reset`` in RESETS (0 = none)."""
    if reset not in RESETS:
        raise PlanError("unknown reset class %r; expected one of %s" % (reset, ", ".join(RESETS)))
    return RESETS.index(reset)


def largest(resets):
    """The biggest reset of an iterable (``none`` for an empty one)."""
    best = "none"
    for reset in resets:
        if rank(reset) > rank(best):
            best = reset
    return best


def param_reset(name):
    """``(reset, reason)`` for one mlxconfig parameter name (an ``NAME[i]`` array index is ignored)."""
    base = re.sub(r"\[\d+(\.\.\d+)?\]$", "", str(name))
    for pattern, reset, reason in _PARAM_RULES:
        if pattern.match(base):
            return reset, reason
    return _UNKNOWN_PARAM


def change_reset(change):
    """``(reset, reason)`` for one change dict: ``{"kind": "mlxconfig", "name": ...}``, ``{"kind": "privhost",
    "option": ...}`` or ``{"kind": <one of the other kinds>}``."""
    if not isinstance(change, dict) or "kind" not in change:
        raise PlanError("a change is a dict with a 'kind' key, got %r" % (change,))
    kind = change["kind"]
    if kind == "mlxconfig":
        if not change.get("name"):
            raise PlanError("an mlxconfig change needs the parameter 'name': %r" % (change,))
        return param_reset(change["name"])
    if kind == "privhost":
        option = change.get("option")
        if option not in _PRIVHOST_RULES:
            raise PlanError("unknown privhost option %r; known: %s" % (option, ", ".join(sorted(_PRIVHOST_RULES))))
        return _PRIVHOST_RULES[option]
    if kind in _KIND_RULES:
        return _KIND_RULES[kind]
    known = ", ".join(sorted(_KIND_RULES))
    raise PlanError("unknown kind of change %r; known: mlxconfig, privhost, %s" % (kind, known))


def escalate(reset, bluefield=False, mode=None, side="host", firmware_reset_supported=True):
    """The reset that really activates ``reset`` on this node, and why (``(reset, note)``).

    ``mode``: ``dpu``, ``nic`` or None (ConnectX / unknown); ``side``: ``host`` (the GPU server's OS)
    or ``arm`` (the BlueField's own OS); ``firmware_reset_supported``: mlxfwreset level 3 is
    reported Supported by ``mlxfwreset q`` on this node.
    """
    rank(reset)
    if side not in ("host", "arm"):
        raise PlanError("side must be 'host' or 'arm', got %r" % (side,))
    if mode not in (None, "dpu", "nic"):
        raise PlanError("mode must be 'dpu', 'nic' or None, got %r" % (mode,))
    reloads_on_reboot = side == "host" and not (bluefield and mode == "dpu")
    if reset == "firmware_reset":
        if bluefield and mode == "nic" and side == "host":
            return "warm_reboot", "BlueField in NIC mode: a firmware reset flips it back to DPU mode (NCO PR #86)"
        if firmware_reset_supported:
            return "firmware_reset", "mlxfwreset level 3 is supported"
        if reloads_on_reboot:
            return "warm_reboot", "mlxfwreset level 3 is not supported; a warm reboot reloads the firmware"
        return "power_cycle", ("mlxfwreset level 3 is not supported and a warm reboot does not reload the firmware "
                               "of a BlueField in DPU mode (SRIOV PR #816)")
    if reset == "warm_reboot" and not reloads_on_reboot:
        return "power_cycle", "a warm reboot does not reload the firmware of a BlueField in DPU mode (SRIOV PR #816)"
    return reset, ""


def plan(changes, bluefield=False, mode=None, side="host", firmware_reset_supported=True):
    """Classify ``changes`` and pick the smallest single reset that activates all of them.

    Returns ``{"changes": [change + reset_required + reason], "reset_required", "reset", "note",
    "disruption"}``: ``reset_required`` is the class the changes need, ``reset`` what this node has
    to do for it (after ``escalate``).
    """
    out = []
    for change in changes:
        reset, reason = change_reset(change)
        item = dict(change)
        item["reset_required"] = reset
        item["reason"] = reason
        out.append(item)
    needed = largest(item["reset_required"] for item in out)
    reset, note = escalate(needed, bluefield, mode, side, firmware_reset_supported)
    return {
        "changes": out,
        "reset_required": needed,
        "reset": reset,
        "note": note,
        "disruption": DISRUPTION[reset],
    }


def describe(change):
    """One line for a change: ``NUM_OF_VFS: 16 -> 8`` or the kind."""
    label = change.get("name") or change.get("option") or change["kind"]
    if "before" in change or "after" in change:
        return "%s: %s -> %s" % (label, change.get("before"), change.get("after"))
    return str(label)


def render(node, result):
    """The plan as lines a person reads before anything happens (check mode of the firmware role)."""
    lines = ["%s: %d change(s); reset: %s" % (node, len(result["changes"]), result["reset"])]
    for change in result["changes"]:
        lines.append("  %s (needs %s: %s)" % (describe(change), change["reset_required"], change["reason"]))
    if result["note"]:
        lines.append("  why %s: %s" % (result["reset"], result["note"]))
    lines.append("  expected disruption: %s" % result["disruption"])
    return lines


# -- one card's plan, from what was read of it ----------------------------------------------------------------------
# bluefleet.dpu.fw_reset reads the card and plans with card_plan(); the filter bluefleet.dpu.reset_plan plans with
# the same function from a read bluefleet.dpu.dpu_info made (state_from_read), so both give the same plan.

# The resets a node does itself (a driver restart is the owning module's; none needs nothing).
ACTIONS = ("firmware_reset", "warm_reboot", "power_cycle")


def changes_of(state, extra):
    """What is pending on the card (NV parameters, a flashed firmware not running yet) plus ``extra`` (changes
    this run is about to make), each name once."""
    changes = [{"kind": "mlxconfig", "name": name, "before": cur, "after": nxt}
               for name, (cur, nxt) in state["nvconfig"].items()]
    fw = state["firmware"]
    if fw["flashed"] and fw["flashed"] != fw["running"]:
        changes.append({"kind": "nic_firmware", "name": "firmware", "before": fw["running"], "after": fw["flashed"]})
    seen = {c["name"] for c in changes}
    for item in extra:
        entry = {"kind": item.get("kind", "mlxconfig")}
        entry.update({k: item[k] for k in ("name", "option", "before", "after") if k in item})
        if entry.get("name") in seen:
            continue
        changes.append(entry)
    return changes


def pending_summary(state):
    fw = state["firmware"]
    return {"nvconfig": sorted(state["nvconfig"]),
            "firmware": bool(fw["flashed"] and fw["flashed"] != fw["running"])}


def describe_pending(state):
    parts = ["%s %s -> %s" % (name, cur, nxt) for name, (cur, nxt) in state["nvconfig"].items()]
    fw = state["firmware"]
    if fw["flashed"] and fw["flashed"] != fw["running"]:
        parts.append("firmware %s -> %s" % (fw["running"], fw["flashed"]))
    return ", ".join(parts) or "nothing"


def reset_method(reset, power_cycle_method):
    """How ``reset`` is done: mlxfwreset, the reboot command, or the power cycle method."""
    if reset == "firmware_reset":
        return "mlxfwreset"
    if reset == "warm_reboot":
        return "reboot_command"
    return power_cycle_method


def check_available(reset, changes, options, check_mode):
    """Raise PlanError, before anything happens, when ``reset`` cannot be done with ``options`` (fw_reset's
    reboot_command and power_cycle_method)."""
    what = ", ".join(describe(change) for change in changes) or "nothing"
    if reset == "warm_reboot" and not options.get("reboot_command"):
        raise PlanError("reset the card failed: a warm reboot is needed to activate %s, and reboot_command is "
                        "not set; set it (e.g. [systemctl, reboot]) or reboot the node" % what)
    if reset == "power_cycle":
        method = options["power_cycle_method"]
        if method == "none":
            raise PlanError("reset the card failed: a power cycle of the server is needed to activate %s, and "
                            "power_cycle_method is none; set power_cycle_method (ipmitool, redfish, command or "
                            "pause) or power-cycle the server by hand and run again" % what)
        if method == "pause" and not check_mode:
            raise PlanError("reset the card failed: a power cycle of the server is needed to activate %s; "
                            "power-cycle it by hand now (not a reboot) and run again" % what)


def card_plan(device, side, state, level3, options, changes=(), check_mode=True):
    """The reset plan of one card: ``state`` as ``Card.pending`` reads it (``bluefield``, ``mode``, ``nvconfig``
    {NAME: (current, next)}, ``firmware`` {flashed, running}), ``level3``: mlxfwreset level 3 supported,
    ``options``: fw_reset's ``firmware_reset``, ``reboot_command``, ``power_cycle_method``; ``changes``: what
    this run is about to make. Raises PlanError (the message fw_reset fails with) when the reset is not
    available. Returns fw_reset's plan keys; ``pending`` and ``firmware`` are the card as read."""
    try:
        result = plan(changes_of(state, changes), bluefield=state["bluefield"], mode=state["mode"],
                      side="arm" if side == "dpu" else "host",
                      firmware_reset_supported=level3 and options["firmware_reset"])
    except PlanError as exc:
        raise PlanError("plan the reset failed: %s" % exc) from exc
    reset = result["reset"] if result["reset"] in ACTIONS else "none"
    method = reset_method(reset, options["power_cycle_method"]) if reset != "none" else "none"
    if reset != "none":
        check_available(reset, result["changes"], options, check_mode)
    return {
        "changed": reset != "none",
        "device": device,
        "side": side,
        "reset": reset,
        "reset_required": result["reset_required"],
        "note": result["note"],
        "disruption": result["disruption"],
        "method": method,
        "plan": render(device, dict(result, reset=reset)),
        "changes": result["changes"],
        "pending": pending_summary(state),
        "firmware": state["firmware"],
        "firmware_reset_supported": level3,
        "verified": reset == "none",
    }


def state_from_read(card):
    """``(state, level3)`` for card_plan() from one entry of bluefleet.dpu.dpu_info's ``devices`` read with the
    ``firmware``, ``nvconfig`` and ``reset_levels`` sections; None when a section is missing or was unavailable
    (the tool missing): then only fw_reset can plan. The same reading as ``Card.pending`` / ``Card.levels``."""
    if not isinstance(card, dict):
        return None
    sections = [card.get(name) for name in ("firmware", "nvconfig", "reset_levels")]
    if not all(isinstance(section, dict) and section.get("available") for section in sections):
        return None
    firmware, nvconfig, levels = sections
    state = card_state(card.get("device_type"), nvconfig.get("params") or {},
                       {"flashed": firmware.get("flashed"), "running": firmware.get("running")})
    return state, bool(levels.get("level3"))


def card_state(device_type, params, firmware):
    """What card_plan() plans from, out of a card's ``mlxconfig -e q`` parameters ({NAME: {"current",
    "next_boot", ...}}) and its ``{"flashed", "running"}`` firmware: the NV parameters whose Next Boot differs from
    the current value, and for a BlueField its mode (``nic`` when INTERNAL_CPU_OFFLOAD_ENGINE is 1, else ``dpu``).
    ``Card.pending`` (fw_reset) and state_from_read() (the filter) both read a card through it."""
    pending = {name: (entry.get("current"), entry.get("next_boot")) for name, entry in sorted(params.items())
               if entry.get("current") is not None and entry.get("current") != entry.get("next_boot")}
    bluefield = (device_type or "").lower().startswith("bluefield")
    mode = None
    if bluefield:
        engine = (params.get("INTERNAL_CPU_OFFLOAD_ENGINE") or {}).get("current")
        mode = "nic" if engine is not None and split_value(engine)[1] == 1 else "dpu"
    return {"device_type": device_type, "bluefield": bluefield, "mode": mode, "nvconfig": pending,
            "firmware": firmware}
