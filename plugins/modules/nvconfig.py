# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvconfig
short_description: Non-volatile configuration (mlxconfig) of a BlueField DPU or ConnectX NIC
version_added: 0.1.0
description:
  - Sets mlxconfig parameters of one card to the values given, by name, and the DPU or NIC mode of a
    BlueField, and reports which reset each change needs before the card runs with it.
  - Reads the whole table with C(mlxconfig -d DEV -e q) (Default, Current and Next Boot), compares the
    desired values with Next Boot, writes what differs in one C(mlxconfig -d DEV -y set NAME=VALUE ...)
    call and reads the table again to prove the write.
  - mlxconfig writes go to Next Boot; Current changes only after a reset. The module reports the reset
    each change needs in RV(changes) and the smallest reset that activates everything pending on the
    card in RV(reset_required) (classes of the bluefleet reset planner). Use M(bluefleet.dpu.fw_reset) to
    apply it.
  - An unknown parameter is an error that names the closest parameter names of the card; a parameter the
    tool marks read-only (C(RO)) is refused; an array parameter (C(Array[0..N])) is refused.
author:
  - bluefleet developers (!UNKNOWN)
options:
  device:
    description:
      - The card, as the tools take it in C(-d) - an mst device (C(/dev/mst/mt41692_pciconf0)) or a PCI
        address (C(03:00.0)).
      - When omitted, the module asks C(mst status -v) (MFT) and uses the only card it lists; with several cards it
        fails and lists them. With O(tool=mstconfig) it uses that card's PCI address.
      - C(mstconfig) (mstflint) takes a PCI address or an RDMA device, never an MST device file; such a device is
        refused before anything runs.
    type: str
  params:
    description:
      - Desired parameters, C(NAME -> VALUE). Names are the ones C(mlxconfig q) prints (case does not matter).
      - A value is a number (C(8), C(0x10)), a boolean (C(true) is 1), a name as the tool prints it
        (C(ETH), C(EMBEDDED_CPU), C(True)) or both as printed (C(ETH(2))).
    type: dict
    default: {}
  mode:
    description:
      - Desired BlueField mode. Mapped to the parameters of the card's generation -
        BlueField-3 C(INTERNAL_CPU_OFFLOAD_ENGINE) (C(ENABLED) in DPU mode, C(DISABLED) in NIC mode);
        BlueField-2 C(INTERNAL_CPU_MODEL), C(INTERNAL_CPU_PAGE_SUPPLIER), C(INTERNAL_CPU_ESWITCH_MANAGER),
        C(INTERNAL_CPU_IB_VPORT0) and C(INTERNAL_CPU_OFFLOAD_ENGINE).
      - A change of mode needs a power cycle of the server.
      - Fails on a card that is not a BlueField-2 or BlueField-3, and when O(params) sets one of these
        parameters to another value.
    type: str
    choices: [dpu, nic]
  tool:
    description: The program to run; C(mstconfig) is the mstflint name of the same tool.
    type: str
    choices: [mlxconfig, mstconfig]
    default: mlxconfig
  timeout:
    description: Seconds each command may run before it is stopped and the task fails.
    type: int
    default: 120
attributes:
  check_mode:
    description: Reads the card and reports the changes and resets it would make; writes nothing.
    support: full
  diff_mode:
    description: Shows the Next Boot values of the parameters managed, before and after.
    support: full
  platform:
    description: Linux GPU hosts and BlueField Arm systems with MFT or mstflint installed.
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
  - On a BlueField in DPU mode, configure from the Arm side; a restricted host (zero trust) cannot write.
seealso:
  - module: bluefleet.dpu.fw_reset
  - module: bluefleet.dpu.dpu_info
"""

EXAMPLES = r"""
- name: SR-IOV with 8 VFs and Ethernet on both ports
  bluefleet.dpu.nvconfig:
    params:
      SRIOV_EN: true
      NUM_OF_VFS: 8
      LINK_TYPE_P1: ETH
      LINK_TYPE_P2: ETH(2)
  register: nv

- name: Switch a BlueField to NIC mode (needs a power cycle)
  bluefleet.dpu.nvconfig:
    device: /dev/mst/mt41692_pciconf0
    mode: nic

- name: Activate what is pending
  bluefleet.dpu.fw_reset:
    power_cycle_method: ipmitool
    ipmi:
      host: bmc01.example.com
      user: admin
      password: "{{ vault_bmc_password }}"
  when: nv.reset_required != 'none'
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
  description: True when the module wrote (or, in check mode, would write) Next Boot values.
  returned: always
  type: bool
device:
  description: The C(-d) argument used.
  returned: always
  type: str
  sample: /dev/mst/mt41692_pciconf0
device_type:
  description: C(Device type) as mlxconfig prints it.
  returned: always
  type: str
  sample: BlueField3
mode:
  description: >-
    Mode of a BlueField per column, C(current) and C(next_boot), each C(dpu), C(nic), C(separated_host)
    or null (not a BlueField, or the parameters are not printed).
  returned: always
  type: dict
  sample: {current: dpu, next_boot: nic}
nvconfig:
  description: >-
    The managed parameters after the run (in check mode, as they would be), NAME -> C(default),
    C(current), C(next_boot), values as mlxconfig prints them.
  returned: always
  type: dict
  sample: {NUM_OF_VFS: {default: 16, current: 16, next_boot: 8}}
changes:
  description: One entry per parameter written (or to be written).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Parameter name.
      type: str
    before:
      description: Next Boot value before, as printed.
      type: raw
    after:
      description: Next Boot value after, as printed (in check mode, the desired value as given).
      type: raw
    current:
      description: Current value, as printed.
      type: raw
    reset_required:
      description: The reset class that activates this change.
      type: str
    reason:
      description: Why (the fact the planner's rule rests on).
      type: str
pending:
  description: Every parameter of the card whose Next Boot differs from Current after the run.
  returned: always
  type: list
  elements: str
reset_required:
  description: >-
    The smallest reset class that activates everything in RV(pending) - C(none), C(driver_restart),
    C(firmware_reset), C(warm_reboot) or C(power_cycle). Before the node's context is applied (see
    M(bluefleet.dpu.fw_reset), which may need a bigger one).
  returned: always
  type: str
  sample: firmware_reset
diff:
  description: Next Boot values of the changed parameters before and after.
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
tool_version:
  description: First line of C(mlxconfig --version), or null when the tool does not answer it.
  returned: always
  type: str
"""

import difflib

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._cards import (
    INSTALL_HINT,
    only_card,
    query_nvconfig,
    read_mst,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._reset_plan import largest, param_reset
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlxconfig import parse_mlxconfig_set, split_value
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import device_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner, version_line
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_module,
    run_tool,
    timeout_spec,
)

# Mode -> parameters per generation. BlueField-3: hardware-facts.md 2 ("NIC mode shows as
# INTERNAL_CPU_OFFLOAD_ENGINE = DISABLED(1)", bfb-install check_nic_mode()). BlueField-2: the five
# parameters of openshift/sriov-network-operator bindata/scripts/bf2-switch-mode.sh.
MODE_PARAMS = {
    "bluefield3": {
        "dpu": {"INTERNAL_CPU_OFFLOAD_ENGINE": "ENABLED(0)"},
        "nic": {"INTERNAL_CPU_OFFLOAD_ENGINE": "DISABLED(1)"},
    },
    "bluefield2": {
        "dpu": {"INTERNAL_CPU_MODEL": "EMBEDDED_CPU(1)", "INTERNAL_CPU_PAGE_SUPPLIER": "ECPF(0)",
                "INTERNAL_CPU_ESWITCH_MANAGER": "ECPF(0)", "INTERNAL_CPU_IB_VPORT0": "ECPF(0)",
                "INTERNAL_CPU_OFFLOAD_ENGINE": "ENABLED(0)"},
        "nic": {"INTERNAL_CPU_MODEL": "EMBEDDED_CPU(1)", "INTERNAL_CPU_PAGE_SUPPLIER": "EXT_HOST_PF(1)",
                "INTERNAL_CPU_ESWITCH_MANAGER": "EXT_HOST_PF(1)", "INTERNAL_CPU_IB_VPORT0": "EXT_HOST_PF(1)",
                "INTERNAL_CPU_OFFLOAD_ENGINE": "DISABLED(1)"},
    },
}

MISSING_HINT = INSTALL_HINT
_NAMED_RE = LazyPattern(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\((?P<number>-?\d+)\)$")
_INT_RE = LazyPattern(r"^-?\d+$")
_HEX_RE = LazyPattern(r"^0[xX][0-9a-fA-F]+$")


class Desired:
    """A desired value: ``token`` goes on the command line; ``number`` and/or ``name`` are compared."""

    __slots__ = ("token", "number", "name", "given")

    def __init__(self, param, value):
        self.given = value
        self.number = None
        self.name = None
        if isinstance(value, bool):
            self.number = int(value)
        elif isinstance(value, int):
            self.number = value
        elif isinstance(value, str) and value.strip():
            text = value.strip()
            named = _NAMED_RE.match(text)
            if named:
                self.name, self.number = named.group("name"), int(named.group("number"))
            elif _INT_RE.match(text):
                self.number = int(text)
            elif _HEX_RE.match(text):
                self.number = int(text, 16)
            else:
                self.name = text
        else:
            raise ToolError("configure NV parameters failed: %s has value %r; give a number, a boolean or a name "
                            "as mlxconfig prints it (ETH, True, EMBEDDED_CPU(1))" % (param, value))
        self.token = self.name if self.name is not None else str(self.number)

    def shown(self):
        """The value as the module reports it before the tool has printed it."""
        if self.name is not None and self.number is not None:
            return "%s(%d)" % (self.name, self.number)
        return self.number if self.number is not None else self.name

    def matches(self, param, printed):
        name, number = split_value(printed)
        if self.number is not None:
            return number == self.number
        if number is not None and name is None:
            raise ToolError("configure NV parameters failed: %s is a plain number on this card (now %s); give a "
                            "number instead of %r" % (param, printed, self.given))
        return name is not None and name.lower() == self.name.lower()


def mode_of(device_type, params, column):
    """``dpu``, ``nic``, ``separated_host`` or None, from the INTERNAL_CPU_* values of ``column``."""
    if not (device_type or "").lower().startswith("bluefield"):
        return None
    model = params.get("INTERNAL_CPU_MODEL", {}).get(column)
    engine = params.get("INTERNAL_CPU_OFFLOAD_ENGINE", {}).get(column)
    if model is None and engine is None:
        return None
    if model is not None and split_value(model) in (("SEPARATED_HOST", 0), (None, 0), ("SEPARATED_HOST", None)):
        return "separated_host"
    if engine is not None and split_value(engine) in (("DISABLED", 1), (None, 1), ("DISABLED", None)):
        return "nic"
    return "dpu"


class NvConfig:
    def __init__(self, runner, tool="mlxconfig"):
        self.runner = runner
        self.tool = tool

    def discover(self):
        functions, result = read_mst(self.runner, missing_hint="; mst is part of NVIDIA MFT: with mstflint only, set "
                                                               "device to the card's PCI address")
        return only_card(functions, result, pci=self.tool != "mlxconfig")

    def query(self, device):
        return query_nvconfig(self.runner, device, self.tool, missing_hint=MISSING_HINT)[0]

    def tool_version(self):
        return version_line(self.runner, [self.tool, "--version"])


def desired_params(table, device_type, params, mode):
    """Validate names against the card's table and merge the mode; returns ``{NAME: Desired}``."""
    by_upper = {name.upper(): name for name in table}
    wanted = {}
    unknown = []
    for key, value in (params or {}).items():
        name = by_upper.get(str(key).upper())
        if name is None:
            close = difflib.get_close_matches(str(key).upper(), list(table), n=3, cutoff=0.6)
            unknown.append("%s (did you mean %s?)" % (key, " or ".join(close)) if close else "%s (no close name)" % key)
            continue
        wanted[name] = Desired(name, value)
    if unknown:
        raise ToolError("configure NV parameters failed: unknown parameter(s) for this card: %s; `mlxconfig -d DEV q` "
                        "lists the names it knows" % ", ".join(unknown))
    if mode:
        generation = (device_type or "").lower().replace("-", "")
        if generation not in MODE_PARAMS:
            raise ToolError("configure NV parameters failed: mode applies to BlueField-2 and BlueField-3 cards; this "
                            "one is %s" % device_type)
        for name, value in MODE_PARAMS[generation][mode].items():
            if name not in table:
                raise ToolError("configure NV parameters failed: mode=%s needs %s, which this card's mlxconfig does "
                                "not list" % (mode, name))
            mapped = Desired(name, value)
            if name in wanted and not wanted[name].matches(name, value):
                raise ToolError("configure NV parameters failed: params sets %s=%s but mode=%s needs %s; drop one"
                                % (name, wanted[name].given, mode, value))
            wanted[name] = mapped
    refused = [name for name in wanted if table[name]["read_only"]]
    if refused:
        raise ToolError("configure NV parameters failed: read-only parameter(s) %s (marked RO by mlxconfig) cannot "
                        "be set; remove them from params" % ", ".join(sorted(refused)))
    arrays = [name for name in wanted if str(table[name]["next_boot"]).startswith("Array[")]
    if arrays:
        raise ToolError("configure NV parameters failed: array parameter(s) %s are not supported by this module"
                        % ", ".join(sorted(arrays)))
    return wanted


def set_argv(tool, device, assignments):
    """``TOOL -d DEVICE -y set NAME=VALUE ...``: every change in one call (Next Boot only)."""
    return [tool, "-d", device, "-y", "set"] + list(assignments)


def configure(runner, device, params, mode, tool, check_mode):
    nv = NvConfig(runner, tool)
    if not device:
        device = nv.discover()
    before = nv.query(device)
    table = before["params"]
    wanted = desired_params(table, before["device_type"], params, mode)

    changes = []
    for name in sorted(wanted):
        entry = table[name]
        if not wanted[name].matches(name, entry["next_boot"]):
            reset, reason = param_reset(name)
            changes.append({"name": name, "before": entry["next_boot"], "after": wanted[name].shown(),
                            "current": entry["current"], "reset_required": reset, "reason": reason})

    after = before
    if changes and not check_mode:
        argv = set_argv(tool, device, ["%s=%s" % (c["name"], wanted[c["name"]].token) for c in changes])
        what = "set NV configuration of %s" % device
        result = run_tool(runner, argv, what, hint="; a restricted host (zero trust) cannot write: configure from "
                                                   "the DPU Arm side")
        done = parse_output(parse_mlxconfig_set, result, what)
        if done["errors"] or not done["applied"]:
            raise ToolError("%s failed: the tool did not report 'Applying... Done!' (%s)"
                            % (what, "; ".join(done["errors"]) or done["apply_status"]), result)
        after = nv.query(device)
        wrong = [name for name in wanted if not wanted[name].matches(name, after["params"][name]["next_boot"])]
        if wrong:
            raise ToolError("%s failed: after the write Next Boot shows %s" % (what, ", ".join(
                "%s=%s (wanted %s)" % (n, after["params"][n]["next_boot"], wanted[n].given) for n in sorted(wrong))))
        for change in changes:
            change["after"] = after["params"][change["name"]]["next_boot"]

    managed = {}
    for name in sorted(wanted):
        entry = dict(after["params"][name])
        if check_mode:
            for change in changes:
                if change["name"] == name:
                    entry["next_boot"] = change["after"]
        managed[name] = {"default": entry["default"], "current": entry["current"], "next_boot": entry["next_boot"]}

    final = {name: dict(entry) for name, entry in after["params"].items()}
    for name, entry in managed.items():
        final[name]["next_boot"] = entry["next_boot"]
    predicted = {c["name"] for c in changes} if check_mode else set()
    pending = []
    for name, entry in sorted(final.items()):
        if entry["current"] is None:
            continue
        if name in predicted:
            if not wanted[name].matches(name, entry["current"]):
                pending.append(name)
        elif entry["current"] != entry["next_boot"]:
            pending.append(name)
    return {
        "changed": bool(changes),
        "device": device,
        "device_type": after["device_type"],
        "mode": {"current": mode_of(after["device_type"], final, "current"),
                 "next_boot": mode_of(after["device_type"], final, "next_boot")},
        "nvconfig": managed,
        "changes": changes,
        "pending": pending,
        "reset_required": largest(param_reset(name)[0] for name in pending),
        "diff": make_diff({c["name"]: c["before"] for c in changes}, {c["name"]: c["after"] for c in changes},
                          "%s Next Boot" % device, "%s Next Boot" % device),
        "tool_version": nv.tool_version(),
    }


def argument_spec():
    return {
        "device": device_spec(),
        "params": {"type": "dict", "default": {}},
        "mode": {"type": "str", "choices": ["dpu", "nic"]},
        "tool": {"type": "str", "choices": ["mlxconfig", "mstconfig"], "default": "mlxconfig"},
        "timeout": timeout_spec(120),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    run_module(module, "configure NV parameters", ToolRunner,
               lambda runner: configure(runner, p["device"], p["params"], p["mode"], p["tool"], module.check_mode),
               predicts=True)


if __name__ == "__main__":
    main()
