# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bmc_reset
short_description: Reset a BlueField-3's BMC, Arm system, ERoT or whole card through the BMC (Redfish)
version_added: 0.2.0
description:
  - Runs one Redfish reset action of the DPU's BMC and, by default, waits until the reset is over.
  - V(bmc) - C(Manager.Reset) (the BMC is away while it restarts; a staged BMC image runs afterwards).
    V(system) - C(ComputerSystem.Reset) of the DPU's Arm (the NIC firmware is not reloaded in DPU mode).
    V(erot) - C(Chassis.Reset) of Bluefield_ERoT (a staged ERoT image runs afterwards).
    V(card) - C(Chassis.Reset PowerCycle) of Card1 (the whole card, so staged NIC firmware runs afterwards;
    this is the C(power_cycle) of the bluefleet reset planner for a BlueField in DPU mode).
  - A reset always changes the device's state; the module reports changed, and in check mode sends nothing.
author:
  - bluefleet developers (!UNKNOWN)
extends_documentation_fragment:
  - bluefleet.dpu.bmc
options:
  target:
    description: What to reset.
    type: str
    required: true
    choices: [bmc, system, erot, card]
  reset_type:
    description:
      - Redfish ResetType. Defaults - V(GracefulRestart) for bmc, system and erot; V(PowerCycle) for card.
      - Must be one the BMC lists in the target's ResetActionInfo.
    type: str
  wait:
    description:
      - Wait until the reset is over - the BMC answers again (bmc), the Arm OS is running
        (system, card - BootProgress C(OsIsRunning)).
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait.
    type: int
    default: 900
  poll_interval:
    description: Seconds between polls while waiting.
    type: int
    default: 10
attributes:
  check_mode:
    description: Says which action it would run; sends nothing.
    support: full
  diff_mode:
    description: No diff.
    support: none
  platform:
    description: Any host that reaches the BMC over HTTPS (usually the controller).
    platforms: posix
    support: full
seealso:
  - module: bluefleet.dpu.bmc_firmware
  - module: bluefleet.dpu.bmc_info
"""

EXAMPLES = r"""
- name: Power-cycle the card so staged NIC firmware runs
  bluefleet.dpu.bmc_reset:
    bmc: "{{ bluefleet_bmc }}"
    target: card
  delegate_to: localhost
"""

RETURN = r"""
changed:
  description: True when the reset was sent (or, in check mode, would be sent).
  returned: always
  type: bool
action:
  description: The action URI and ResetType used.
  returned: always
  type: dict
  sample: {"uri": "/redfish/v1/Chassis/Card1/Actions/Chassis.Reset", "ResetType": "PowerCycle"}
waited:
  description: Seconds spent waiting for the reset to finish (0 when not waiting or in check mode).
  returned: always
  type: float
boot_progress:
  description: BootProgress of the DPU system at the end (system and card targets).
  returned: always
  type: dict
requests:
  description: The Redfish requests made, C(METHOD URI).
  returned: always
  type: list
  elements: str
cmd:
  description: The Redfish requests made, C(METHOD URI) in order (no bodies, no credentials), as RV(requests).
  returned: always
  type: list
  elements: str
tool_version:
  description: The BMC firmware that answered (Manager C(FirmwareVersion)), or null when the BMC did not say.
  returned: success
  type: str
  sample: BF-24.10-10
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _bmc as rules
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._redfish import RedfishError, bmc_spec, client_from

TARGETS = {
    "bmc": (rules.MANAGER, "Manager.Reset", "GracefulRestart"),
    "system": (rules.SYSTEM, "ComputerSystem.Reset", "GracefulRestart"),
    "erot": (rules.EROT, "Chassis.Reset", "GracefulRestart"),
    "card": (rules.CARD, "Chassis.Reset", "PowerCycle"),
}


def allowed_types(client, resource_uri):
    info = client.get(resource_uri + "/ResetActionInfo")
    for param in info.get("Parameters") or []:
        if param.get("Name") == "ResetType":
            return list(param.get("AllowableValues") or [])
    return []


def main():
    module = AnsibleModule(
        argument_spec=dict(
            bmc=bmc_spec(),
            target=dict(type="str", required=True, choices=sorted(TARGETS)),
            reset_type=dict(type="str"),
            wait=dict(type="bool", default=True),
            wait_timeout=dict(type="int", default=900),
            poll_interval=dict(type="int", default=10),
        ),
        supports_check_mode=True,
    )
    p = module.params
    client = client_from(p["bmc"])
    resource, action, default = TARGETS[p["target"]]
    reset_type = p["reset_type"] or default
    uri = resource + "/Actions/" + action
    result = {"action": {"uri": uri, "ResetType": reset_type}, "waited": 0.0, "boot_progress": {}}
    try:
        allowed = allowed_types(client, resource)
        # read before the reset: a BMC that restarts is away for minutes
        result["tool_version"] = client.get(rules.MANAGER).get("FirmwareVersion")
        if allowed and reset_type not in allowed:
            module.fail_json(msg="reset %s via BMC %s refused: ResetType %s is not one the BMC offers there (%s); "
                                 "set reset_type to one of them"
                                 % (p["target"], p["bmc"]["address"], reset_type, ", ".join(allowed)),
                             cmd=client.requests, requests=client.requests, **result)
        if module.check_mode:
            module.exit_json(changed=True, cmd=client.requests, requests=client.requests, **result)
        start = time.monotonic()
        client.post(uri, {"ResetType": reset_type})
        if p["wait"]:
            if p["target"] == "bmc":
                time.sleep(min(p["poll_interval"], 5))
                _value, timed_out = client.wait_until(lambda: client.get(rules.MANAGER), p["wait_timeout"],
                                                      p["poll_interval"], "BMC back")
            elif p["target"] in ("system", "card"):
                def up():
                    progress = client.get(rules.SYSTEM).get("BootProgress") or {}
                    return progress if progress.get("OemLastState") == "OsIsRunning" else None
                _value, timed_out = client.wait_until(up, p["wait_timeout"], p["poll_interval"], "Arm OS up")
            else:
                timed_out = False
            result["waited"] = round(time.monotonic() - start, 1)
            if timed_out:
                module.fail_json(msg="reset %s via BMC %s: not back after %d s; check the BMC's console or raise "
                                     "wait_timeout" % (p["target"], p["bmc"]["address"], p["wait_timeout"]),
                                 cmd=client.requests, requests=client.requests, **result)
        if p["target"] in ("system", "card"):
            result["boot_progress"] = client.get(rules.SYSTEM).get("BootProgress") or {}
    except RedfishError as exc:
        module.fail_json(msg="reset %s via BMC %s failed: %s" % (p["target"], p["bmc"]["address"], exc.msg),
                         cmd=client.requests, requests=client.requests, **result)
    module.exit_json(changed=True, cmd=client.requests, requests=client.requests, **result)


if __name__ == "__main__":
    main()
