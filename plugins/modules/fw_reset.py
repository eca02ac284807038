# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: fw_reset
short_description: Apply the smallest reset that activates a card's pending firmware and configuration
version_added: 0.1.0
description:
  - Finds what is pending on one BlueField DPU or ConnectX NIC - mlxconfig parameters whose Next Boot
    differs from Current (C(mlxconfig -d DEV -e q)) and a flashed firmware that is not the running one
    (C(flint -d DEV q)) - and chooses, with the bluefleet reset planner, the smallest single reset that
    activates all of it.
  - C(mlxfwreset) level 3 when C(mlxfwreset -d DEV q) reports it Supported; otherwise a warm reboot
    (O(reboot_command)) where a reboot reloads the firmware; otherwise a power cycle through
    O(power_cycle_method). A BlueField in DPU mode is not reloaded by a reboot of either side; a
    BlueField in NIC mode is rebooted instead of firmware-reset (it would fall back to DPU mode).
  - Applies the reset once, then reads the card again and fails unless Current equals Next Boot and the
    running firmware is the flashed one. A reboot or power cycle by the node's own command (O(reboot_command),
    O(power_cycle_command)) and a level-3 reset run in a BlueField's Arm OS restart the node that runs the module; the
    action plugin then waits for the node (O(reconnect_delay)) and reads the card again in check mode. With a
    baseboard management controller (O(power_cycle_method) C(ipmitool) or C(redfish)) the power cycle happens
    after the call returns, so the module cannot see it; run the module again once the node is back (the
    C(bluefleet.dpu.firmware) role does).
  - Nothing pending, no change. In check mode it reports the reset it would apply and the plan.
author:
  - bluefleet developers (!UNKNOWN)
options:
  device:
    description:
      - The card (C(-d) of the tools), an mst device or a PCI address. When omitted, the only card
        C(mst status -v) lists (MFT only; with Debian's mstflint, which has no C(mst), set it).
      - With mstflint's tools (C(mstconfig), C(mstflint), C(mstfwreset)), used when MFT's are not on C(PATH), a
        PCI address (C(0000:03:00.0)); an MST device file is refused before anything runs.
    type: str
  changes:
    description:
      - Changes that another task would make, for the plan in check mode only (in check mode they are
        not written, so the card does not show them yet). Give the RV(bluefleet.dpu.nvconfig#module:changes)
        of M(bluefleet.dpu.nvconfig) run in check mode; an entry without C(kind) is an mlxconfig change.
      - Ignored outside check mode; the card itself says what is pending then.
    type: list
    elements: dict
    default: []
  firmware_reset:
    description: Allow C(mlxfwreset) level 3. When false the module goes straight to a reboot or power cycle.
    type: bool
    default: true
  reboot_command:
    description:
      - argv that warm-reboots this node when the plan needs a warm reboot, e.g. C([systemctl, reboot]).
        When not set and a warm reboot is needed, the module fails and says so.
    type: list
    elements: str
  power_cycle_method:
    description:
      - How a power cycle of the server is done. C(none) - not available, the module fails naming what is
        pending and why a power cycle is needed (in check mode too, so a plan shows it before anything is
        written). C(command) - run O(power_cycle_command).
        C(ipmitool) - C(ipmitool chassis power cycle) against O(ipmi). C(redfish) - a
        C(ComputerSystem.Reset) POST to O(redfish). C(pause) - a person does it; the module fails with what
        to do unless it was done already (the C(bluefleet.dpu.firmware) role pauses for the person first).
    type: str
    choices: [none, command, ipmitool, redfish, pause]
    default: none
  power_cycle_command:
    description:
      - argv that power-cycles this node, for O(power_cycle_method=command) (the twin - C([dpusim, power-cycle])).
    type: list
    elements: str
  ipmi:
    description: The server's BMC for O(power_cycle_method=ipmitool). The password goes to C(ipmitool) through
      C(IPMI_PASSWORD) (C(-E)), never on the command line.
    type: dict
    suboptions:
      host:
        description: BMC address.
        type: str
        required: true
      user:
        description: BMC user.
        type: str
        required: true
      password:
        description: BMC password.
        type: str
        required: true
      interface:
        description: ipmitool interface (C(-I)).
        type: str
        default: lanplus
      port:
        description: Remote RMCP port (C(-p)).
        type: int
  redfish:
    description: The server's BMC for O(power_cycle_method=redfish).
    type: dict
    suboptions:
      host:
        description: BMC address, optionally with C(:port).
        type: str
        required: true
      user:
        description: BMC user.
        type: str
        required: true
      password:
        description: BMC password.
        type: str
        required: true
      system_id:
        description: Member of C(/redfish/v1/Systems) to reset.
        type: str
        required: true
      reset_type:
        description: C(ResetType) of the action.
        type: str
        choices: [PowerCycle, ForceRestart]
        default: PowerCycle
      validate_certs:
        description: Check the BMC's TLS certificate.
        type: bool
        default: true
  verify:
    description: After a reset run on the node (mlxfwreset, O(reboot_command), O(power_cycle_command)), read
      the card again and fail if anything is still pending.
    type: bool
    default: true
  timeout:
    description: Seconds each command (and the Redfish call) may run.
    type: int
    default: 600
  reconnect_delay:
    description:
      - Where the reset restarts the node that runs the module (the session ends under a level-3 C(mlxfwreset) run
        in a BlueField's Arm OS, a BlueField system reboot; the node's own O(reboot_command) or
        O(power_cycle_command) returns before it goes down), the seconds before the first try to reach the node
        again. Then the card is read in check mode and the task
        fails unless nothing is pending (RV(restarted)).
      - Used by the action plugin on the controller; the module on the node ignores it.
    type: int
    default: 60
  reconnect_timeout:
    description: After O(reconnect_delay), the seconds to go on trying to reach the node before the task fails.
    type: int
    default: 1800
  reconnect_sleep:
    description: Seconds between two tries to reach the node after O(reconnect_delay).
    type: int
    default: 5
  reconnect_read:
    description:
      - Where the node restarted under the reset, the read once it answers is C(bluefleet.dpu.dpu_info)'s, with the
        card's firmware and NV configuration and these sections of it, in one module run; they are returned under
        their own keys (RV(dpu_os), RV(rdma_links)), so that a check after the reset (the upgrade's health gate) needs
        no read of its own. What is pending is then the card's C(pending_reset) as C(dpu_info) reads it. Empty, the
        module itself reads the card in check mode.
      - Used by the action plugin on the controller; the module on the node ignores it.
    type: list
    elements: str
    choices: [dpu_os, rdma_links]
    default: []
extends_documentation_fragment:
  - bluefleet.dpu.options.side
attributes:
  check_mode:
    description: Reads the card and reports the reset it would apply, with the plan; resets nothing.
    support: full
  diff_mode:
    description: Pending parameters and firmware before and after.
    support: full
  platform:
    description: Linux GPU hosts and BlueField Arm systems with MFT or mstflint installed.
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
seealso:
  - module: bluefleet.dpu.nvconfig
"""

EXAMPLES = r"""
- name: Activate pending configuration and firmware (power cycle through the BMC if needed)
  bluefleet.dpu.fw_reset:
    power_cycle_method: redfish
    redfish:
      host: bmc01.example.com
      user: admin
      password: "{{ vault_bmc_password }}"
      system_id: System.Embedded.1

- name: On the device twin
  bluefleet.dpu.fw_reset:
    power_cycle_method: command
    power_cycle_command: [dpusim, power-cycle]
    reboot_command: [dpusim, reboot]

- name: Plan in check mode, with the changes nvconfig would make
  bluefleet.dpu.fw_reset:
    changes: "{{ nv.changes }}"
  check_mode: true
  register: plan
"""

RETURN = r"""
check_mode_prediction:
  description:
    - Only in check mode. False - the outcome is only known after the module acts, so the resource keys
      show the current state; RV(changed) and the diff say what would change.
  returned: check mode
  type: bool
  sample: false
changed:
  description: True when a reset was applied (or, in check mode, would be).
  returned: always
  type: bool
device:
  description: The C(-d) argument used.
  returned: always
  type: str
side:
  description: C(host) or C(dpu).
  returned: always
  type: str
reset:
  description: The reset applied (or that would be) - C(none), C(firmware_reset), C(warm_reboot) or C(power_cycle).
  returned: always
  type: str
  sample: firmware_reset
reset_required:
  description: The reset class the pending changes need, before this node's context (see RV(note)).
  returned: always
  type: str
note:
  description: Why RV(reset) differs from RV(reset_required), empty when it does not.
  returned: always
  type: str
disruption:
  description: What RV(reset) does to the node, in words.
  returned: always
  type: str
method:
  description: How RV(reset) is or would be done - C(mlxfwreset), C(reboot_command), or the power-cycle method.
  returned: always
  type: str
plan:
  description: The plan as lines (device, changes with the reset each needs, why, expected disruption).
  returned: always
  type: list
  elements: str
changes:
  description: The changes planned for, each with C(reset_required) and C(reason).
  returned: always
  type: list
  elements: dict
pending:
  description: What is pending after the run - C(nvconfig) (parameter names) and C(firmware) (bool).
  returned: always
  type: dict
firmware:
  description: C(flashed) and C(running) firmware versions after the run (null when flint is not installed).
  returned: always
  type: dict
firmware_reset_supported:
  description: mlxfwreset level 3 is reported Supported (false when mlxfwreset is missing).
  returned: always
  type: bool
reset_tool:
  description: The program that queries and resets the card, C(mlxfwreset) (MFT) or C(mstfwreset) (mstflint).
  returned: always
  type: str
  sample: mlxfwreset
verified:
  description: The card was read again after the reset and nothing is pending.
  returned: always
  type: bool
restarting:
  description:
    - The reset was the node's own reboot or power cycle by command. The node goes down after the command returns,
      so the module did not read the card again (the action plugin does, once the node answers, and returns
      RV(restarted)).
  returned: when a reset ran
  type: bool
restarted:
  description:
    - The node restarted under the reset (its session ended, or its own command restarted it) and the card was
      read again once the node answered (in check mode, by the same module, or by C(bluefleet.dpu.dpu_info) with
      O(reconnect_read)); the other keys are that read's.
  returned: when the node restarted under the reset
  type: bool
reconnected_after:
  description: Seconds from the restart to the node's answer, O(reconnect_delay) included.
  returned: when the node restarted under the reset
  type: int
devices:
  description: The card as C(bluefleet.dpu.dpu_info) read it after the restart (a list of one), with its firmware and
    NV configuration.
  returned: when the node restarted under the reset and O(reconnect_read) names a section
  type: list
  elements: dict
dpu_os:
  description: C(bluefleet.dpu.dpu_info)'s C(dpu_os) section, read after the restart.
  returned: when the node restarted under the reset and O(reconnect_read) names it
  type: dict
rdma_links:
  description: C(bluefleet.dpu.dpu_info)'s C(rdma_links) section (every RDMA port's state), read after the restart.
  returned: when the node restarted under the reset and O(reconnect_read) names it
  type: dict
diff:
  description: Pending parameters and firmware before and after.
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order (a Redfish call as C([redfish, POST, URL, BODY])).
  returned: always
  type: list
  elements: list
tool_version:
  description: First line of C(mlxfwreset --version) (or C(mstfwreset --version)), or null when the tool does not
    answer it.
  returned: always
  type: str
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._cards import Card
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._reset_plan import (
    PlanError,
    card_plan,
    describe_pending,
    pending_summary,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxfwreset import (
    parse_mlxfwreset_reset,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import device_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner, error_reason
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_module,
    run_tool,
    side_spec,
    timeout_spec,
)


def reset_argv(tool, device, sync1):
    """The level-3 firmware reset command line."""
    return [tool, "-d", device, "-y", "-l", "3"] + (["--sync", "1"] if sync1 else []) + ["r"]


def ipmitool_argv(ipmi):
    argv = ["ipmitool", "-I", ipmi["interface"], "-H", ipmi["host"]]
    if ipmi.get("port"):
        argv += ["-p", str(ipmi["port"])]
    return argv + ["-U", ipmi["user"], "-E", "chassis", "power", "cycle"]


def open_url(url, **kwargs):
    """ansible.module_utils.urls.open_url, imported only for a Redfish power cycle: it brings about 80 modules
    (http, email, ssl) that every other run of this module would import for nothing (AnsiballZ still ships it)."""
    from ansible.module_utils.urls import open_url as real_open_url

    return real_open_url(url, **kwargs)


def redfish_request(redfish):
    """``(url, body)`` of the ComputerSystem.Reset action."""
    url = "https://%s/redfish/v1/Systems/%s/Actions/ComputerSystem.Reset" % (redfish["host"], redfish["system_id"])
    return url, json.dumps({"ResetType": redfish["reset_type"]}, sort_keys=True)


# What apply() returns: the module reads the card again itself (mlxfwreset), the node restarts after the command
# returns (its own reboot or power cycle: a read now would find the card as before), or a BMC acts after the call.
READ_HERE = "read_here"
RESTARTS = "restarts"
AFTER_THE_CALL = "after_the_call"


class Resetter:
    """Applies one reset; every way of doing it is here, in one place."""

    def __init__(self, runner, params, node_card):
        self.runner = runner
        self.p = params
        self.card = node_card

    def apply(self, reset, device, sync1):
        if reset == "firmware_reset":
            tool = self.card.reset_tool
            result = run_tool(self.runner, reset_argv(tool, device, sync1), "reset the firmware of %s with %s"
                              % (device, tool))
            out = parse_output(parse_mlxfwreset_reset, result, "reset the firmware of %s" % device)
            if not out["ok"]:
                raise ToolError("reset the firmware of %s failed: mlxfwreset did not say the firmware was loaded (%s)"
                                % (device, "; ".join(out["errors"] + out["messages"]) or "no result line"), result)
            return READ_HERE
        if reset == "warm_reboot":
            argv = list(self.p["reboot_command"])
            run_tool(self.runner, argv, "reboot the node with %s" % " ".join(argv))
            return RESTARTS
        method = self.p["power_cycle_method"]
        if method == "command":
            run_tool(self.runner, self.p["power_cycle_command"],
                     "power-cycle the server with %s" % " ".join(self.p["power_cycle_command"]))
            return RESTARTS
        if method == "ipmitool":
            environ = dict(self.runner.environ)
            environ["IPMI_PASSWORD"] = self.p["ipmi"]["password"]
            bmc = ToolRunner(timeout=self.runner.timeout, environ=environ)
            result = bmc.run(ipmitool_argv(self.p["ipmi"]))
            self.runner.cmd.extend(bmc.cmd)
            reason = error_reason(result)
            if reason:
                raise ToolError("power-cycle the server through ipmitool failed: %s" % reason, result)
            return AFTER_THE_CALL
        url, body = redfish_request(self.p["redfish"])
        self.runner.cmd.append(["redfish", "POST", url, body])
        try:
            response = open_url(url, method="POST", data=body, headers={"Content-Type": "application/json"},
                                url_username=self.p["redfish"]["user"], url_password=self.p["redfish"]["password"],
                                force_basic_auth=True, validate_certs=self.p["redfish"]["validate_certs"],
                                timeout=self.runner.timeout)
            status = response.getcode()
        except Exception as exc:  # open_url raises HTTPError, URLError, SSLValidationError, socket errors
            raise ToolError("power-cycle the server through Redfish failed: POST %s: %s" % (url, exc)) from exc
        if status not in (200, 202, 204):
            raise ToolError("power-cycle the server through Redfish failed: POST %s answered HTTP %s" % (url, status))
        return AFTER_THE_CALL


def run_reset(runner, params, check_mode):
    card = Card(runner)
    device, side = card.discover(params["device"], params["side"])
    before = card.pending(device)
    level3, sync1 = card.levels(device)
    try:
        out = card_plan(device, side, before, level3, params, params["changes"] if check_mode else [], check_mode)
    except PlanError as exc:
        raise ToolError(str(exc)) from exc
    reset = out["reset"]
    after = before
    predicted = pending_summary(before)
    if reset != "none" and check_mode:
        predicted = {"nvconfig": [], "firmware": False}
    if reset != "none" and not check_mode:
        applied = Resetter(runner, params, card).apply(reset, device, sync1)
        # A reboot or power cycle of this node by its own command: `systemctl reboot` returns before the node goes
        # down, so a read now finds the card as before. The action plugin waits for the node and reads it then.
        out["restarting"] = applied == RESTARTS
        if applied == READ_HERE and params["verify"]:
            after = card.pending(device)
            if pending_summary(after)["nvconfig"] or pending_summary(after)["firmware"]:
                raise ToolError("verify the %s of %s failed: still pending after it: %s; the card may need a bigger "
                                "reset (a power cycle)" % (reset.replace("_", " "), device, describe_pending(after)))
            out["verified"] = True
    out.update(pending=pending_summary(after), firmware=after["firmware"], reset_tool=card.reset_tool,
               diff=make_diff(pending_summary(before), predicted if check_mode else pending_summary(after),
                              "%s pending before" % device, "%s pending after" % device))
    return out


def argument_spec():
    return {
        "device": device_spec(),
        "side": side_spec(),
        "changes": {"type": "list", "elements": "dict", "default": []},
        "firmware_reset": {"type": "bool", "default": True},
        "reboot_command": {"type": "list", "elements": "str"},
        "power_cycle_method": {"type": "str", "choices": ["none", "command", "ipmitool", "redfish", "pause"],
                               "default": "none"},
        "power_cycle_command": {"type": "list", "elements": "str"},
        "ipmi": {"type": "dict", "options": {
            "host": {"type": "str", "required": True},
            "user": {"type": "str", "required": True},
            "password": {"type": "str", "required": True, "no_log": True},
            "interface": {"type": "str", "default": "lanplus"},
            "port": {"type": "int"},
        }},
        "redfish": {"type": "dict", "options": {
            "host": {"type": "str", "required": True},
            "user": {"type": "str", "required": True},
            "password": {"type": "str", "required": True, "no_log": True},
            "system_id": {"type": "str", "required": True},
            "reset_type": {"type": "str", "choices": ["PowerCycle", "ForceRestart"], "default": "PowerCycle"},
            "validate_certs": {"type": "bool", "default": True},
        }},
        "verify": {"type": "bool", "default": True},
        "timeout": timeout_spec(600),
        # the action plugin's (plugins/action/fw_reset.py), which takes them off before the module runs; in the
        # spec so that the module's documentation and argument checks (ansible-lint, ansible-test) know them
        "reconnect_delay": {"type": "int", "default": 60},
        "reconnect_timeout": {"type": "int", "default": 1800},
        "reconnect_sleep": {"type": "int", "default": 5},
        "reconnect_read": {"type": "list", "elements": "str", "choices": ["dpu_os", "rdma_links"], "default": []},
    }


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[
            ("power_cycle_method", "command", ("power_cycle_command",)),
            ("power_cycle_method", "ipmitool", ("ipmi",)),
            ("power_cycle_method", "redfish", ("redfish",)),
        ],
        supports_check_mode=True,
    )
    run_module(module, "reset the card", ToolRunner, lambda runner: run_reset(runner, module.params, module.check_mode),
               lambda result: [result["reset_tool"], "--version"], predicts=False)


if __name__ == "__main__":
    main()
