# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: host_restriction
short_description: Restrict or privilege the GPU host of a BlueField DPU (mlxprivhost)
version_added: 0.1.0
description:
  - Runs on the BlueField's Arm side (the DPU inventory host) and makes the host privilege level of the card
    O(state) - C(restricted) (the x86 host may not write NV configuration, burn firmware or reset the card) or
    C(privileged) (the default).
  - Reads the level with C(mlxprivhost -d DEV q); when it differs runs C(mlxprivhost -d DEV r) or
    C(mlxprivhost -d DEV p) once, reads it again and fails unless it is O(state).
  - Only the level is managed. The C(--disable_*) flags (rshim, tracer, counters, port owner) are not set by this
    module, so a change takes effect at once (C(reset_required) is C(none)).
author:
  - bluefleet developers (!UNKNOWN)
options:
  state:
    description: The host privilege level wanted.
    type: str
    choices: [restricted, privileged]
    required: true
  device:
    description: The card, as the tools take it in C(-d) (C(/dev/mst/mt41692_pciconf0)). Empty - the only card
      C(mst status -v) lists.
    type: str
  timeout:
    description: Seconds each command may run.
    type: int
    default: 120
attributes:
  check_mode:
    description: Reads the level and reports whether it would change; writes nothing.
    support: full
  diff_mode:
    description: The level before and after.
    support: full
  platform:
    description: BlueField Arm systems with MFT or mstflint installed.
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
  - The GPU host cannot change its own level; run the module on the DPU.
seealso:
  - module: bluefleet.dpu.dpu_info
"""


EXAMPLES = r"""
- name: Lift the host restriction for a firmware upgrade from the host
  bluefleet.dpu.host_restriction:
    state: privileged
  register: lifted

- name: Restrict the host again (zero-trust)
  bluefleet.dpu.host_restriction:
    device: /dev/mst/mt41692_pciconf0
    state: restricted
"""


RETURN = r"""
changed:
  description: True when the level was changed (or, in check mode, would be).
  returned: always
  type: bool
device:
  description: The C(-d) argument used.
  returned: always
  type: str
  sample: /dev/mst/mt41692_pciconf0
level:
  description: The level after the run as C(mlxprivhost q) prints it (in check mode, as it is now).
  returned: always
  type: str
  sample: PRIVILEGED
previous_level:
  description: The level before the run.
  returned: always
  type: str
  sample: RESTRICTED
reset_required:
  description: Always C(none) - a level change takes effect at once (mlxprivhost's help says so).
  returned: always
  type: str
  sample: none
diff:
  description: C(level) before and after.
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
tool_version:
  description: First line of C(mlxprivhost -v), or null when the tool does not answer it.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils._cards import only_card, read_mst
from ansible_collections.bluefleet.dpu.plugins.module_utils._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils._mlxprivhost import parse_mlxprivhost_query
from ansible_collections.bluefleet.dpu.plugins.module_utils._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils._tooling import (
    ToolError,
    parse_output,
    run_module,
    run_tool,
    timeout_spec,
)

LEVELS = {"restricted": "RESTRICTED", "privileged": "PRIVILEGED"}
COMMANDS = {"restricted": "r", "privileged": "p"}


def read_level(runner, device):
    what = "query host privilege of %s with mlxprivhost" % device
    result = run_tool(runner, ["mlxprivhost", "-d", device, "q"], what)
    data = parse_output(parse_mlxprivhost_query, result, what)
    if data["errors"]:
        raise ToolError("%s failed: %s" % (what, data["errors"][0]), result)
    if not data["level"]:
        raise ToolError("%s failed: the query printed no level" % what, result)
    return data["level"]


def run_restriction(runner, params, check_mode):
    device = params["device"] or only_card(*read_mst(runner))
    before = read_level(runner, device)
    wanted = LEVELS[params["state"]]
    changed = before != wanted
    after = before
    if changed and not check_mode:
        what = "set host privilege of %s to %s with mlxprivhost" % (device, wanted)
        result = run_tool(runner, ["mlxprivhost", "-d", device, COMMANDS[params["state"]]], what,
                          hint="; run it on the DPU's Arm side, not on the GPU host")
        if "Done!" not in result.stdout:
            raise ToolError("%s failed: the tool did not print 'Done!'" % what, result)
        after = read_level(runner, device)
        if after != wanted:
            raise ToolError("%s failed: the level read back is %s" % (what, after), result)
    return {
        "changed": changed,
        "device": device,
        "level": after,
        "previous_level": before,
        "reset_required": "none",
        "diff": make_diff({"level": before}, {"level": wanted if changed else before}),
    }


def argument_spec():
    return {
        "state": {"type": "str", "choices": list(LEVELS), "required": True},
        "device": {"type": "str"},
        "timeout": timeout_spec(120),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, "set host privilege", ToolRunner,
               lambda runner: run_restriction(runner, module.params, module.check_mode),
               lambda result: ["mlxprivhost", "-v"])


if __name__ == "__main__":
    main()
