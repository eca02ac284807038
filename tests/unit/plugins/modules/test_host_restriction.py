"""host_restriction: exact ordered argv against recorded outputs.

Tool outputs:
* ``mlxprivhost -d DEV q`` PRIVILEGED: shared/corpus/mlxprivhost/bf2-query-privileged-fixture.txt (verbatim).
* RESTRICTED: no capture exists (corpus INDEX "Gaps"); the same layout with the level word the tool's source
  prints (shared/corpus/mlxprivhost/FORMAT-from-source.md).
* ``r`` / ``p`` print ``Done!`` (FORMAT-from-source.md).
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
RESTRICTED = PRIVILEGED.replace(": PRIVILEGED", ": RESTRICTED")

MST = (["mst", "status", "-v"], 0, MST_DPU, "")
Q = ["mlxprivhost", "-d", DEV, "q"]
VERSION = (["mlxprivhost", "-v"], 0, "mlxprivhost 4.30.0\n", "")


def run_module(monkeypatch, capsys, args, steps, check_mode=False):
    script = Script(steps)

    def factory(timeout, environ=None):
        return FakeRunner(script, environ, timeout)

    monkeypatch.setattr(host_restriction, "ToolRunner", factory)
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            host_restriction.main()
    result = json.loads(capsys.readouterr().out)
    assert not script.steps, "commands not run: %r" % (script.steps,)
    return result


def test_lift_restriction_runs_p_once_and_reads_back(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged"}, [
        MST, (Q, 0, RESTRICTED, ""), (["mlxprivhost", "-d", DEV, "p"], 0, "Done!\n", ""), (Q, 0, PRIVILEGED, ""),
        VERSION])
    assert result["changed"] is True
    assert result["device"] == DEV
    assert result["level"] == "PRIVILEGED"
    assert result["previous_level"] == "RESTRICTED"
    assert result["reset_required"] == "none"
    assert result["diff"] == {"before": {"level": "RESTRICTED"}, "after": {"level": "PRIVILEGED"}}
    assert result["tool_version"] == "mlxprivhost 4.30.0"
    assert result["cmd"] == [MST[0], Q, ["mlxprivhost", "-d", DEV, "p"], Q, VERSION[0]]


def test_restrict_with_device_given_skips_discovery(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV}, [
        (Q, 0, PRIVILEGED, ""), (["mlxprivhost", "-d", DEV, "r"], 0, "Done!\n", ""), (Q, 0, RESTRICTED, ""),
        VERSION])
    assert result["changed"] is True
    assert result["level"] == "RESTRICTED"


def test_already_at_level_is_no_change(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged", "device": DEV}, [(Q, 0, PRIVILEGED, ""), VERSION])
    assert result["changed"] is False
    assert result["diff"] == {"before": {"level": "PRIVILEGED"}, "after": {"level": "PRIVILEGED"}}
    assert result["cmd"] == [Q, VERSION[0]]


def test_check_mode_reports_the_change_and_writes_nothing(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV},
                        [(Q, 0, PRIVILEGED, ""), VERSION], check_mode=True)
    assert result["changed"] is True
    assert result["level"] == "PRIVILEGED"
    assert result["diff"]["after"] == {"level": "RESTRICTED"}
    assert ["mlxprivhost", "-d", DEV, "r"] not in result["cmd"]


def test_tool_failure_on_the_host_side_names_the_fix(monkeypatch, capsys):
    err = "-E- Failed: host restriction can only be configured from the embedded Arm (DPU side)\n"
    result = run_module(monkeypatch, capsys, {"state": "restricted", "device": DEV}, [
        (Q, 0, PRIVILEGED, ""), (["mlxprivhost", "-d", DEV, "r"], 1, err, "")])
    assert result["failed"] is True
    assert result["msg"] == ("set host privilege of %s to RESTRICTED with mlxprivhost failed: %s; run it on the "
                             "DPU's Arm side, not on the GPU host" % (DEV, err.strip()))
    assert result["rc"] == 1
    assert result["cmd"] == [Q, ["mlxprivhost", "-d", DEV, "r"]]


def test_level_not_read_back_fails(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged", "device": DEV}, [
        (Q, 0, RESTRICTED, ""), (["mlxprivhost", "-d", DEV, "p"], 0, "Done!\n", ""), (Q, 0, RESTRICTED, "")])
    assert result["failed"] is True
    assert result["msg"].endswith("failed: the level read back is RESTRICTED")


def test_garbage_query_fails_with_the_output(monkeypatch, capsys):
    result = run_module(monkeypatch, capsys, {"state": "privileged", "device": DEV}, [(Q, 0, "%%%%\n", "")])
    assert result["failed"] is True
    assert result["msg"].startswith("query host privilege of %s with mlxprivhost failed:" % DEV)
    assert result["stdout"] == "%%%%\n"
