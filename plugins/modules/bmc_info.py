# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bmc_info
short_description: Read a BlueField-3 BMC over Redfish - firmware inventory, system, manager, rshim, mode
version_added: 0.2.0
description:
  - Reads the BMC's Redfish service out of band, without the host or the DPU's Arm OS - the firmware
    inventory (BMC, ERoT, NIC firmware, ATF, UEFI, BSP, DPU OS ...), the DPU system (power state, boot
    progress), the BMC manager (firmware version), who owns the rshim, the DPU mode, the ERoT background
    copy status and the update tasks.
  - Also returns the checks the BMC update path needs (RV(preflight)), each with the fix when it fails.
author:
  - bluefleet developers (!UNKNOWN)
extends_documentation_fragment:
  - bluefleet.dpu.bmc
attributes:
  check_mode:
    description: Read-only; runs the same in check mode.
    support: full
  diff_mode:
    description: Reports no diff; it changes nothing.
    support: none
  platform:
    description: Any host that reaches the BMC over HTTPS (usually the controller).
    platforms: posix
    support: full
seealso:
  - module: bluefleet.dpu.bmc_firmware
  - module: bluefleet.dpu.bmc_bfb
  - module: bluefleet.dpu.bmc_reset
"""

EXAMPLES = r"""
- name: Read the DPU's BMC
  bluefleet.dpu.bmc_info:
    bmc: "{{ bluefleet_bmc }}"
  delegate_to: localhost
  register: bmc

- name: Show the versions
  ansible.builtin.debug:
    var: bmc.firmware
"""

RETURN = r"""
changed:
  description: Always false (the module only reads).
  returned: always
  type: bool
firmware:
  description: Version of every FirmwareInventory member, by member id.
  returned: always
  type: dict
  sample: {"BMC_Firmware": "BF-24.10-10", "DPU_NIC": "32.43.1008"}
bmc_version:
  description: The BMC firmware version (Manager FirmwareVersion).
  returned: always
  type: str
  sample: BF-24.10-10
power_state:
  description: PowerState of the DPU system (Systems/Bluefield).
  returned: always
  type: str
  sample: "On"
boot_progress:
  description: BootProgress of the DPU system; C(OemLastState) is C(OsIsRunning) once the Arm OS is up.
  returned: always
  type: dict
  sample: {"LastState": "OEM", "OemLastState": "OsIsRunning"}
bmc_rshim:
  description: True when the BMC owns the DPU's rshim (BmcRShimEnabled).
  returned: always
  type: bool
host_rshim:
  description: HostRshim of the system's Oem/Nvidia resource (absent on BF-23.10 BMCs, then null).
  returned: always
  type: str
mode:
  description: DPU mode as the BMC reports it (C(DpuMode), C(NicMode); empty on BF-23.10 BMCs).
  returned: always
  type: str
erot_background_copy:
  description: BackgroundCopyStatus of the ERoT (C(Completed) when an update may start).
  returned: always
  type: str
transfer_protocols:
  description: Protocols SimpleUpdate accepts (BF-23.10 - SCP only; BF-24.x - SCP, HTTP, HTTPS).
  returned: always
  type: list
  elements: str
tasks:
  description: The BMC's tasks, each with id, state, status and percent.
  returned: always
  type: list
  elements: dict
preflight:
  description: Checks the BMC update path needs; each C(check), C(ok), C(detail) and C(fix).
  returned: always
  type: list
  elements: dict
requests:
  description: The Redfish requests made, C(METHOD URI) (no bodies, no credentials).
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _bmc as rules
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._redfish import RedfishError, bmc_spec, client_from


def read(client):
    inventory = client.get(rules.FW_INV)
    firmware = {}
    for member in inventory.get("Members") or []:
        body = client.get(member["@odata.id"])
        firmware[body.get("Id") or rules.member_id(member["@odata.id"])] = body.get("Version")
    system = client.get(rules.SYSTEM)
    manager = client.get(rules.MANAGER)
    manager_oem = client.get(rules.MANAGER + "/Oem/Nvidia")
    system_oem = client.get(rules.SYSTEM + "/Oem/Nvidia")
    erot = client.get(rules.EROT)
    update_service = client.get(rules.V1 + "/UpdateService")
    tasks = []
    for member in client.get(rules.V1 + "/TaskService/Tasks").get("Members") or []:
        t = client.get(member["@odata.id"])
        tasks.append({"id": t.get("Id"), "state": t.get("TaskState"), "status": t.get("TaskStatus"),
                      "percent": t.get("PercentComplete"), "target": (t.get("Payload") or {}).get("TargetUri")})
    return {
        "firmware": firmware,
        "bmc_version": manager.get("FirmwareVersion"),
        "power_state": system.get("PowerState"),
        "boot_progress": system.get("BootProgress") or {},
        "bmc_rshim": bool((manager_oem.get("BmcRShim") or {}).get("BmcRShimEnabled")),
        "host_rshim": system_oem.get("HostRshim"),
        "mode": system_oem.get("Mode"),
        "erot_background_copy": ((erot.get("Oem") or {}).get("Nvidia") or {}).get("BackgroundCopyStatus"),
        "transfer_protocols": rules.transfer_protocols(update_service),
        "tasks": tasks,
        "preflight": rules.preflight(update_service, erot, manager_oem, system_oem, manager, want_bfb=True),
    }


def main():
    module = AnsibleModule(argument_spec=dict(bmc=bmc_spec()), supports_check_mode=True)
    client = client_from(module.params["bmc"])
    try:
        facts = read(client)
    except RedfishError as exc:
        module.fail_json(msg="read BMC %s failed: %s" % (module.params["bmc"]["address"], exc.msg),
                         cmd=client.requests, requests=client.requests)
    module.exit_json(changed=False, cmd=client.requests, requests=client.requests, tool_version=facts["bmc_version"],
                     **facts)


if __name__ == "__main__":
    main()
