"""``bluefleet parse``: the contract in docs/parse-contract.md (exit codes, one-line errors, --list, stdin)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bluefleet import parse

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "parsers"
RELEASE = FIXTURES / "mlnx-release" / "bf3-mlnx-release-bf-bundle-2.9.2.txt"


class _Stdin:
    def __init__(self, data: bytes):
        self.buffer = io.BytesIO(data)


def _run(capsys, argv, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", _Stdin(stdin))
    rc = parse.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_list_prints_every_kind_once(capsys):
    rc, out, err = _run(capsys, ["--list"])
    assert rc == 0 and err == ""
    kinds = out.splitlines()
    assert kinds == sorted(set(kinds))
    assert {"mlnx-release", "bfver", "mlxbf-bootctl"} <= set(kinds)
    assert set(kinds) == set(parse.discover_parsers())


def test_file_with_provenance_header(capsys):
    rc, out, err = _run(capsys, ["mlnx-release", str(RELEASE)])
    assert (rc, err) == (0, "")
    data = json.loads(out)
    assert data["release"] == "bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod"
    assert data["doca_version"] == "2.9.2"
    assert data["bsp_version"] is None


def test_stdin_dash_and_default(capsys, monkeypatch):
    for argv in (["mlnx-release", "-"], ["mlnx-release"]):
        rc, out, err = _run(capsys, argv, stdin=b"DOCA_1.3.0_BSP_3.9.0_Ubuntu_20.04-6.signed", monkeypatch=monkeypatch)
        assert (rc, err) == (0, "")
        assert json.loads(out)["bsp_version"] == "3.9.0"


def test_unparseable_is_exit_2_one_line_naming_kind_and_line(capsys, monkeypatch):
    text = b"BlueField ATF version: v2.2\nthis is not bfver\n"
    rc, out, err = _run(capsys, ["bfver", "-"], stdin=text, monkeypatch=monkeypatch)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.endswith("\n")
    assert "bfver" in err and "line 2" in err and "this is not bfver" in err
    assert "Traceback" not in err


def test_empty_input_is_exit_2(capsys, monkeypatch):
    rc, out, err = _run(capsys, ["mlxbf-bootctl", "-"], stdin=b"", monkeypatch=monkeypatch)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "mlxbf-bootctl" in err and "empty" in err


def test_unknown_kind_hints_at_list(capsys):
    rc, out, err = _run(capsys, ["no-such-tool", str(RELEASE)])
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "no-such-tool" in err and "--list" in err


def test_missing_file_is_named(capsys, tmp_path):
    missing = tmp_path / "nothing-here.txt"
    rc, out, err = _run(capsys, ["mlnx-release", str(missing)])
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert str(missing) in err


@pytest.mark.parametrize("argv", [[], ["--bogus"], ["mlnx-release", "a", "b"]])
def test_bad_usage_is_exit_2(capsys, argv):
    rc, out, err = _run(capsys, argv)
    assert rc == 2 and out == "" and err.count("\n") == 1


def test_help_is_exit_0(capsys):
    rc, out, dummy = _run(capsys, ["--help"])
    assert rc == 0 and "bluefleet parse KIND" in out


def test_parser_bug_is_one_line_not_a_traceback(capsys, monkeypatch):
    def broken(text):
        raise KeyError("oops")

    real = parse.discover_parsers()
    monkeypatch.setattr(parse, "discover_parsers", lambda: {**real, "mlnx-release": broken})
    rc, out, err = _run(capsys, ["mlnx-release", str(RELEASE)])
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "mlnx-release" in err and "KeyError" in err and "bug" in err and "Traceback" not in err


def test_undecodable_bytes_do_not_crash(capsys, monkeypatch):
    rc, out, err = _run(capsys, ["mlnx-release", "-"], stdin=b"\xff\xfe\x00garbage\n", monkeypatch=monkeypatch)
    assert rc == 2 and err.count("\n") == 1 and "mlnx-release" in err


def test_strip_header_leaves_tool_output_alone():
    assert parse.strip_header("# not a header\n# ---\nx") == "# not a header\n# ---\nx"
    assert parse.strip_header("# command: x\n# source: y\n# ---\nbody\n") == "body\n"


def test_console_entry_point(tmp_path):
    """The installed command goes through cli.py to parse.main (a real subprocess, real exit code)."""
    proc = subprocess.run(
        [sys.executable, "-m", "bluefleet.cli", "parse", "mlnx-release", str(RELEASE)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["bundle_version"] == "2.9.2-31"
    bad = tmp_path / "bad.txt"
    bad.write_text("two\nlines\n")
    proc = subprocess.run(
        [sys.executable, "-m", "bluefleet.cli", "parse", "mlnx-release", str(bad)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "line 2" in proc.stderr
