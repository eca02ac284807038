"""nvconfig: the exact ordered argv and what the tools answer, for create, no-op, check, diff, failures.

Tool outputs:
* ``mst status -v`` and ``mlxconfig ... set`` are recorded from the device twin (BlueField-3 profile,
  DPU side); their layouts are the corpus ones (shared/corpus/mst/FORMAT-observed.md,
  shared/corpus/mlxconfig/FORMAT-from-source.md "set / reset flow").
* ``mlxconfig -e q`` tables are rendered here with the mstflint 2023-07..2024-11 widths
  (8-character ``*``/``RO`` prefix, ``%-44s`` name, ``%-16s`` values; verified by the corpus file
  mlxconfig/bf3-b3220-mstconfig-q-dpu-mode-head.txt), abridged to the parameters a test needs.
  The ``RO`` mark has no real sample in the corpus: it follows printSingleParam in the FORMAT file.
"""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import nvconfig

DEV = "/dev/mst/mt41692_pciconf0"

MST_DPU = (
    "MST modules:\n------------\n    MST PCI module is not loaded\n    MST PCI configuration module loaded\n"
    "PCI devices:\n------------\n"
    "DEVICE_TYPE             MST                           PCI       RDMA            NET"
    "                                     NUMA  \n"
    "BlueField3(rev:1)       /dev/mst/mt41692_pciconf0.1   03:00.1   mlx5_1          "
    "net-p1,net-pf1hpf,net-en3f1pf1sf0       -1    \n\n"
    "BlueField3(rev:1)       /dev/mst/mt41692_pciconf0     03:00.0   mlx5_0          "
    "net-pf0hpf,net-en3f0pf0sf0,net-p0       -1    \n\n"
)
MST_TWO_CARDS = MST_DPU + (
    "BlueField3(rev:1)       /dev/mst/mt41692_pciconf1     04:00.0   mlx5_2          "
    "net-p2                                  -1    \n\n"
)

BF3_HEAD = (
    "\nDevice #1:\n----------\n\n"
    "Device type:    BlueField3      \n"
    "Name:           900-9D3B6-00CV-A_Ax\n"
    "Description:    NVIDIA BlueField-3 B3220 P-Series FHHL DPU; 200GbE (default mode) / NDR200 IB; Dual-port "
    "QSFP112; PCIe Gen5.0 x16 with x16 PCIe extension option; 16 Arm cores; 32GB on-board DDR; integrated BMC; "
    "Crypto Enabled\n"
    "Device:         %s\n\n" % DEV
)

BASE = {
    "MODULE_SPLIT_M0": ("Array[0..15]", "Array[0..15]", "Array[0..15]"),
    "INTERNAL_CPU_MODEL": ("EMBEDDED_CPU(1)", "EMBEDDED_CPU(1)", "EMBEDDED_CPU(1)"),
    "INTERNAL_CPU_OFFLOAD_ENGINE": ("ENABLED(0)", "ENABLED(0)", "ENABLED(0)"),
    "NUM_OF_VFS": ("16", "16", "16"),
    "SRIOV_EN": ("True(1)", "True(1)", "True(1)"),
    "LINK_TYPE_P1": ("ETH(2)", "ETH(2)", "ETH(2)"),
}


def query(head=BF3_HEAD, read_only=(), **override):
    """``mlxconfig -d DEV -e q`` text for BASE with ``override`` ({NAME: (default, current, next)})."""
    rows = dict(BASE, **override)
    lines = [head, "%-16s%44s%16s%18s\n" % ("Configurations:", "Default", "Current", "Next Boot")]
    for name, values in rows.items():
        star = "*" if values[2] != values[0] or values[2] != values[1] else " "
        mark = "RO" if name in read_only else "  "
        lines.append("%s%s     %-44s%s\n" % (star, mark, name, "".join("%-16s" % v for v in values)))
    lines.append("The '*' shows parameters with next value different from default/current value.\n")
    return "".join(lines)


def set_output(rows):
    """``mlxconfig -d DEV -y set ...`` as the twin prints it (Next Boot / New table, prompt echo, Done)."""
    lines = [BF3_HEAD, "%-16s%46s%10s\n" % ("Configurations:", "Next Boot", "New")]
    for name, old, new in rows:
        lines.append("        %-44s%-16s%-16s\n" % (name, old, new))
    lines.append("\n Apply new Configuration? (y/n) [n] : y\nApplying... Done!\n"
                 "-I- Please reboot machine to load new configurations.\n")
    return "".join(lines)


class FakeRunner:
    """Answers each argv from a script, in order; any other argv fails the test."""

    def __init__(self, script):
        self.script = list(script)
        self.cmd = []
        self.timeout = 120
        self.environ = {}

    def run(self, argv, timeout=None):
        argv = list(argv)
        self.cmd.append(argv)
        assert self.script, "unexpected command %r" % (argv,)
        want, rc, out, err = self.script.pop(0)
        assert argv == want, "expected %r, ran %r" % (want, argv)
        return CommandResult(argv, rc, out, err, missing=rc == 127)


def run_module(monkeypatch, capsys, args, script, check_mode=False):
    fake = FakeRunner(script)
    monkeypatch.setattr(nvconfig, "ToolRunner", lambda timeout: fake)
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    args = dict(args, _ansible_diff=True)  # the tests read the diff, as --diff shows it
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            nvconfig.main()
    result = json.loads(capsys.readouterr().out)
    assert not fake.script, "commands not run: %r" % (fake.script,)
    return result


VERSION = (["mlxconfig", "--version"], 1, "-E- Invalid command: --version\n", "")
MST = (["mst", "status", "-v"], 0, MST_DPU, "")
Q = ["mlxconfig", "-d", DEV, "-e", "q"]


def test_create_sets_next_boot_once_and_reports_the_reset(monkeypatch, capsys):
    after = query(NUM_OF_VFS=("16", "16", "8"))
    result = run_module(monkeypatch, capsys, {"params": {"num_of_vfs": 8, "SRIOV_EN": True}}, [
        MST,
        (Q, 0, query(), ""),
        (["mlxconfig", "-d", DEV, "-y", "set", "NUM_OF_VFS=8"], 0, set_output([("NUM_OF_VFS", "16", "8")]), ""),
        (Q, 0, after, ""),
        VERSION,
    ])
    assert result["changed"] is True
    assert result["device"] == DEV
    assert result["changes"] == [{
        "name": "NUM_OF_VFS", "before": 16, "after": 8, "current": 16, "reset_required": "firmware_reset",
        "reason": nvconfig.param_reset("NUM_OF_VFS")[1]}]
    assert result["nvconfig"]["NUM_OF_VFS"] == {"default": 16, "current": 16, "next_boot": 8}
    assert result["nvconfig"]["SRIOV_EN"]["next_boot"] == "True(1)"
    assert result["pending"] == ["NUM_OF_VFS"]
    assert result["reset_required"] == "firmware_reset"
    assert result["diff"]["before"] == {"NUM_OF_VFS": 16}
    assert result["diff"]["after"] == {"NUM_OF_VFS": 8}
    assert result["tool_version"] is None
    assert result["cmd"][2] == ["mlxconfig", "-d", DEV, "-y", "set", "NUM_OF_VFS=8"]


def test_no_op_when_next_boot_already_matches(monkeypatch, capsys):
    table = query(NUM_OF_VFS=("16", "16", "8"))
    result = run_module(monkeypatch, capsys, {"params": {"NUM_OF_VFS": "8", "LINK_TYPE_P1": "ETH",
                                                         "SRIOV_EN": "True(1)"}}, [MST, (Q, 0, table, ""), VERSION])
    assert result["changed"] is False
    assert result["changes"] == []
    assert result["pending"] == ["NUM_OF_VFS"], "Next Boot matches but Current does not: still pending"
    assert result["reset_required"] == "firmware_reset"
    assert [c[:2] for c in result["cmd"]] == [["mst", "status"], ["mlxconfig", "-d"], ["mlxconfig", "--version"]]


def test_nothing_pending_needs_no_reset(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"device": DEV, "params": {"NUM_OF_VFS": 16}},
                        [(Q, 0, query(), ""), VERSION])
    assert result["changed"] is False
    assert result["pending"] == []
    assert result["reset_required"] == "none"


def test_check_mode_writes_nothing_and_predicts(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"params": {"NUM_OF_VFS": "0x4", "LINK_TYPE_P1": "IB"}},
                        [MST, (Q, 0, query(), ""), VERSION], check_mode=True)
    assert result["changed"] is True
    assert [c["name"] for c in result["changes"]] == ["LINK_TYPE_P1", "NUM_OF_VFS"]
    assert result["nvconfig"]["NUM_OF_VFS"]["next_boot"] == 4
    assert result["nvconfig"]["LINK_TYPE_P1"]["next_boot"] == "IB"
    assert result["pending"] == ["LINK_TYPE_P1", "NUM_OF_VFS"]
    assert result["diff"] == {"before": {"LINK_TYPE_P1": "ETH(2)", "NUM_OF_VFS": 16},
                              "after": {"LINK_TYPE_P1": "IB", "NUM_OF_VFS": 4},
                              "before_header": DEV + " Next Boot", "after_header": DEV + " Next Boot"}
    assert not any("set" in argv for argv in result["cmd"])


def test_reverting_a_pending_value_writes_and_clears_pending(monkeypatch, capsys):
    table = query(NUM_OF_VFS=("16", "16", "8"))
    result = run_module(monkeypatch, capsys, {"params": {"NUM_OF_VFS": 16}}, [
        MST, (Q, 0, table, ""),
        (["mlxconfig", "-d", DEV, "-y", "set", "NUM_OF_VFS=16"], 0, set_output([("NUM_OF_VFS", "8", "16")]), ""),
        (Q, 0, query(), ""), VERSION])
    assert result["changed"] is True
    assert result["pending"] == []
    assert result["reset_required"] == "none"


def test_mode_nic_on_bluefield3_maps_to_offload_engine_and_needs_power_cycle(monkeypatch, capsys):
    after = query(INTERNAL_CPU_OFFLOAD_ENGINE=("ENABLED(0)", "ENABLED(0)", "DISABLED(1)"))
    result = run_module(monkeypatch, capsys, {"mode": "nic"}, [
        MST, (Q, 0, query(), ""),
        (["mlxconfig", "-d", DEV, "-y", "set", "INTERNAL_CPU_OFFLOAD_ENGINE=DISABLED"], 0,
         set_output([("INTERNAL_CPU_OFFLOAD_ENGINE", "ENABLED(0)", "DISABLED(1)")]), ""),
        (Q, 0, after, ""), VERSION])
    assert result["changed"] is True
    assert result["mode"] == {"current": "dpu", "next_boot": "nic"}
    assert result["changes"][0]["reset_required"] == "power_cycle"
    assert result["reset_required"] == "power_cycle"


def test_mode_conflicting_with_params_is_refused(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"mode": "nic", "params": {"INTERNAL_CPU_OFFLOAD_ENGINE": "ENABLED"}},
                        [MST, (Q, 0, query(), "")])
    assert result["failed"] is True
    assert "params sets INTERNAL_CPU_OFFLOAD_ENGINE=ENABLED but mode=nic needs DISABLED(1)" in result["msg"]


def test_mode_on_a_connectx_is_refused(monkeypatch, capsys):
    head = BF3_HEAD.replace("BlueField3      ", "ConnectX7       ")
    result = run_module(monkeypatch, capsys, {"device": DEV, "mode": "dpu"}, [(Q, 0, query(head=head), "")])
    assert result["failed"] is True
    assert "mode applies to BlueField-2 and BlueField-3 cards; this one is ConnectX7" in result["msg"]


def test_unknown_parameter_suggests_close_names(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"params": {"NUM_OF_VF": 4, "SRIOV_ENABLE": True, "XYZZY": 1}},
                        [MST, (Q, 0, query(), "")])
    assert result["failed"] is True
    assert "unknown parameter(s) for this card: NUM_OF_VF (did you mean NUM_OF_VFS?)" in result["msg"]
    assert "SRIOV_ENABLE (did you mean SRIOV_EN?)" in result["msg"]
    assert "XYZZY (no close name)" in result["msg"]
    assert result["cmd"] == [["mst", "status", "-v"], Q]


def test_read_only_parameter_is_refused(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"params": {"LINK_TYPE_P1": "IB"}},
                        [MST, (Q, 0, query(read_only=("LINK_TYPE_P1",)), "")])
    assert result["failed"] is True
    assert "read-only parameter(s) LINK_TYPE_P1 (marked RO by mlxconfig) cannot be set" in result["msg"]


def test_array_parameter_is_refused(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"params": {"MODULE_SPLIT_M0": 1}}, [MST, (Q, 0, query(), "")])
    assert result["failed"] is True
    assert "array parameter(s) MODULE_SPLIT_M0" in result["msg"]


def test_name_for_a_plain_number_parameter_is_refused(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"params": {"NUM_OF_VFS": "MANY"}}, [MST, (Q, 0, query(), "")])
    assert result["failed"] is True
    assert "NUM_OF_VFS is a plain number on this card (now 16); give a number instead of 'MANY'" in result["msg"]


def test_tool_failure_on_set_names_the_command_and_the_way_out(monkeypatch, capsys):
    out = set_output([("NUM_OF_VFS", "16", "8")]).replace(
        "Applying... Done!\n-I- Please reboot machine to load new configurations.\n",
        "Applying... Failed!\n-E- Failed to set configuration: the host is restricted (mlxprivhost); "
        "change it from the DPU Arm side\n")
    argv = ["mlxconfig", "-d", DEV, "-y", "set", "NUM_OF_VFS=8"]
    result = run_module(monkeypatch, capsys, {"params": {"NUM_OF_VFS": 8}},
                        [MST, (Q, 0, query(), ""), (argv, 1, out, "")])
    assert result["failed"] is True
    assert result["msg"].startswith("set NV configuration of %s failed: -E- Failed to set configuration" % DEV)
    assert "configure from the DPU Arm side" in result["msg"]
    assert result["rc"] == 1
    assert result["stdout"] == out
    assert result["cmd"][-1] == argv


def test_error_with_rc_zero_is_a_failure(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"device": DEV, "params": {"NUM_OF_VFS": 8}},
                        [(Q, 0, "-E- Error when trying to check if NV access registers are supported\n", "")])
    assert result["failed"] is True
    assert result["msg"] == ("query NV configuration of %s failed: -E- Error when trying to check if NV access "
                             "registers are supported" % DEV)


def test_several_cards_need_the_device_option(monkeypatch, capsys):
    mst = (["mst", "status", "-v"], 0, MST_TWO_CARDS, "")
    result = run_module(monkeypatch, capsys, {"params": {"NUM_OF_VFS": 8}}, [mst])
    assert result["failed"] is True
    assert ("mst status -v lists 2 cards (/dev/mst/mt41692_pciconf0, /dev/mst/mt41692_pciconf1); set the device "
            "option") in result["msg"]


def test_missing_tool_says_what_to_install(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"device": DEV, "params": {"NUM_OF_VFS": 8}},
                        [(Q, 127, "", "mlxconfig: command not found")])
    assert result["failed"] is True
    assert "install NVIDIA MFT (mlxconfig, flint, mlxfwreset, mst) or Debian/Ubuntu's mstflint package" in result["msg"]


# --- issue 18 (2): mstconfig (mstflint) takes a PCI address, never an MST device file ------------------------------

def test_mstconfig_without_a_device_uses_the_pci_address_mst_lists(monkeypatch, capsys):
    """Before the fix the /dev/mst name that mst status -v found went to mstconfig ('Unable to parse device name')."""
    q = ["mstconfig", "-d", "0000:03:00.0", "-e", "q"]
    result = run_module(monkeypatch, capsys, {"params": {"NUM_OF_VFS": 16}, "tool": "mstconfig"}, [
        MST, (q, 0, query(), ""), (["mstconfig", "--version"], 1, "", "")])
    assert result["changed"] is False
    assert result["device"] == "0000:03:00.0"
    assert result["cmd"][1] == q


def test_mstconfig_refuses_an_mst_device_file(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"device": DEV, "params": {"NUM_OF_VFS": 8}, "tool": "mstconfig"}, [])
    assert result["failed"] is True
    assert result["cmd"] == []
    assert result["msg"].startswith("mstconfig cannot open the MST device file /dev/mst/mt41692_pciconf0")


@pytest.mark.parametrize("given, printed, same", [
    (True, "True(1)", True), (False, "True(1)", False), ("true", "True(1)", True), (8, 8, True),
    ("0x10", 16, True), ("ETH", "ETH(2)", True), ("eth", "ETH(2)", True), ("IB(1)", "ETH(2)", False),
    ("2", "ETH(2)", True),
])
def test_value_forms(given, printed, same):
    assert nvconfig.Desired("P", given).matches("P", printed) is same


def test_mode_dpu_on_bluefield2_sets_the_five_parameters(monkeypatch, capsys):
    head = BF3_HEAD.replace("BlueField3      ", "BlueField2      ")
    nic = ("EMBEDDED_CPU(1)", "EXT_HOST_PF(1)", "EXT_HOST_PF(1)", "EXT_HOST_PF(1)", "DISABLED(1)")
    names = ("INTERNAL_CPU_MODEL", "INTERNAL_CPU_PAGE_SUPPLIER", "INTERNAL_CPU_ESWITCH_MANAGER",
             "INTERNAL_CPU_IB_VPORT0", "INTERNAL_CPU_OFFLOAD_ENGINE")
    table = query(head=head, **{n: ("x", v, v) for n, v in zip(names, nic, strict=True)})
    argv = ["mlxconfig", "-d", DEV, "-y", "set", "INTERNAL_CPU_ESWITCH_MANAGER=ECPF", "INTERNAL_CPU_IB_VPORT0=ECPF",
            "INTERNAL_CPU_OFFLOAD_ENGINE=ENABLED", "INTERNAL_CPU_PAGE_SUPPLIER=ECPF"]
    dpu = ("EMBEDDED_CPU(1)", "ECPF(0)", "ECPF(0)", "ECPF(0)", "ENABLED(0)")
    after = query(head=head, **{n: ("x", c, v) for n, c, v in zip(names, nic, dpu, strict=True)})
    written = set_output([(n, c, v) for n, c, v in zip(names, nic, dpu, strict=True) if c != v])
    result = run_module(monkeypatch, capsys, {"device": DEV, "mode": "dpu"}, [
        (Q, 0, table, ""), (argv, 0, written, ""), (Q, 0, after, ""), VERSION])
    assert result["mode"] == {"current": "nic", "next_boot": "dpu"}
    assert [c["name"] for c in result["changes"]] == sorted(names[1:])
    assert result["reset_required"] == "power_cycle"
