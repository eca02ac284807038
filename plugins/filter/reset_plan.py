# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.reset_plan``: the reset plan ``bluefleet.dpu.fw_reset`` makes in check mode, worked out on
the controller from a read of the card that ``bluefleet.dpu.dpu_info`` made (sections ``firmware``, ``nvconfig``
and ``reset_levels``), so that a playbook that has just read the card needs no second module run to plan.

The rules are fw_reset's own (``module_utils.domain._reset_plan.card_plan``, the same function the module calls);
the read is turned into what fw_reset reads (``state_from_read``: the pending NV parameters, the flashed and running
firmware, the card's mode, whether mlxfwreset level 3 is supported). A reset that cannot be done with the options
fails the same way, with the same message.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

METHODS = ("none", "command", "pause")


def reset_plan(card, changes=None, device="", side="", firmware_reset=True, reboot_command=None,
               power_cycle_method="none", power_cycle_command=None):
    """fw_reset's check-mode plan keys for ``card`` (one entry of dpu_info's ``devices``) and ``changes``."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._reset_plan import (
        PlanError,
        card_plan,
        state_from_read,
    )
    read = state_from_read(card)
    if read is None:
        raise AnsibleFilterError("reset_plan: the card read lacks a section fw_reset plans with: read it with "
                                 "bluefleet.dpu.dpu_info filter [firmware, nvconfig, reset_levels] (each available), "
                                 "or plan with bluefleet.dpu.fw_reset in check mode")
    side = side or card.get("side") or ""
    if side not in ("host", "dpu"):
        raise AnsibleFilterError("reset_plan: side must be host or dpu (dpu_info's side), got %r" % (side,))
    if power_cycle_method not in METHODS:
        raise AnsibleFilterError("reset_plan: power_cycle_method must be one of %s, got %r (ipmitool and redfish: "
                                 "plan with bluefleet.dpu.fw_reset, which checks the BMC settings)"
                                 % (", ".join(METHODS), power_cycle_method))
    if power_cycle_method == "command" and not power_cycle_command:
        raise AnsibleFilterError("power_cycle_method is command but all of the following are missing: "
                                 "power_cycle_command")
    if not isinstance(changes or [], list):
        raise AnsibleFilterError("reset_plan: changes must be a list of changes, got %r" % (changes,))
    state, level3 = read
    options = {"firmware_reset": bool(firmware_reset), "reboot_command": list(reboot_command or []),
               "power_cycle_method": power_cycle_method}
    try:
        return card_plan(device or card.get("mst") or "", side, state, level3, options, changes or [])
    except PlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"reset_plan": reset_plan}
