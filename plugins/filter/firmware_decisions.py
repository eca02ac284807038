# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.firmware_decisions``: what the firmware role does after its plans, worked out once.

The role's variables (``roles/firmware/vars/main.yml``) decide which plans run, what is installed, burnt and
written, and the reset plan. Role variables are templated again at each reference, and each task after the plans
refers to several of them, each referring to others: here the same rules run once, in Python, on the role's
inputs and the plans' results, for the task that plans the reset (``roles/firmware/tasks/configure.yml``); the
tasks after it read the answer. The rules must stay those of ``roles/firmware/vars/main.yml`` (the conditions of
``roles/firmware/tasks/plans.yml`` still read those): tests/unit/plugins/filter/test_firmware_decisions_filter.py
compares them.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def _changed(result):
    return bool((result or {}).get("changed", False))


def firmware_decisions(card, nic_image="", nic_version="", bfb_image="", bfb_version="", bfb_host=False,
                       nvconfig=None, mode="", device="", nv_plan=None, bfb_plan=None, nic_plan=None, plan=None,
                       firmware_reset=True, reboot_command=None, power_cycle_method="none",
                       power_cycle_command=None):
    """The role's decisions after its plans: ``plan`` (the reset plan), ``install_bfb``, ``burn_nic``,
    ``write_nv``, ``nv_asked``, ``nic_target`` (None where no NIC firmware is asked) and ``writes`` (this run
    installs, burns, writes or resets: anything but a plan whose reset is ``none``)."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible.module_utils.parsing.convert_bool import boolean
    from ansible_collections.bluefleet.dpu.plugins.filter.reset_plan import reset_plan

    card = card or {}
    if not isinstance(card, dict):
        raise AnsibleFilterError("firmware_decisions: the card read must be a dict, got %r" % (card,))
    firmware = card.get("firmware") or {}
    # What is asked (vars/main.yml: __firmware_bfb_wanted, __firmware_nic_wanted, __firmware_nv_asked).
    bfb_wanted = len(bfb_image or "") > 0 and bool(bfb_host)
    nic_wanted = len(nic_image or "") > 0
    nv_asked = len(nvconfig or {}) > 0 or len(mode or "") > 0
    # __firmware_nv_planned: the NV plan ran in this run (its result is read only then).
    nv_planned = nv_asked or (len(device or "") == 0 and (nic_wanted or bfb_wanted))
    # __firmware_device: the card every step after the NV plan works on.
    card_device = (nv_plan or {}).get("device") if nv_planned else device
    # __firmware_nic_from_read: the caller's read answers the NIC burn plan (the NIC plan did not run).
    nic_from_read = (nic_wanted and len(nic_version or "") > 0 and bool(firmware.get("flashed"))
                     and bool(firmware.get("running")))
    # __firmware_nic_target: the NIC firmware the card must run after this run.
    if nic_wanted and not nic_from_read:
        nic_target = (nic_plan or {}).get("image", {}).get("version")
    else:
        nic_target = nic_version
    # __firmware_nic_burn: the flash holds another version (the read), or the plan says so.
    if not nic_wanted:
        nic_burn = False
    elif nic_from_read:
        nic_burn = firmware.get("flashed") != nic_version
    else:
        nic_burn = _changed(nic_plan)
    install_bfb = bfb_wanted and _changed(bfb_plan)
    # __firmware_plan_from_read: the read holds what fw_reset would read, for this card, and no BMC power cycle.
    plan_from_read = (all(boolean((card.get(section) or {}).get("available", False), strict=False)
                          for section in ("firmware", "nvconfig", "reset_levels"))
                      and (card.get("side") or "") in ("host", "dpu")
                      and len(card_device or "") > 0
                      and card_device in (card.get("mst") or "", card.get("pci") or "")
                      and power_cycle_method in ("none", "pause", "command"))
    if plan_from_read:
        # __firmware_changes: the NV plan's, the BFB install's and the NIC burn's.
        changes = list((nv_plan or {}).get("changes") or []) if nv_planned else []
        if install_bfb:
            changes.append({"kind": "bfb_nic_firmware" if bfb_plan.get("reset_required") == "power_cycle"
                            else "bfb_os", "name": "bfb",
                            "before": bfb_plan["versions"]["before"]["release"], "after": bfb_version})
        if nic_burn:
            changes.append({"kind": "nic_firmware", "name": "nic_firmware",
                            "before": (card if nic_from_read else nic_plan)["firmware"]["running"],
                            "after": nic_target})
        plan = reset_plan(card, changes=changes, device=card_device, firmware_reset=firmware_reset,
                          reboot_command=reboot_command, power_cycle_method=power_cycle_method,
                          power_cycle_command=power_cycle_command)
    elif not plan:
        raise AnsibleFilterError("firmware_decisions: the read of the card does not answer the reset plan and "
                                 "fw_reset's plan is missing (give it as plan)")
    write_nv = nv_planned and _changed(nv_plan)
    return {
        "plan": plan,
        "install_bfb": install_bfb,
        "burn_nic": nic_burn,
        "write_nv": write_nv,
        "nv_asked": nv_asked,
        "nic_target": nic_target if nic_wanted else None,
        "writes": bool(install_bfb or nic_burn or write_nv or (plan or {}).get("reset") != "none"),
    }


class FilterModule:
    def filters(self):
        return {"firmware_decisions": firmware_decisions}
