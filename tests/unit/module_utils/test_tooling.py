"""The module plumbing shared by every module: ToolError, run_tool, parse_output, ToolReader, option
fragments, sha256 helpers (``_tooling``), and the runner's ``version_line``."""

from __future__ import annotations

import hashlib

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import (
    RC_MISSING,
    RC_TIMEOUT,
    CommandResult,
    version_line,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    ToolReader,
    fs_root_spec,
    is_sha256,
    nonpositive_seconds,
    parse_output,
    run_tool,
    sha256_of,
    side_spec,
    timeout_spec,
    unavailable,
)


class Runner:
    """Answers each argv from ``answers`` ({tuple(argv): (rc, stdout, stderr)}); others are missing tools."""

    def __init__(self, answers=None, timed_out=()):
        self.answers = {tuple(k): v for k, v in (answers or {}).items()}
        self.timed_out = set(timed_out)
        self.cmd = []

    def run(self, argv, timeout=None):
        self.cmd.append(list(argv))
        key = tuple(argv)
        if key in self.timed_out:
            return CommandResult(argv, RC_TIMEOUT, "", "%s timed out after 1 s" % argv[0], timed_out=True)
        if key not in self.answers:
            return CommandResult(argv, RC_MISSING, "", "%s: command not found" % argv[0], missing=True)
        rc, out, err = self.answers[key]
        return CommandResult(argv, rc, out, err)


def _words(text):
    if text.strip() == "garbage":
        raise ParseError("words", "no words here", 1, text.strip())
    return text.split()


# -- ToolError -------------------------------------------------------------------------------------------


def test_tool_error_details_carry_the_failing_command_and_extra_keys():
    result = CommandResult(["flint", "-d", "x", "q"], 3, "out", "err")
    exc = ToolError("query firmware of x failed: boom", result, firmware=None, interrupted=True)
    assert str(exc) == exc.msg == "query firmware of x failed: boom"
    assert exc.details() == {"cmd": ["flint", "-d", "x", "q"], "rc": 3, "stdout": "out", "stderr": "err",
                             "firmware": None, "interrupted": True}
    assert exc.details(with_cmd=False) == {"rc": 3, "stdout": "out", "stderr": "err", "firmware": None,
                                           "interrupted": True}


def test_tool_error_without_a_command_has_only_extra_keys():
    assert ToolError("plan the reset failed: x").details() == {}
    assert ToolError("m", rshim={"path": "/dev/rshim0"}).details(with_cmd=False) == {"rshim": {"path": "/dev/rshim0"}}


# -- run_tool / parse_output -------------------------------------------------------------------------


def test_run_tool_returns_the_result_of_a_good_command():
    runner = Runner({("mst", "status", "-v"): (0, "text\n", "")})
    result = run_tool(runner, ("mst", "status", "-v"), "find the card with mst status -v")
    assert (result.rc, result.stdout) == (0, "text\n")
    assert runner.cmd == [["mst", "status", "-v"]]


@pytest.mark.parametrize("answer, reason", [
    ((2, "", "-E- Device not found\n"), "-E- Device not found"),
    ((0, "-E- Failed to open device\n", ""), "-E- Failed to open device"),
    ((1, "", "first\nlast words\n"), "exit status 1: last words"),
])
def test_run_tool_fails_on_rc_and_on_error_lines_with_rc_0(answer, reason):
    runner = Runner({("flint", "-d", "x", "q"): answer})
    with pytest.raises(ToolError) as caught:
        run_tool(runner, ["flint", "-d", "x", "q"], "query firmware of x", hint="; do this")
    assert caught.value.msg == "query firmware of x failed: %s; do this" % reason
    assert caught.value.result.rc == answer[0]


def test_run_tool_missing_tool_fails_with_both_hints_or_is_none_when_allowed():
    runner = Runner()
    with pytest.raises(ToolError) as caught:
        run_tool(runner, ["mlxconfig", "-d", "x", "-e", "q"], "query NV configuration of x",
                 hint="; always", missing_hint="; install MFT")
    assert caught.value.msg == "query NV configuration of x failed: mlxconfig not found on PATH; install MFT; always"
    assert run_tool(runner, ["mlxfwreset", "-d", "x", "q"], "query reset levels of x", allow_missing=True) is None
    assert runner.cmd[-1] == ["mlxfwreset", "-d", "x", "q"]


def test_run_tool_missing_hint_is_not_added_to_other_failures():
    runner = Runner({("mst", "status", "-v"): (1, "", "no\n")})
    with pytest.raises(ToolError) as caught:
        run_tool(runner, ["mst", "status", "-v"], "find the card", missing_hint="; install MFT")
    assert caught.value.msg == "find the card failed: exit status 1: no"


def test_run_tool_timeout_fails_even_when_missing_tools_are_allowed():
    runner = Runner(timed_out=[("flint", "-d", "x", "q")])
    with pytest.raises(ToolError, match=r"^query firmware of x failed: flint timed out after 1 s$"):
        run_tool(runner, ["flint", "-d", "x", "q"], "query firmware of x", allow_missing=True)


def test_parse_output_turns_parse_errors_into_tool_errors():
    good = CommandResult(["t"], 0, "a b\n", "")
    assert parse_output(_words, good, "read t") == ["a", "b"]
    bad = CommandResult(["t"], 0, "garbage\n", "")
    with pytest.raises(ToolError) as caught:
        parse_output(_words, bad, "read t")
    assert caught.value.msg == "read t failed: cannot parse words output at line 1 ('garbage'): no words here"
    assert caught.value.result is bad
    assert isinstance(caught.value.__cause__, ParseError)


# -- ToolReader --------------------------------------------------------------------------------------


def test_tool_reader_remembers_missing_tools_and_asks_them_once():
    reader = ToolReader(Runner({("lsmod",): (0, "Module\n", "")}))
    assert reader.run(["flint", "-d", "x", "q"], "query firmware") is None
    assert reader.run(["flint", "-d", "y", "q"], "query firmware") is None
    assert reader.run(["lsmod"], "list modules").stdout == "Module\n"
    assert reader.missing == ["flint"]
    assert reader.used == ["lsmod"]
    assert reader.runner.cmd == [["flint", "-d", "x", "q"], ["lsmod"]]
    assert reader.missing_reason("flint") == "flint not found on PATH"


def test_tool_reader_failure_raises_unless_the_output_carries_the_allowed_text():
    reader = ToolReader(Runner({("nvidia-smi",): (6, "No devices were found\n", "")}))
    assert reader.run(["nvidia-smi"], "list GPUs", allow_text="No devices were found").rc == 6
    with pytest.raises(ToolError, match=r"^list GPUs failed: exit status 6: No devices were found$"):
        reader.run(["nvidia-smi"], "list GPUs")
    assert reader.used == ["nvidia-smi"]


def test_tool_reader_parse_names_the_parser_to_report_with():
    parsers = {"words": _words}
    result = CommandResult(["t"], 0, "garbage", "")
    assert ToolReader.parse(parsers, "words", CommandResult(["t"], 0, "x y", ""), "t") == ["x", "y"]
    with pytest.raises(ToolError) as caught:
        ToolReader.parse(parsers, "words", result, "t -q")
    assert caught.value.msg.startswith("parse t -q output failed: cannot parse words output")
    assert caught.value.msg.endswith("run `bluefleet parse words` on it and report it")


# -- options, seconds, sha256 --------------------------------------------------------------------------


def test_option_fragments_are_fresh_dicts():
    assert timeout_spec(600) == {"type": "int", "default": 600}
    assert side_spec() == {"type": "str", "choices": ["auto", "host", "dpu"], "default": "auto"}
    assert fs_root_spec() == {"type": "path", "default": "/"}
    first = side_spec()
    first["choices"].append("x")
    assert side_spec()["choices"] == ["auto", "host", "dpu"]


def test_nonpositive_seconds_names_the_first_bad_key():
    params = {"timeout": 10, "ready_timeout": 0, "poll_interval": -1}
    assert nonpositive_seconds(params, "install BFB") is None
    assert nonpositive_seconds(params, "install BFB", ("timeout", "ready_timeout", "poll_interval")) == (
        "install BFB failed: ready_timeout must be a positive number of seconds, got 0")
    assert nonpositive_seconds({"timeout": -5}, "reset the card") == (
        "reset the card failed: timeout must be a positive number of seconds, got -5")


def test_unavailable():
    assert unavailable("flint not found on PATH") == {"available": False, "reason": "flint not found on PATH"}


def test_sha256_helpers(tmp_path):
    path = tmp_path / "image.bin"
    data = b"\x00\x01firmware" * 200000  # more than one 1 MiB block
    path.write_bytes(data)
    assert sha256_of(str(path)) == hashlib.sha256(data).hexdigest()
    assert is_sha256(hashlib.sha256(b"").hexdigest().upper())
    assert not is_sha256("abc")
    assert not is_sha256("g" * 64)


# -- version_line (in _runner) --------------------------------------------------------------------------


def test_version_line_is_the_first_non_blank_stdout_line_or_none():
    runner = Runner({
        ("mlxfwreset", "--version"): (0, "\n  mlxfwreset, mft 4.30.0-139  \nsecond\n", ""),
        ("quiet", "--version"): (0, " \n", ""),
        ("bad", "--version"): (1, "bad 1.0\n", "unknown option\n"),
        ("mft-error", "--version"): (0, "-E- no version\n", ""),
    })
    assert version_line(runner, ("mlxfwreset", "--version")) == "mlxfwreset, mft 4.30.0-139"
    assert version_line(runner, ["quiet", "--version"]) is None
    assert version_line(runner, ["bad", "--version"]) is None
    assert version_line(runner, ["mft-error", "--version"]) is None
    assert version_line(runner, ["absent", "--version"]) is None
    assert runner.cmd[0] == ["mlxfwreset", "--version"]
