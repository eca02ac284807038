"""fw_reset: exact ordered argv against recorded outputs; the reset chosen, applied once, verified.

Tool outputs:
* ``mlxfwreset q`` (BlueField-3, DOCA 2.9.2 host): published in j3soon/bluefield-dpu-setup-notes README.md
  ("Resetting DPU"); the markdown quote prefix ``> `` removed, nothing else changed.
* ``mlxfwreset ... reset -y`` (ConnectX-7, level 3): shared/corpus/mlxfwreset/cx7-mlxfwreset-reset-y.txt.
* ``flint q`` with ``FW Version(Running)``: recorded from the device twin after a burn (layout of
  shared/corpus/flint/FORMAT-from-source.md).
* ``mst status -v`` and the ``mlxconfig -e q`` tables: as in test_nvconfig.py.
"""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _cards as cards
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import fw_reset
from test_nvconfig import DEV, MST_DPU, query

MLXFWRESET_Q_BF3 = """\
Reset-levels:
0: Driver, PCI link, network link will remain up ("live-Patch")  -Supported     (default)
1: Only ARM side will not remain up ("Immediate reset").         -Not Supported
3: Driver restart and PCI reset                                  -Supported
4: Warm Reboot                                                   -Supported

Reset-types (relevant only for reset-levels 1,3,4):
0: Full chip reset                                               -Supported     (default)
1: Phy-less reset (keep network port active during reset)        -Not Supported
2: NIC only reset (for SoC devices)                              -Not Supported
3: ARM only reset                                                -Not Supported
4: ARM OS shut down                                              -Not Supported

Reset-sync (relevant only for reset-level 3):
0: Tool is the owner                                             -Not supported
1: Driver is the owner                                           -Supported     (default)
"""

RESET_OUT = """
The reset level for device, /dev/mst/mt4129_pciconf0 is:

3: Driver restart and PCI reset
Continue with reset?[y/N] y
-I- Sending Reset Command To Fw             -Done
-I- Stopping Driver                         -Done
-I- Resetting PCI                           -Done
-I- Starting Driver                         -Done
-I- Restarting MST                          -Done
-I- FW was loaded successfully.

"""

FLINT_TAIL = """\
FW Release Date:       28.4.2024
Product Version:       32.41.1000
Rom Info:              type=UEFI Virtio net version=21.4.13 cpu=AMD64,AARCH64
                       type=UEFI version=14.34.12 cpu=AMD64,AARCH64
Description:           UID                GuidsNumber
Base GUID:             946dae03004f296a        38
Base MAC:              946dae4f296a            38
Image VSD:             N/A
Device VSD:            N/A
PSID:                  MT_0000000998
Security Attributes:   N/A
"""
FLINT_SAME = "Image type:            FS4\nFW Version:            32.41.1000\n" + FLINT_TAIL
FLINT_PENDING = ("Image type:            FS4\nFW Version:            32.43.1014\n"
                 "FW Version(Running):   32.41.1000\n" + FLINT_TAIL)
FLINT_NEW = FLINT_SAME.replace("32.41.1000", "32.43.1014")

MST = (["mst", "status", "-v"], 0, MST_DPU, "")
Q = ["mlxconfig", "-d", DEV, "-e", "q"]
FLINT = ["flint", "-d", DEV, "q"]
FWQ = (["mlxfwreset", "-d", DEV, "q"], 0, MLXFWRESET_Q_BF3, "")
FWQ_MISSING = (["mlxfwreset", "-d", DEV, "q"], 127, "", "mlxfwreset: command not found")
RESET = ["mlxfwreset", "-d", DEV, "-y", "-l", "3", "--sync", "1", "r"]
VERSION = (["mlxfwreset", "--version"], 1, "-E- Unknown command: --version\n", "")
PENDING_VFS = query(NUM_OF_VFS=("16", "16", "8"))
DONE_VFS = query(NUM_OF_VFS=("16", "8", "8"))
PENDING_MODE = query(INTERNAL_CPU_OFFLOAD_ENGINE=("ENABLED(0)", "ENABLED(0)", "DISABLED(1)"))
NIC_MODE = query(INTERNAL_CPU_OFFLOAD_ENGINE=("ENABLED(0)", "DISABLED(1)", "DISABLED(1)"))
MST_HOST = MST_DPU.replace("net-p1,net-pf1hpf,net-en3f1pf1sf0", "net-ens1f1np1                    ").replace(
    "net-pf0hpf,net-en3f0pf0sf0,net-p0", "net-ens1f0np0                    ")


class Script:
    """The commands every runner of one module run must execute, in order."""

    def __init__(self, steps, installed=("mst", "mlxconfig", "flint", "mlxfwreset")):
        self.steps = list(steps)
        self.installed = set(installed)


class FakeRunner:
    def __init__(self, script, environ=None, timeout=600):
        self.script = script
        self.cmd = []
        self.timeout = timeout
        self.environ = dict(environ or {})

    def which(self, program):
        return "/usr/bin/" + program if program in self.script.installed else None

    def run(self, argv, timeout=None):
        argv = list(argv)
        self.cmd.append(argv)
        assert self.script.steps, "unexpected command %r" % (argv,)
        want, rc, out, err = self.script.steps.pop(0)
        assert argv == want, "expected %r, ran %r" % (want, argv)
        return CommandResult(argv, rc, out, err, missing=rc == 127)


def run_module(monkeypatch, capsys, args, steps, check_mode=False, installed=None):
    script = Script(steps) if installed is None else Script(steps, installed)
    runners = []

    def factory(timeout, environ=None):
        runner = FakeRunner(script, environ, timeout)
        runners.append(runner)
        return runner

    monkeypatch.setattr(fw_reset, "ToolRunner", factory)
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    args = dict(args, _ansible_diff=True)  # the tests read the diff, as --diff shows it
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            fw_reset.main()
    result = json.loads(capsys.readouterr().out)
    assert not script.steps, "commands not run: %r" % (script.steps,)
    return result, runners


def test_nothing_pending_is_no_change(monkeypatch, capsys):
    result, runners = run_module(monkeypatch, capsys, {}, [
        MST, (Q, 0, query(), ""), (FLINT, 0, FLINT_SAME, ""), FWQ, VERSION])
    assert result["changed"] is False
    assert result["reset"] == "none"
    assert result["side"] == "dpu"
    assert result["verified"] is True
    assert result["pending"] == {"nvconfig": [], "firmware": False}
    assert result["cmd"] == [["mst", "status", "-v"], Q, FLINT, FWQ[0], VERSION[0]]
    assert len(runners) == 1


def test_pending_parameter_gets_one_level3_reset_then_is_verified(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {}, [
        MST, (Q, 0, PENDING_VFS, ""), (FLINT, 0, FLINT_SAME, ""), FWQ,
        (RESET, 0, RESET_OUT, ""),
        (Q, 0, DONE_VFS, ""), (FLINT, 0, FLINT_SAME, ""), VERSION])[0]
    assert result["changed"] is True
    assert result["reset"] == "firmware_reset"
    assert result["method"] == "mlxfwreset"
    assert result["firmware_reset_supported"] is True
    assert result["verified"] is True
    assert result["diff"]["before"] == {"nvconfig": ["NUM_OF_VFS"], "firmware": False}
    assert result["diff"]["after"] == {"nvconfig": [], "firmware": False}
    assert [argv for argv in result["cmd"] if "r" in argv] == [RESET]


def test_check_mode_resets_nothing_and_prints_the_plan(monkeypatch, capsys):
    extra = [{"name": "SRIOV_EN", "before": "True(1)", "after": "False(0)"}]
    steps = [MST, (Q, 0, PENDING_VFS, ""), (FLINT, 0, FLINT_PENDING, ""), FWQ, VERSION]
    result = run_module(monkeypatch, capsys, {"changes": extra}, steps, check_mode=True)[0]
    assert result["changed"] is True
    assert result["reset"] == "firmware_reset"
    assert result["verified"] is False
    assert [c["name"] for c in result["changes"]] == ["NUM_OF_VFS", "firmware", "SRIOV_EN"]
    assert result["plan"][0] == "%s: 3 change(s); reset: firmware_reset" % DEV
    assert result["plan"][2].startswith("  firmware: 32.41.1000 -> 32.43.1014 (needs firmware_reset:")
    assert result["plan"][-1].startswith("  expected disruption: firmware reset")
    assert result["diff"]["after"] == {"nvconfig": [], "firmware": False}
    assert RESET not in result["cmd"]


def test_extra_changes_are_ignored_outside_check_mode(monkeypatch, capsys):
    steps = [MST, (Q, 0, query(), ""), (FLINT, 0, FLINT_SAME, ""), FWQ, VERSION]
    result = run_module(monkeypatch, capsys, {"changes": [{"name": "SRIOV_EN"}]}, steps)[0]
    assert result["changed"] is False


def test_flashed_firmware_is_activated_and_checked(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {}, [
        MST, (Q, 0, query(), ""), (FLINT, 0, FLINT_PENDING, ""), FWQ, (RESET, 0, RESET_OUT, ""),
        (Q, 0, query(), ""), (FLINT, 0, FLINT_NEW, ""), VERSION])[0]
    assert result["reset"] == "firmware_reset"
    assert result["firmware"] == {"flashed": "32.43.1014", "running": "32.43.1014"}


def test_power_cycle_unavailable_fails_before_anything_happens(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {}, [
        MST, (Q, 0, PENDING_MODE, ""), (FLINT, 0, FLINT_SAME, ""), FWQ])[0]
    assert result["failed"] is True
    assert result["msg"] == (
        "reset the card failed: a power cycle of the server is needed to activate INTERNAL_CPU_OFFLOAD_ENGINE: "
        "ENABLED(0) -> DISABLED(1), and power_cycle_method is none; set power_cycle_method (ipmitool, redfish, "
        "command or pause) or power-cycle the server by hand and run again")
    assert result["cmd"] == [["mst", "status", "-v"], Q, FLINT, FWQ[0]]


def test_pause_tells_the_person_what_to_do(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"power_cycle_method": "pause"}, [
        MST, (Q, 0, PENDING_MODE, ""), (FLINT, 0, FLINT_SAME, ""), FWQ])[0]
    assert result["failed"] is True
    assert "power-cycle it by hand now (not a reboot) and run again" in result["msg"]


def test_power_cycle_by_command_is_not_read_in_the_same_run(monkeypatch, capsys):
    """The node's own power cycle by command: the command returns before the node goes down, so a read now would
    find the card as before; the module says the node restarts (the action plugin reads the card once it is back)."""
    cycle = ["dpusim", "power-cycle"]
    result = run_module(monkeypatch, capsys, {"power_cycle_method": "command", "power_cycle_command": cycle}, [
        MST, (Q, 0, PENDING_MODE, ""), (FLINT, 0, FLINT_SAME, ""), FWQ,
        (cycle, 0, '{"power_cycled": true}\n', ""), VERSION])[0]
    assert result["changed"] is True
    assert result["reset"] == "power_cycle"
    assert result["method"] == "command"
    assert result["restarting"] is True and result["verified"] is False


def test_still_pending_after_the_reset_fails(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {}, [
        MST, (Q, 0, PENDING_VFS, ""), (FLINT, 0, FLINT_SAME, ""), FWQ, (RESET, 0, RESET_OUT, ""),
        (Q, 0, PENDING_VFS, ""), (FLINT, 0, FLINT_SAME, "")])[0]
    assert result["failed"] is True
    assert result["msg"] == ("verify the firmware reset of %s failed: still pending after it: NUM_OF_VFS 16 -> 8; "
                             "the card may need a bigger reset (a power cycle)" % DEV)


def test_mlxfwreset_failure_is_reported_with_its_output(monkeypatch, capsys):
    err = "-E- Reset-sync '1' is not supported with reset-level '3'.\n"
    result = run_module(monkeypatch, capsys, {}, [
        MST, (Q, 0, PENDING_VFS, ""), (FLINT, 0, FLINT_SAME, ""), FWQ, (RESET, 1, err, "")])[0]
    assert result["failed"] is True
    assert result["msg"] == ("reset the firmware of %s with mlxfwreset failed: -E- Reset-sync '1' is not supported "
                             "with reset-level '3'." % DEV)
    assert result["rc"] == 1
    assert result["stdout"] == err


def test_without_mlxfwreset_a_dpu_mode_bluefield_needs_a_power_cycle(monkeypatch, capsys):
    args = {"power_cycle_method": "command", "power_cycle_command": ["cycle-me"]}
    steps = [MST, (Q, 0, PENDING_VFS, ""), (FLINT, 0, FLINT_SAME, ""), FWQ_MISSING, VERSION]
    result = run_module(monkeypatch, capsys, args, steps, check_mode=True)[0]
    assert result["reset_required"] == "firmware_reset"
    assert result["reset"] == "power_cycle"
    assert "DPU mode" in result["note"]
    assert result["firmware_reset_supported"] is False


def test_nic_mode_bluefield_on_the_host_is_rebooted_not_firmware_reset(monkeypatch, capsys):
    pending = query(INTERNAL_CPU_OFFLOAD_ENGINE=("ENABLED(0)", "DISABLED(1)", "DISABLED(1)"),
                    NUM_OF_VFS=("16", "16", "8"))
    reboot = ["systemctl", "reboot"]
    result = run_module(monkeypatch, capsys, {"reboot_command": reboot}, [
        (["mst", "status", "-v"], 0, MST_HOST, ""), (Q, 0, pending, ""), (FLINT, 0, FLINT_SAME, ""), FWQ,
        (reboot, 0, "", ""), VERSION])[0]
    assert result["side"] == "host"
    assert result["reset"] == "warm_reboot"
    # `systemctl reboot` returns before the node goes down: no read of the card in this run
    assert result["restarting"] is True and result["verified"] is False
    assert "NCO PR #86" in result["note"]
    assert RESET not in result["cmd"]


def test_warm_reboot_without_reboot_command_fails_clearly(monkeypatch, capsys):
    pending = query(INTERNAL_CPU_OFFLOAD_ENGINE=("ENABLED(0)", "DISABLED(1)", "DISABLED(1)"),
                    NUM_OF_VFS=("16", "16", "8"))
    result = run_module(monkeypatch, capsys, {"side": "host"}, [
        MST, (Q, 0, pending, ""), (FLINT, 0, FLINT_SAME, ""), FWQ])[0]
    assert result["failed"] is True
    assert "a warm reboot is needed to activate NUM_OF_VFS: 16 -> 8, and reboot_command is not set" in result["msg"]


def test_ipmitool_gets_the_password_from_the_environment_only(monkeypatch, capsys):
    argv = ["ipmitool", "-I", "lanplus", "-H", "bmc01", "-p", "623", "-U", "admin", "-E", "chassis", "power", "cycle"]
    ipmi = {"host": "bmc01", "user": "admin", "password": "s3cret-pw", "port": 623}
    result, runners = run_module(monkeypatch, capsys, {"power_cycle_method": "ipmitool", "ipmi": ipmi}, [
        MST, (Q, 0, PENDING_MODE, ""), (FLINT, 0, FLINT_SAME, ""), FWQ,
        (argv, 0, "Chassis Power Control: Cycle\n", ""), VERSION])
    assert result["changed"] is True
    assert result["method"] == "ipmitool"
    assert result["verified"] is False, "the BMC acts after the call: the module cannot see the result"
    assert argv in result["cmd"]
    assert runners[1].environ["IPMI_PASSWORD"] == "s3cret-pw"
    assert "IPMI_PASSWORD" not in runners[0].environ
    assert "s3cret-pw" not in json.dumps(result)


def test_redfish_posts_computer_system_reset(monkeypatch, capsys):
    calls = []

    class Response:
        @staticmethod
        def getcode():
            return 204

    def fake_open_url(url, **kwargs):
        calls.append((url, kwargs))
        return Response()

    monkeypatch.setattr(fw_reset, "open_url", fake_open_url)
    redfish = {"host": "bmc01:8443", "user": "root", "password": "s3cret-pw", "system_id": "Bluefield"}
    result = run_module(monkeypatch, capsys, {"power_cycle_method": "redfish", "redfish": redfish}, [
        MST, (Q, 0, PENDING_MODE, ""), (FLINT, 0, FLINT_SAME, ""), FWQ, VERSION])[0]
    url = "https://bmc01:8443/redfish/v1/Systems/Bluefield/Actions/ComputerSystem.Reset"
    assert len(calls) == 1
    assert calls[0][0] == url
    assert calls[0][1]["method"] == "POST"
    assert json.loads(calls[0][1]["data"]) == {"ResetType": "PowerCycle"}
    assert calls[0][1]["url_password"] == "s3cret-pw"
    assert calls[0][1]["force_basic_auth"] is True
    assert calls[0][1]["validate_certs"] is True
    assert ["redfish", "POST", url, '{"ResetType": "PowerCycle"}'] in result["cmd"]
    assert "s3cret-pw" not in json.dumps(result)


def test_redfish_error_status_fails(monkeypatch, capsys):
    class Response:
        @staticmethod
        def getcode():
            return 400

    monkeypatch.setattr(fw_reset, "open_url", lambda url, **kwargs: Response())
    redfish = {"host": "bmc01", "user": "root", "password": "pw", "system_id": "1"}
    result = run_module(monkeypatch, capsys, {"power_cycle_method": "redfish", "redfish": redfish}, [
        MST, (Q, 0, PENDING_MODE, ""), (FLINT, 0, FLINT_SAME, ""), FWQ])[0]
    assert result["failed"] is True
    assert result["msg"].endswith("answered HTTP 400")


def test_required_options_are_declared(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"power_cycle_method": "command"}, [])[0]
    assert result["failed"] is True
    assert "power_cycle_command" in result["msg"]


# --- issue 18 (1): the 2023-08 / 2025 query layout (MRSI reset reason, MROQ sync and request method) ---------------

def _mroq_query():
    from pathlib import Path

    from bluefleet.parse import strip_header
    path = Path(__file__).resolve().parents[2] / "fixtures" / "parsers" / "mlxfwreset-query"
    return strip_header((path / "bf3-mstfwreset-q-mroq-2025-from-source.txt").read_text(encoding="utf-8"))


def test_2025_query_layout_plans_and_runs_a_level3_reset(monkeypatch, capsys):
    """Before the fix the parser raised on 'The following query is relevant only for reset-type 0:'."""
    fwq = (["mlxfwreset", "-d", DEV, "q"], 0, _mroq_query(), "")
    result = run_module(monkeypatch, capsys, {}, [
        MST, (Q, 0, PENDING_VFS, ""), (FLINT, 0, FLINT_SAME, ""), fwq,
        (RESET, 0, RESET_OUT, ""),
        (Q, 0, DONE_VFS, ""), (FLINT, 0, FLINT_SAME, ""), VERSION])[0]
    assert result["reset"] == "firmware_reset"
    assert result["firmware_reset_supported"] is True
    assert result["verified"] is True
    assert RESET in result["cmd"]


def test_2025_query_with_only_fw_owner_sync_resets_without_sync_1(monkeypatch, capsys):
    row = "1: %-62s-" % "NIC Driver is the owner"
    text = _mroq_query().replace(row + "Supported     (default)", row + "Not Supported ")
    fwq = (["mlxfwreset", "-d", DEV, "q"], 0, text, "")
    reset = ["mlxfwreset", "-d", DEV, "-y", "-l", "3", "r"]
    result = run_module(monkeypatch, capsys, {}, [
        MST, (Q, 0, PENDING_VFS, ""), (FLINT, 0, FLINT_SAME, ""), fwq,
        (reset, 0, RESET_OUT, ""),
        (Q, 0, DONE_VFS, ""), (FLINT, 0, FLINT_SAME, ""), VERSION])[0]
    assert result["reset"] == "firmware_reset"
    assert reset in result["cmd"]


# --- issue 18 (2, 4): mstflint-only machines: no mst, PCI addresses, mstflint's program names -----------------------

MSTFLINT_ONLY = ("mstconfig", "mstflint", "mstfwreset", "mstprivhost")
BDF = "0000:03:00.0"


def test_mstflint_only_with_a_device_runs_no_mst_and_uses_mstflint_names(monkeypatch, capsys):
    """Before the fix: 'mst status -v' ran first (mstflint has no mst) and flint / mlxfwreset were hard-coded."""
    monkeypatch.setattr(cards, "local_netdevs", lambda: ["lo", "p0", "pf0hpf"])
    steps = [(["mstconfig", "-d", BDF, "-e", "q"], 0, query(), ""), (["mstflint", "-d", BDF, "q"], 0, FLINT_SAME, ""),
             (["mstfwreset", "-d", BDF, "q"], 0, _mroq_query(), ""), (["mstfwreset", "--version"], 1, "", "")]
    result = run_module(monkeypatch, capsys, {"device": BDF}, steps, installed=MSTFLINT_ONLY)[0]
    assert result["changed"] is False
    assert result["side"] == "dpu"
    assert result["reset_tool"] == "mstfwreset"
    assert ["mst", "status", "-v"] not in result["cmd"]


def test_mstflint_only_refuses_an_mst_device_file_before_running_anything(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"device": DEV, "side": "host"}, [], installed=MSTFLINT_ONLY)[0]
    assert result["failed"] is True
    assert result["cmd"] == []
    assert result["msg"].startswith("mstconfig cannot open the MST device file %s" % DEV)
    assert "PCI address" in result["msg"]


def test_mstflint_only_without_a_device_says_to_set_it(monkeypatch, capsys):
    steps = [(["mst", "status", "-v"], 127, "", "mst: command not found")]
    result = run_module(monkeypatch, capsys, {}, steps, installed=MSTFLINT_ONLY)[0]
    assert result["failed"] is True
    assert "with mstflint only, set device to the card's PCI address" in result["msg"]
