# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bmc_firmware
short_description: Push a BMC, ERoT or NIC firmware image to a BlueField-3 through its BMC (Redfish)
version_added: 0.2.0
description:
  - Out-of-band firmware update, as NVIDIA's dpu-update performs it - read the component's version in
    the BMC's FirmwareInventory, check that the ERoT background copy is done, push the image with a
    multipart POST (C(UpdateParameters) with C(ForceUpdate), C(UpdateFile)) to the BMC's
    C(MultipartHttpPushUri), poll the Task until it ends and, when asked, run the reset that activates
    the image and read the version again.
  - A task whose messages say C(Component image is identical) means the BMC already runs that image -
    no change. Any other failed task fails the module with the task's messages verbatim.
  - Resumable - when the BMC already runs a push task (a previous run timed out), the module waits for
    that task instead of pushing again.
  - Activation resets - C(bmc) Manager.Reset GracefulRestart (the BMC is away about 2 minutes; the module
    waits for it); C(erot) Chassis.Reset of Bluefield_ERoT; C(nic) the card's power cycle
    (Chassis/Card1 PowerCycle, the reset the bluefleet reset planner names for the firmware of a
    BlueField in DPU mode when no mlxfwreset is available). RV(reset_required) names what is still needed.
author:
  - bluefleet developers (!UNKNOWN)
extends_documentation_fragment:
  - bluefleet.dpu.bmc
options:
  component:
    description: What the image is for.
    type: str
    required: true
    choices: [bmc, erot, nic]
  image:
    description:
      - The firmware package (C(.fwpkg) for BMC/ERoT, the NIC firmware binary) on the machine that runs the module.
    type: path
    required: true
  version:
    description:
      - Version the image carries. When given and equal to the running (or, for C(nic), the flashed)
        version, nothing is sent; check mode then knows what would change.
      - Without it the BMC decides (a pushed identical image is reported as no change).
    type: str
  force:
    description: Send C(ForceUpdate=true) - the BMC installs the image even when it is identical.
    type: bool
    default: false
  activate:
    description:
      - Run the activation reset after a successful push. Defaults to V(true) for C(bmc) and C(erot) and
        V(false) for C(nic) (a power cycle of the card stops the DPU's traffic).
    type: bool
  task_timeout:
    description: Seconds to wait for the BMC's task (dpu-update waits 20 minutes for a BMC image).
    type: int
    default: 1200
  poll_interval:
    description: Seconds between polls of the task.
    type: int
    default: 10
attributes:
  check_mode:
    description: Reads the BMC and says what would change; pushes and resets nothing.
    support: full
  diff_mode:
    description: Shows the component's version before and after.
    support: full
  platform:
    description: Any host that reaches the BMC over HTTPS (usually the controller).
    platforms: posix
    support: full
seealso:
  - module: bluefleet.dpu.bmc_info
  - module: bluefleet.dpu.bmc_reset
"""

EXAMPLES = r"""
- name: Update the BMC firmware of a DPU out of band
  bluefleet.dpu.bmc_firmware:
    bmc: "{{ bluefleet_bmc }}"
    component: bmc
    image: /srv/firmware/bf3-bmc-24.10-33.fwpkg
    version: BF-24.10-33
  delegate_to: localhost

- name: Stage NIC firmware, activate later with a card power cycle
  bluefleet.dpu.bmc_firmware:
    bmc: "{{ bluefleet_bmc }}"
    component: nic
    image: /srv/firmware/fw-BlueField-3-rel-32_43_1014.bin
    version: 32.43.1014
  delegate_to: localhost
  register: nicfw
"""

RETURN = r"""
changed:
  description: True when the BMC installed (or, in check mode, would install) the image.
  returned: always
  type: bool
component:
  description: The component, and its FirmwareInventory member.
  returned: always
  type: dict
  sample: {"name": "bmc", "member": "BMC_Firmware"}
before:
  description: Version the BMC reported before.
  returned: always
  type: str
  sample: BF-24.10-10
after:
  description: Version the BMC reports after (the running version; for a staged image before its reset, the old one).
  returned: always
  type: str
outcome:
  description: C(installed), C(identical), C(skipped) (O(version) already running) or C(would_install) (check mode).
  returned: always
  type: str
task:
  description: The BMC task (id, state, status, percent, messages) when an image was pushed.
  returned: when an image was pushed or a running push was resumed
  type: dict
activated:
  description: The activation reset run, or null.
  returned: always
  type: str
reset_required:
  description: Reset still needed before the new image runs (C(none), C(bmc_restart), C(erot_restart), C(power_cycle)).
  returned: always
  type: str
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

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _bmc as rules
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._redfish import RedfishError, bmc_spec, client_from
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import without_unasked_diff

PUSH_ACTIVE = ("/redfish/v1/UpdateService/update-multipart", "/redfish/v1/UpdateService/update")


def bmc_firmware_version(client):
    """The BMC's firmware version (the Redfish service the module drives), or None when it does not answer."""
    try:
        return client.get(rules.MANAGER).get("FirmwareVersion")
    except RedfishError:
        return None


class Failure(Exception):
    def __init__(self, msg, **extra):
        super().__init__(msg)
        self.msg = msg
        self.extra = extra


def member_version(client, member):
    return client.get(rules.FW_INV + "/" + member).get("Version")


def running_push(client):
    """The push task the BMC is running now (a previous run that timed out), or None."""
    members = client.get(rules.V1 + "/TaskService/Tasks").get("Members") or []
    for member in reversed(members):
        t = client.get(member["@odata.id"])
        if t.get("TaskState") in rules.RUNNING_STATES and \
                (t.get("Payload") or {}).get("TargetUri") in PUSH_ACTIVE:
            return t
    return None


def summary(task):
    return {"id": task.get("Id"), "state": task.get("TaskState"), "status": task.get("TaskStatus"),
            "percent": task.get("PercentComplete"), "messages": rules.task_messages(task)}


def run(module, client):
    p = module.params
    bmc = p["bmc"]["address"]
    component, member = p["component"], rules.COMPONENTS[p["component"]]
    activate = p["activate"] if p["activate"] is not None else component in ("bmc", "erot")
    result = {"component": {"name": component, "member": member}, "task": None, "activated": None,
              "reset_required": "none"}
    before = member_version(client, member)
    result.update(before=before, after=before)
    if not os.path.isfile(p["image"]):
        raise Failure("push %s image to BMC %s failed: image %s does not exist; give the path of the firmware package "
                      "on the machine that runs the task (delegate_to: localhost: the controller)"
                      % (component, bmc, p["image"]))
    resumed = running_push(client)
    if resumed is None and p["version"] and p["version"] == before and not p["force"]:
        result.update(changed=False, outcome="skipped")
        return result
    if module.check_mode:
        result.update(changed=resumed is None, outcome="would_install" if resumed is None else "resume")
        result["after"] = p["version"] or "(version of %s)" % os.path.basename(p["image"])
        result["reset_required"] = rules.activation(component)[0]
        return result
    if resumed is None:
        update_service = client.get(rules.V1 + "/UpdateService")
        erot = client.get(rules.EROT)
        checks = [c for c in rules.preflight(update_service, erot, {}, {}, {}) if not c["ok"]]
        if checks:
            raise Failure("push %s image to BMC %s refused before sending: %s" % (
                component, bmc, "; ".join("%s (%s): %s" % (c["check"], c["detail"], c["fix"]) for c in checks)))
        uri = update_service.get("MultipartHttpPushUri")
        if not uri:
            raise Failure("push %s image to BMC %s failed: the UpdateService has no MultipartHttpPushUri; update the "
                          "BMC firmware first" % (component, bmc))
        with open(p["image"], "rb") as fh:
            content = fh.read()
        # Targets (UpdateParameters, Redfish spec) names the member: the BMC aborts an image for another one.
        parameters = {"ForceUpdate": bool(p["force"]), "Targets": [rules.FW_INV + "/" + member]}
        status, body, _headers = client.post_multipart(uri, parameters,
                                                       os.path.basename(p["image"]), content,
                                                       timeout=max(p["bmc"]["timeout"], 300))
        task_uri = (body or {}).get("@odata.id")
        if status not in (100, 200, 202) or not task_uri:
            raise Failure("push %s image to BMC %s failed: HTTP %s without a task (%s)"
                          % (component, bmc, status, body))
    else:
        task_uri = resumed["@odata.id"]
    task, timed_out = client.wait_task(task_uri, p["task_timeout"], p["poll_interval"])
    if task is not None:
        result["task"] = summary(task)
    if timed_out:
        raise Failure("push %s image to BMC %s: task %s still %s at %s%% after %d s; re-run the task to resume "
                      "waiting for it (it is not pushed again), or raise task_timeout"
                      % (component, bmc, task_uri, (task or {}).get("TaskState"),
                         (task or {}).get("PercentComplete"), p["task_timeout"]), **result)
    outcome = rules.task_outcome(task)
    if outcome == "identical":
        result.update(changed=False, outcome="identical")
        return result
    if outcome != "ok":
        fix = rules.task_fix(task, "%s firmware" % component, "image")
        raise Failure("push %s image %s to BMC %s failed: task %s ended %s/%s: %s%s" % (
            component, os.path.basename(p["image"]), bmc, task.get("Id"), task.get("TaskState"),
            task.get("TaskStatus"), " | ".join(rules.task_messages(task)), ". Fix: %s" % fix if fix else ""),
            **result)
    result.update(changed=True, outcome="installed")
    reset, action_uri, action_body = rules.activation(component)
    result["reset_required"] = reset
    if activate:
        client.post(action_uri, action_body)
        result["activated"] = reset
        if component == "bmc":
            def back():
                version = client.get(rules.MANAGER).get("FirmwareVersion")
                return version if version != before or (p["version"] and version == p["version"]) else None
            client.wait_until(back, 300, max(2, p["poll_interval"] // 2), "BMC restart")
        result["reset_required"] = "none"
    result["after"] = member_version(client, member)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            bmc=bmc_spec(),
            component=dict(type="str", required=True, choices=sorted(rules.COMPONENTS.keys() - {"uefi"})),
            image=dict(type="path", required=True),
            version=dict(type="str"),
            force=dict(type="bool", default=False),
            activate=dict(type="bool"),
            task_timeout=dict(type="int", default=1200),
            poll_interval=dict(type="int", default=10),
        ),
        supports_check_mode=True,
    )
    client = client_from(module.params["bmc"])
    try:
        result = run(module, client)
    except Failure as exc:
        module.fail_json(msg=exc.msg, cmd=client.requests, requests=client.requests, **exc.extra)
    except RedfishError as exc:
        module.fail_json(msg="%s firmware via BMC %s failed: %s"
                         % (module.params["component"], module.params["bmc"]["address"], exc.msg),
                         cmd=client.requests, requests=client.requests)
    result["tool_version"] = bmc_firmware_version(client)
    result["diff"] = {"before": {"version": result["before"]}, "after": {"version": result["after"]}}
    module.exit_json(cmd=client.requests, requests=client.requests, **without_unasked_diff(module, result))


if __name__ == "__main__":
    main()
