"""The shared command runner: argv lists, LC_ALL=C, timeout, missing tools, cmd recording."""

from __future__ import annotations

import sys

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import (
    RC_MISSING,
    RC_TIMEOUT,
    CommandResult,
    ToolRunner,
    error_reason,
    tool_missing,
)


def _script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!%s\n%s" % (sys.executable, body))
    path.chmod(0o755)
    return path


@pytest.fixture
def env(tmp_path):
    return {"PATH": str(tmp_path), "LC_ALL": "de_DE.UTF-8", "LANG": "de_DE.UTF-8", "KEEP": "1"}


def test_runs_argv_with_lc_all_c_and_records_cmd(tmp_path, env):
    _script(tmp_path, "showenv", "import os, sys\nprint(os.environ['LC_ALL'], os.environ['LANG'], "
                                 "os.environ['KEEP'], sys.argv[1:])\nsys.stderr.write('warn\\n')\n")
    runner = ToolRunner(timeout=20, environ=env)
    rc, out, err = runner.run(["showenv", "a b", "-c"])
    assert (rc, out, err) == (0, "C C 1 ['a b', '-c']\n", "warn\n")
    assert runner.cmd == [["showenv", "a b", "-c"]]
    runner.run(["showenv"])
    assert runner.cmd == [["showenv", "a b", "-c"], ["showenv"]]


def test_missing_tool_is_a_result_not_an_exception(env):
    runner = ToolRunner(environ=env)
    result = runner.run(["no-such-tool-xyz", "q"])
    assert result.rc == RC_MISSING
    assert result.missing and tool_missing(result)
    assert error_reason(result) == "no-such-tool-xyz not found on PATH"
    assert runner.cmd == [["no-such-tool-xyz", "q"]]


def test_nonzero_rc_and_reason(tmp_path, env):
    _script(tmp_path, "fails", "import sys\nprint('partial')\nsys.stderr.write('-E- No such device\\n')\nsys.exit(3)\n")
    result = ToolRunner(environ=env).run(["fails"])
    assert result.rc == 3 and not tool_missing(result)
    assert error_reason(result) == "-E- No such device"


def test_rc_zero_with_mft_error_line_is_an_error(tmp_path, env):
    _script(tmp_path, "liar", "print('-E- Failed to open device')\n")
    result = ToolRunner(environ=env).run(["liar"])
    assert result.rc == 0
    assert error_reason(result) == "-E- Failed to open device"


def test_rc_nonzero_without_text_says_so(tmp_path, env):
    _script(tmp_path, "quiet", "import sys\nsys.exit(2)\n")
    assert error_reason(ToolRunner(environ=env).run(["quiet"])) == "exit status 2: no output"


def test_success_has_no_reason(tmp_path, env):
    _script(tmp_path, "ok", "print('fine')\n")
    assert error_reason(ToolRunner(environ=env).run(["ok"])) is None


def test_timeout_is_rc_124(tmp_path, env):
    _script(tmp_path, "hang", "import time\nprint('started', flush=True)\ntime.sleep(30)\n")
    result = ToolRunner(timeout=0.5, environ=env).run(["hang"])
    assert result.rc == RC_TIMEOUT and result.timed_out
    assert "hang timed out after 0.5 s" in error_reason(result)


def test_shell_string_is_refused(env):
    runner = ToolRunner(environ=env)
    with pytest.raises(TypeError, match="argv must be a non-empty list"):
        runner.run("mst status -v")
    with pytest.raises(TypeError):
        runner.run([])


def test_bad_timeout_is_refused():
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        ToolRunner(timeout=0)


def test_default_environment_is_this_process(monkeypatch):
    monkeypatch.setenv("BLUEFLEET_RUNNER_PROBE", "yes")
    runner = ToolRunner()
    assert runner.environ["BLUEFLEET_RUNNER_PROBE"] == "yes"
    assert runner.environ["LC_ALL"] == "C"


def test_result_as_dict():
    result = CommandResult(["flint", "-d", "x", "q"], 1, "o", "e")
    assert result.as_dict() == {"cmd": ["flint", "-d", "x", "q"], "rc": 1, "stdout": "o", "stderr": "e"}
