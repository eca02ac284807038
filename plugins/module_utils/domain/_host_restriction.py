# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host privilege level and port-function flags of a BlueField, as ``host_restriction`` compares them, shared
by the module and the filter ``bluefleet.dpu.restriction_plan`` (the module's check, worked out on the controller
from ``dpu_info``'s ``privilege`` section: preflight's read of the card).

- ``state_of(query, what)``: the level and the four flags from a parsed ``mlxprivhost -d DEV q``
  (``_mlxprivhost.parse_mlxprivhost_query``; dpu_info's section holds the same keys); ToolError when the query
  printed an error, no level, or a flag that is not TRUE or FALSE.
- ``check_params(params)``, ``wanted_state(params, before)``: the options' own rule (no flag with ``privileged``)
  and the level and flags asked for.
- ``outcome(params, before, device)``: the module's result keys (``changed``, ``level``, ``port_functions``,
  ``reset_required`` and ``reset_required_by`` from ``FLAG_RESETS``, ``diff``) for a card whose state before is
  ``before``; after a real run, the card reads back as predicted or the module fails.
- ``plan_from_read(read, params)``: the module's check-mode answer from a dpu_info read, or why it cannot be given.

Errors are ``_tooling.ToolError``. No AnsibleModule import, no I/O.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._cards import only_card
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._reset_plan import largest
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import device_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError, timeout_spec

LEVELS = {"restricted": "RESTRICTED", "privileged": "PRIVILEGED"}
COMMANDS = {"restricted": "r", "privileged": "p"}
# What activates each port-function flag (hardware-facts.md section 2, from the MFT mlxprivhost page):
# the level itself takes effect at once.
FLAG_RESETS = {
    "disable_rshim": "power_cycle",
    "disable_tracer": "firmware_reset",
    "disable_counter_rd": "firmware_reset",
    "disable_port_owner": "none",
}
FLAGS = tuple(FLAG_RESETS)


def argument_spec():
    spec = {
        "state": {"type": "str", "choices": list(LEVELS), "required": True},
        "device": device_spec(),
        "timeout": timeout_spec(120),
    }
    for flag in FLAGS:
        spec[flag] = {"type": "bool"}
    return spec


def state_of(query, what, result=None):
    """``{"level", FLAG: bool, ...}`` from a parsed query (``errors``, ``level``, ``port_functions``)."""
    if query.get("errors"):
        raise ToolError("%s failed: %s" % (what, query["errors"][0]), result)
    if not query.get("level"):
        raise ToolError("%s failed: the query printed no level" % what, result)
    state = {"level": query["level"]}
    for flag in FLAGS:
        value = (query.get("port_functions") or {}).get(flag)
        if value not in ("TRUE", "FALSE"):
            raise ToolError("%s failed: '%s' is %r, expected TRUE or FALSE" % (what, flag, value), result)
        state[flag] = value == "TRUE"
    return state


def check_params(params):
    if params["state"] == "privileged":
        set_flags = [flag for flag in FLAGS if params[flag]]
        if set_flags:
            raise ToolError("set host privilege failed: %s apply only with state=restricted (mlxprivhost p clears "
                            "every flag); drop them or use state=restricted" % ", ".join(set_flags))


def wanted_state(params, before):
    """The level and flags asked for; a flag left unset (null) keeps its value while restricted.
    ``mlxprivhost p`` clears every flag, so privileged means all flags false."""
    want = {"level": LEVELS[params["state"]]}
    for flag in FLAGS:
        if params["state"] == "privileged":
            want[flag] = False
        else:
            want[flag] = before[flag] if params[flag] is None else params[flag]
    return want


def outcome(params, before, device):
    """The module's result for the card whose state is ``before``: what it changes (in check mode, would change)
    and the reset each changed flag needs; after a change, the state it writes and reads back (``wanted_state``)."""
    want = wanted_state(params, before)
    changed_flags = [flag for flag in FLAGS if before[flag] != want[flag]]
    changed = before != want
    after = want if changed else before
    reset_by = {flag: FLAG_RESETS[flag] for flag in changed_flags}
    return {
        "changed": changed,
        "device": device,
        "level": after["level"],
        "previous_level": before["level"],
        "port_functions": {flag: after[flag] for flag in FLAGS},
        "reset_required": largest(reset_by.values()),
        "reset_required_by": reset_by,
        "diff": make_diff(before, after),
    }


def plan_from_read(read, params):
    """host_restriction's check of ``params`` (its options, validated) from a dpu_info read with the section
    ``privilege``: ``dict(outcome, answered=True)``, or ``{"answered": False, "why": ...}``: then the module must
    read the card itself.

    The module asks ``mlxprivhost`` when it is installed (dpu_info's section is that tool's query, so it was) about
    ``device``, or without it about the only card ``mst status -v`` lists (``only_card``, as the module picks it);
    the read answers when that is the card it queried, and the only card it lists.
    """
    def unanswered(why):
        return {"answered": False, "why": why}

    devices = read.get("devices")
    if not isinstance(devices, list) or len(devices) != 1:
        return unanswered("the read lists %s cards, not one" % (len(devices) if isinstance(devices, list) else "no"))
    card = devices[0]
    section = card.get("privilege")
    if not isinstance(section, dict) or not section.get("available"):
        return unanswered("the read has no privilege section%s" % (
            (": " + section["reason"]) if isinstance(section, dict) and section.get("reason") else ""))
    device = params["device"]
    if not device:
        functions = [{"mst": fn.get("mst"), "pci": fn.get("pci")} for fn in card.get("functions") or []]
        try:
            device = only_card(functions)
        except ToolError as exc:
            return unanswered(exc.msg)
    if device != card.get("mst"):
        return unanswered("the read queried %s, host_restriction would query %s" % (card.get("mst"), device))
    try:
        before = state_of(dict(section, errors=[]), "query host privilege of %s with mlxprivhost" % device)
    except ToolError as exc:
        return unanswered(exc.msg)
    return dict(outcome(params, before, device), answered=True)
