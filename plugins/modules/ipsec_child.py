#!/usr/bin/python
# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: ipsec_child
short_description: Make sure a strongSwan CHILD_SA is installed (swanctl)
version_added: 0.1.0
description:
  - Reads the IKE_SA O(ike) with C(swanctl --list-sas --ike NAME); when its CHILD_SA O(child) is not
    C(INSTALLED), initiates it once with C(swanctl --initiate --ike NAME --child NAME --timeout N) and reads it
    again. Fails when it is still not installed, with what strongSwan printed.
  - The configuration must already be loaded (C(swanctl --load-all)).
author:
  - bluefleet developers (!UNKNOWN)
options:
  ike:
    description: The connection (IKE_SA) name of the swanctl configuration.
    type: str
    required: true
  child:
    description: The CHILD_SA name within O(ike).
    type: str
    required: true
  initiate:
    description: Initiate the CHILD_SA when it is not installed. False only reports (the other end initiates).
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds C(swanctl --initiate) waits for the exchange.
      - The old name O(wait) still works until 2.0.0; it is deprecated because O(wait) is a bool in the other
        bluefleet modules.
    type: int
    default: 20
    aliases: [wait]
  timeout:
    description: Seconds each command may run (more than O(wait_timeout)).
    type: int
    default: 60
attributes:
  check_mode:
    description: Reads the SAs and reports whether it would initiate; initiates nothing.
    support: full
  diff_mode:
    description: The CHILD_SA state before and after.
    support: full
  platform:
    description: Linux with strongSwan's swanctl (charon running with vici).
    platforms: posix
    support: full
notes:
  - C(swanctl) is looked up on C(PATH) of the task's environment.
"""

EXAMPLES = r"""
- name: Bring the tunnel to the peer DPU up
  bluefleet.dpu.ipsec_child:
    ike: bf-dpu2
    child: bf-dpu2-vtep
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
  description: True when the CHILD_SA was (or, in check mode, would be) initiated.
  returned: always
  type: bool
installed:
  description: Whether the CHILD_SA is installed after the run (in check mode, as predicted).
  returned: always
  type: bool
sa:
  description: The CHILD_SA as C(swanctl --list-sas) shows it (keys of the bluefleet swanctl parser), or null.
  returned: always
  type: dict
diff:
  description: The CHILD_SA state before and after.
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._swanctl import parse_list_sas
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import wait_timeout_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_module,
    run_tool,
    timeout_spec,
)


def read_child(runner, ike, child):
    what = "list the SAs of %s with swanctl" % ike
    result = run_tool(runner, ["swanctl", "--list-sas", "--ike", ike], what,
                      hint="; is charon (strongswan.service) running?")
    data = parse_output(parse_list_sas, result, what)
    for sa in data["sas"]:
        if sa["name"] != ike:
            continue
        for found in sa["children"]:
            if found["name"] == child and found["state"] == "INSTALLED":
                return found
    return None


def run_child(runner, params, check_mode):
    ike, child = params["ike"], params["child"]
    before = read_child(runner, ike, child)
    state_before = {"child": child, "state": "INSTALLED" if before else "absent"}
    if before is not None or not params["initiate"]:
        return {"changed": False, "installed": before is not None, "sa": before,
                "diff": make_diff(state_before, state_before)}
    want = {"child": child, "state": "INSTALLED"}
    if check_mode:
        return {"changed": True, "installed": False, "sa": None, "diff": make_diff(state_before, want)}
    what = "initiate CHILD_SA %s of %s" % (child, ike)
    result = run_tool(runner, ["swanctl", "--initiate", "--ike", ike, "--child", child,
                               "--timeout", str(params["wait_timeout"])], what,
                      hint="; check the peer's configuration, its PSK/certificate and that the fabric reaches it")
    after = read_child(runner, ike, child)
    if after is None:
        raise ToolError("%s failed: the CHILD_SA is not INSTALLED after swanctl --initiate" % what, result)
    return {"changed": True, "installed": True, "sa": after, "diff": make_diff(state_before, want)}


def argument_spec():
    return {
        "ike": {"type": "str", "required": True},
        "child": {"type": "str", "required": True},
        "initiate": {"type": "bool", "default": True},
        "wait_timeout": wait_timeout_spec(20, old_name="wait"),
        "timeout": timeout_spec(60),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, "initiate CHILD_SA %s" % module.params["child"], ToolRunner,
               lambda runner: run_child(runner, module.params, module.check_mode), predicts=False)


if __name__ == "__main__":
    main()
