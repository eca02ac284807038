"""host_restriction: exact ordered argv against recorded outputs.

Tool outputs:
* ``mlxprivhost -d DEV q`` PRIVILEGED (old title): shared/corpus/mlxprivhost/bf2-query-privileged-fixture.txt.
* ``q`` RESTRICTED with every flag TRUE (new title "Host configurations"): a public test fixture (the
  ``MLXPRIVHOST_OUT`` constant of a Rust DPU health-check test, found with the code index, id 24093001147);
  the same layout as mstflint mlxconfig/mstprivhost.py ``printConfOut``. Mixed flag values are that layout
  with other TRUE/FALSE words.
* ``r`` / ``p`` print ``-I- preparing configuration file...Done!`` and ``-I- configuring device...Done!``
  (mstprivhost.py ``updateTlvFile`` / ``setRestrictConf`` / ``setPrivConf``); on a single-host x86 side ``r``
  prints ``-E- There is only a single host, it cannot restrict itself`` with rc 1.
* ``mst status -v``: as in test_nvconfig.py.
"""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.modules import host_restriction
from test_fw_reset import FakeRunner, Script
from test_nvconfig import DEV, MST_DPU

PRIVILEGED = """\
Current device configurations:
------------------------------
level                         : PRIVILEGED

Port functions status:
-----------------------
disable_rshim                 : FALSE
disable_tracer                : FALSE
disable_port_owner            : FALSE
disable_counter_rd            : FALSE

"""
RESTRICTED_ALL = """\
Host configurations
-------------------
level                         : RESTRICTED

Port functions status:
-----------------------
disable_rshim                 : TRUE
disable_tracer                : TRUE
disable_port_owner            : TRUE
disable_counter_rd            : TRUE

"""
RESTRICTED = RESTRICTED_ALL.replace(": TRUE", ": FALSE")
DONE = "-I- preparing configuration file...Done!\n-I- configuring device...Done!\n"
ALL_FLAGS = ["--disable_rshim", "--disable_tracer", "--disable_counter_rd", "--disable_port_owner"]
ALL_ON = {"disable_rshim": True, "disable_tracer": True, "disable_counter_rd": True, "disable_port_owner": True}
ALL_OFF = dict.fromkeys(ALL_ON, False)

MST = (["mst", "status", "-v"], 0, MST_DPU, "")
Q = ["mlxprivhost", "-d", DEV, "q"]
R = ["mlxprivhost", "-d", DEV, "r"]
P = ["mlxprivhost", "-d", DEV, "p"]
VERSION = (["mlxprivhost", "-v"], 0, "mlxprivhost 4.30.0\n", "")


def with_flags(text, **flags):
    for name, on in flags.items():
        text = text.replace("%-30s: %s" % (name, "TRUE" if not on else "FALSE"),
                            "%-30s: %s" % (name, "TRUE" if on else "FALSE"))
    return text


def run_module(monkeypatch, capsys, args, steps, check_mode=False, installed=None):
    script = Script(steps) if installed is None else Script(steps, installed)

    def factory(timeout, environ=None):
        return FakeRunner(script, environ, timeout)

    monkeypatch.setattr(host_restriction, "ToolRunner", factory)
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    args = dict(args, _ansible_diff=True)  # the tests read the diff, as --diff shows it
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            host_restriction.main()
    result = json.loads(capsys.readouterr().out)
    assert not script.steps, "commands not run: %r" % (script.steps,)
    return result


def test_lift_restriction_runs_p_once_and_reads_back(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged"}, [
        MST, (Q, 0, RESTRICTED, ""), (P, 0, DONE, ""), (Q, 0, PRIVILEGED, ""), VERSION])
    assert result["changed"] is True
    assert result["device"] == DEV
    assert result["level"] == "PRIVILEGED"
    assert result["previous_level"] == "RESTRICTED"
    assert result["reset_required"] == "none"
    assert result["reset_required_by"] == {}
    assert result["diff"] == {"before": dict(ALL_OFF, level="RESTRICTED"), "after": dict(ALL_OFF, level="PRIVILEGED")}
    assert result["tool_version"] == "mlxprivhost 4.30.0"
    assert result["cmd"] == [MST[0], Q, P, Q, VERSION[0]]


def test_lift_from_zero_trust_clears_the_flags_and_names_their_resets(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged", "device": DEV}, [
        (Q, 0, RESTRICTED_ALL, ""), (P, 0, DONE, ""), (Q, 0, PRIVILEGED, ""), VERSION])
    assert result["changed"] is True
    assert result["port_functions"] == ALL_OFF
    assert result["reset_required"] == "power_cycle"
    assert result["reset_required_by"] == {"disable_rshim": "power_cycle", "disable_tracer": "firmware_reset",
                                           "disable_counter_rd": "firmware_reset", "disable_port_owner": "none"}


def test_restrict_with_device_given_skips_discovery_and_keeps_flags(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV}, [
        (Q, 0, PRIVILEGED, ""), (R, 0, DONE, ""), (Q, 0, RESTRICTED, ""), VERSION])
    assert result["changed"] is True
    assert result["level"] == "RESTRICTED"
    assert result["reset_required"] == "none"
    assert result["cmd"][1] == R


def test_zero_trust_restricts_with_every_flag_and_reports_the_power_cycle(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, dict(ALL_ON, state="restricted", device=DEV), [
        (Q, 0, PRIVILEGED, ""), (R + ALL_FLAGS, 0, DONE, ""), (Q, 0, RESTRICTED_ALL, ""), VERSION])
    assert result["changed"] is True
    assert result["port_functions"] == ALL_ON
    assert result["reset_required"] == "power_cycle"
    assert result["reset_required_by"]["disable_rshim"] == "power_cycle"
    assert result["reset_required_by"]["disable_tracer"] == "firmware_reset"
    assert result["diff"]["before"] == dict(ALL_OFF, level="PRIVILEGED")
    assert result["diff"]["after"] == dict(ALL_ON, level="RESTRICTED")


def test_one_flag_more_while_restricted_re_restricts_with_the_kept_flags(monkeypatch, capsys):
    before = with_flags(RESTRICTED, disable_port_owner=True)
    after = with_flags(RESTRICTED, disable_port_owner=True, disable_tracer=True)
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV, "disable_tracer": True}, [
        (Q, 0, before, ""), (R + ["--disable_tracer", "--disable_port_owner"], 0, DONE, ""), (Q, 0, after, ""),
        VERSION])
    assert result["changed"] is True
    assert result["reset_required"] == "firmware_reset"
    assert result["reset_required_by"] == {"disable_tracer": "firmware_reset"}


def test_port_owner_alone_needs_no_reset(monkeypatch, capsys):
    after = with_flags(RESTRICTED, disable_port_owner=True)
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV, "disable_port_owner": True}, [
        (Q, 0, RESTRICTED, ""), (R + ["--disable_port_owner"], 0, DONE, ""), (Q, 0, after, ""), VERSION])
    assert result["reset_required"] == "none"
    assert result["reset_required_by"] == {"disable_port_owner": "none"}


def test_already_at_level_is_no_change(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged", "device": DEV}, [(Q, 0, PRIVILEGED, ""), VERSION])
    assert result["changed"] is False
    assert result["diff"]["before"] == result["diff"]["after"] == dict(ALL_OFF, level="PRIVILEGED")
    assert result["reset_required"] == "none"
    assert result["cmd"] == [Q, VERSION[0]]


def test_zero_trust_already_in_place_is_no_change(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, dict(ALL_ON, state="restricted", device=DEV),
                        [(Q, 0, RESTRICTED_ALL, ""), VERSION])
    assert result["changed"] is False
    assert result["reset_required"] == "none"
    assert result["reset_required_by"] == {}


def test_check_mode_reports_the_change_and_its_reset_and_writes_nothing(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV, "disable_rshim": True},
                        [(Q, 0, PRIVILEGED, ""), VERSION], check_mode=True)
    assert result["changed"] is True
    assert result["level"] == "RESTRICTED" and result["previous_level"] == "PRIVILEGED"  # predicted
    assert result["diff"]["after"] == dict(ALL_OFF, level="RESTRICTED", disable_rshim=True)
    assert result["reset_required"] == "power_cycle"
    assert result["cmd"] == [Q, VERSION[0]]


def test_flag_with_privileged_fails_before_any_command(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged", "device": DEV, "disable_rshim": True}, [])
    assert result["failed"] is True
    assert "disable_rshim apply only with state=restricted" in result["msg"]
    assert result["cmd"] == []


def test_host_side_refusal_names_the_fix(monkeypatch, capsys):
    out = "-E- There is only a single host, it cannot restrict itself\n"
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV}, [
        (Q, 0, PRIVILEGED, ""), (R, 1, "-I- preparing configuration file...Done!\n" + out, "")])
    assert result["failed"] is True
    assert result["msg"] == ("set host privilege of %s to RESTRICTED with mlxprivhost failed: %s; mlxprivhost "
                             "changes the host level only from the BlueField's Arm side: run this task on the DPU "
                             "(inventory group dpus), not on the GPU host" % (DEV, out.strip()))
    assert result["rc"] == 1
    assert result["cmd"] == [Q, R]


def test_lift_from_the_host_side_names_the_fix(monkeypatch, capsys):
    out = ("-I- preparing configuration file...Done!\n-I- configuring device...Failed\n"
           "-E- Removing the restriction only effective on the ARM side\n")
    result = run_module(monkeypatch, capsys, {"state": "privileged", "device": DEV}, [
        (Q, 0, RESTRICTED, ""), (P, 1, out, "")])
    assert result["failed"] is True
    assert "Removing the restriction only effective on the ARM side; mlxprivhost changes" in result["msg"]


def test_other_tool_failure_has_no_side_hint(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV}, [
        (Q, 0, PRIVILEGED, ""), (R, 1, "", "mstconfig: device busy\n")])
    assert result["failed"] is True
    assert result["msg"].endswith("failed: exit status 1: mstconfig: device busy")


def test_failed_word_with_rc_0_fails(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV}, [
        (Q, 0, PRIVILEGED, ""), (R, 0, "-I- preparing configuration file...Done!\n-I- configuring device...Failed\n",
                                 "")])
    assert result["failed"] is True
    assert result["msg"].endswith("failed: the tool did not print 'Done!'")


def test_level_not_read_back_fails(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged", "device": DEV}, [
        (Q, 0, RESTRICTED, ""), (P, 0, DONE, ""), (Q, 0, RESTRICTED, "")])
    assert result["failed"] is True
    assert result["msg"].endswith("failed: read back level=RESTRICTED")


def test_flag_not_read_back_fails(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV, "disable_rshim": True}, [
        (Q, 0, PRIVILEGED, ""), (R + ["--disable_rshim"], 0, DONE, ""), (Q, 0, RESTRICTED, "")])
    assert result["failed"] is True
    assert result["msg"].endswith("failed: read back disable_rshim=False")


def test_query_without_flags_fails_naming_the_flag(monkeypatch, capsys):
    text = PRIVILEGED.split("\n\nPort", maxsplit=1)[0] + "\n"
    result = run_module(monkeypatch, capsys, {"state": "privileged", "device": DEV}, [(Q, 0, text, "")])
    assert result["failed"] is True
    assert "'disable_rshim' is None, expected TRUE or FALSE" in result["msg"]


def test_garbage_query_fails_with_the_output(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged", "device": DEV}, [(Q, 0, "%%%%\n", "")])
    assert result["failed"] is True
    assert result["msg"].startswith("query host privilege of %s with mlxprivhost failed:" % DEV)
    assert result["stdout"] == "%%%%\n"


# --- issue 18 (2): mstflint's mstprivhost takes a PCI address, never the /dev/mst name mst status -v lists ---------
# Real mstprivhost (Debian mstflint 4.21) given an MST device file: "-E- Unknown device '/dev/mst/...'!", rc 1.
PCI = "0000:03:00.0"
MQ = ["mstprivhost", "-d", PCI, "q"]


def test_mstprivhost_without_a_device_uses_the_pci_address_mst_lists(monkeypatch, capsys):
    """Before the fix the /dev/mst name went to the tool (and the program was always mlxprivhost)."""
    result = run_module(monkeypatch, capsys, {"state": "privileged"}, [
        MST, (MQ, 0, RESTRICTED, ""), (["mstprivhost", "-d", PCI, "p"], 0, DONE, ""), (MQ, 0, PRIVILEGED, ""),
        (["mstprivhost", "-v"], 0, "mstprivhost 1.0.0, mstflint 4.21.0, built on Aug 17 2022\n", "")],
        installed=("mst", "mstprivhost"))
    assert result["changed"] is True
    assert result["device"] == PCI
    assert result["level"] == "PRIVILEGED"
    assert result["tool_version"].startswith("mstprivhost 1.0.0")


def test_mft_mlxprivhost_keeps_the_mst_device(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged"}, [
        MST, (Q, 0, PRIVILEGED, ""), VERSION], installed=("mst", "mlxprivhost", "mstprivhost"))
    assert result["changed"] is False
    assert result["device"] == DEV


def test_mstprivhost_refuses_an_mst_device_file_before_running(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV}, [],
                        installed=("mstprivhost",))
    assert result["failed"] is True
    assert result["msg"].startswith("mstprivhost cannot open the MST device file %s" % DEV)
    assert "PCI address" in result["msg"]
    assert result["cmd"] == []


def test_mstprivhost_without_mst_and_no_device_names_the_fix(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "restricted"}, [(MST[0], 127, "", "")],
                        installed=("mstprivhost",))
    assert result["failed"] is True
    assert "set device to the card's PCI address" in result["msg"]
