# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: host_restriction
short_description: Restrict or privilege the GPU host of a BlueField DPU (mlxprivhost, zero trust)
version_added: 0.1.0
description:
  - Runs on the BlueField's Arm side (the DPU inventory host) and sets the host privilege level of the card,
    O(state) - C(restricted) (zero trust - the x86 host may not write NV configuration, burn firmware or reset the
    card) or C(privileged) (the default) - and, while restricted, the port-function flags O(disable_rshim),
    O(disable_tracer), O(disable_counter_rd) and O(disable_port_owner).
  - Reads the configuration with C(mlxprivhost -d DEV q) (the level and the flags stored on the card); when it
    differs runs C(mlxprivhost -d DEV r [--disable_...]) or C(mlxprivhost -d DEV p) once, reads it again and fails
    unless it is what was asked for.
  - The level takes effect at once. A changed flag needs a reset to be active, which this module does not apply;
    it reports it in RV(reset_required) and per flag in RV(reset_required_by) - C(disable_rshim) a power cycle,
    C(disable_tracer) and C(disable_counter_rd) a firmware reset, C(disable_port_owner) none. The query shows the
    stored flags, so a second run reports no change even before that reset.
  - On the GPU host side the tool refuses to change the level; the module then fails and says to run it on the DPU.
author:
  - bluefleet developers (!UNKNOWN)
options:
  state:
    description:
      - The host privilege level wanted.
      - C(privileged) clears every flag (C(mlxprivhost p) does), so no O(disable_rshim) etc. may be true with it.
    type: str
    choices: [restricted, privileged]
    required: true
  disable_rshim:
    description: With O(state=restricted), the host gets no rshim function (no access to the Arm's registers,
      no BFB push from the host). Null - keep what the card has. Active after a power cycle.
    type: bool
  disable_tracer:
    description: With O(state=restricted), the host may not own the firmware tracer. Null - keep what the card has.
      Active after a firmware reset.
    type: bool
  disable_counter_rd:
    description: With O(state=restricted), the host may not read the physical port counters. Null - keep what the
      card has. Active after a firmware reset.
    type: bool
  disable_port_owner:
    description: With O(state=restricted), the host may not be port owner. Null - keep what the card has.
    type: bool
  device:
    description:
      - The card, as the tool takes it in C(-d) - an mst device (C(/dev/mst/mt41692_pciconf0)) for MFT's
        C(mlxprivhost), a PCI address (C(0000:03:00.0)) for mstflint's C(mstprivhost), which cannot open an MST
        device file.
      - Empty - the only card C(mst status -v) lists (its PCI address when only C(mstprivhost) is installed).
    type: str
  timeout:
    description: Seconds each command may run.
    type: int
    default: 120
attributes:
  check_mode:
    description: Reads the configuration and reports whether it would change and which reset that needs; writes
      nothing.
    support: full
  diff_mode:
    description: The level and the four flags before and after.
    support: full
  platform:
    description: BlueField Arm systems with MFT or mstflint installed.
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C); MFT's C(mlxprivhost)
    when installed, else Debian/Ubuntu mstflint's C(mstprivhost).
  - Lifting the restriction (O(state=privileged)) clears the flags on the card; restoring them needs the same
    reset again.
seealso:
  - module: bluefleet.dpu.dpu_info
  - module: bluefleet.dpu.fw_reset
"""


EXAMPLES = r"""
- name: Lift the host restriction for a firmware upgrade from the host
  bluefleet.dpu.host_restriction:
    state: privileged
  register: lifted

- name: Restrict the host again, keeping the flags the card has
  bluefleet.dpu.host_restriction:
    device: /dev/mst/mt41692_pciconf0
    state: restricted

- name: Zero trust - restrict the host and take its rshim, tracer and counters away
  bluefleet.dpu.host_restriction:
    state: restricted
    disable_rshim: true
    disable_tracer: true
    disable_counter_rd: true
    disable_port_owner: true
  register: zero_trust

- name: Say which reset activates the flags (this module applies none)
  ansible.builtin.debug:
    msg: "{{ zero_trust.reset_required_by }}"
  when: zero_trust.reset_required != 'none'
"""


RETURN = r"""
check_mode_prediction:
  description:
    - Only in check mode. True - the resource keys show the state the module predicts after a real run
      (what it would write), not the state before.
  returned: check mode
  type: bool
  sample: true
changed:
  description: True when the level or a flag was changed (or, in check mode, would be).
  returned: always
  type: bool
device:
  description: The C(-d) argument used.
  returned: always
  type: str
  sample: /dev/mst/mt41692_pciconf0
level:
  description: The level after the run as C(mlxprivhost q) prints it (in check mode, as predicted).
  returned: always
  type: str
  sample: RESTRICTED
previous_level:
  description: The level before the run.
  returned: always
  type: str
  sample: PRIVILEGED
port_functions:
  description: The four flags after the run as the query shows them (stored on the card; a flag may wait for
    its reset). In check mode, as predicted.
  returned: always
  type: dict
  sample: {disable_rshim: true, disable_tracer: true, disable_counter_rd: true, disable_port_owner: true}
reset_required:
  description: The biggest reset the flags changed by this run need to be active (C(none), C(firmware_reset),
    C(power_cycle); classes of the bluefleet reset planner). The module applies none.
  returned: always
  type: str
  sample: power_cycle
reset_required_by:
  description: The reset each changed flag needs, by flag name (empty when no flag changed).
  returned: always
  type: dict
  sample: {disable_rshim: power_cycle, disable_tracer: firmware_reset}
diff:
  description: C(level) and the four flags before and after.
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
tool_version:
  description: First line of C(mlxprivhost -v) (C(mstprivhost -v) with mstflint), or null when the tool does not
    answer it.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._cards import (
    check_device,
    only_card,
    pick_tool,
    read_mst,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._host_restriction import (
    COMMANDS,
    FLAGS,
    argument_spec,
    check_params,
    outcome,
    state_of,
    wanted_state,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxprivhost import parse_mlxprivhost_query
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_module,
    run_tool,
)

# What mlxprivhost prints when it is run where it cannot change the level (mstflint mlxconfig/mstprivhost.py:
# a single-host x86 side cannot restrict itself; lifting the restriction works only from the Arm side).
_WRONG_SIDE = ("cannot restrict itself", "only effective on the ARM side", "Secure host enabled")
_WRONG_SIDE_HINT = ("; mlxprivhost changes the host level only from the BlueField's Arm side: run this task on the "
                    "DPU (inventory group dpus), not on the GPU host")


def read_state(runner, device, tool="mlxprivhost"):
    what = "query host privilege of %s with %s" % (device, tool)
    result = run_tool(runner, [tool, "-d", device, "q"], what)
    return state_of(parse_output(parse_mlxprivhost_query, result, what), what, result)


def argv_for(device, params, want, tool="mlxprivhost"):
    argv = [tool, "-d", device, COMMANDS[params["state"]]]
    if params["state"] == "restricted":
        argv += ["--" + flag for flag in FLAGS if want[flag]]
    return argv


def apply(runner, device, argv, want):
    what = "set host privilege of %s to %s with %s" % (device, want["level"], argv[0])
    try:
        result = run_tool(runner, argv, what)
    except ToolError as exc:
        out = exc.result.stdout + exc.result.stderr if exc.result is not None else ""
        if any(text in out for text in _WRONG_SIDE):
            exc.msg += _WRONG_SIDE_HINT
        raise
    if "Failed" in result.stdout or "Done!" not in result.stdout:
        raise ToolError("%s failed: the tool did not print 'Done!'" % what, result)
    after = read_state(runner, device, argv[0])
    if after != want:
        differ = ["%s=%s" % (key, after[key]) for key in after if after[key] != want[key]]
        raise ToolError("%s failed: read back %s" % (what, ", ".join(differ)), result)
    return after


def run_restriction(runner, params, check_mode):
    """Read, compare (``_host_restriction.outcome``: in check mode, the predicted state), and write only here."""
    check_params(params)
    tool = pick_tool(runner, "mlxprivhost")  # MFT's, else mstflint's mstprivhost (PCI addresses only)
    device = params["device"]
    if not device:
        functions, result = read_mst(runner, missing_hint="; mst is part of NVIDIA MFT: with mstflint only, set "
                                                          "device to the card's PCI address")
        device = only_card(functions, result, pci=tool != "mlxprivhost")
    check_device(tool, device)
    before = read_state(runner, device, tool)
    out = outcome(params, before, device)
    if out["changed"] and not check_mode:
        want = wanted_state(params, before)
        after = apply(runner, device, argv_for(device, params, want, tool), want)
        out.update(level=after["level"], port_functions={flag: after[flag] for flag in FLAGS})
    return out


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    used = {}

    def work(runner):
        used["tool"] = pick_tool(runner, "mlxprivhost")
        return run_restriction(runner, module.params, module.check_mode)

    run_module(module, "set host privilege", ToolRunner, work, lambda result: [used["tool"], "-v"], predicts=True)


if __name__ == "__main__":
    main()
