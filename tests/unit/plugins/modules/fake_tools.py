"""Fake tools for module tests: recorded outputs through a fake runner.

``fake_runner(answers, missing=())``: a stand-in for ``_runner.ToolRunner`` that answers each argv
from ``answers`` (``{tuple(argv): (rc, stdout, stderr) or a CommandResult}``), reports the programs
in ``missing`` as not installed (rc 127, like the real runner; ``which`` finds every other program) and
fails the test on any argv it was not told about.
``fixture_text(kind, name)``: the tool output of a parser fixture. (A module of its own, not the
conftest, so ``import fake_tools`` cannot pick up another folder's conftest.)
"""

from __future__ import annotations

from pathlib import Path

from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import RC_MISSING, CommandResult

from bluefleet.parse import strip_header

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "parsers"


def fixture_text(kind, name):
    """The tool output of a parser fixture (its provenance header removed)."""
    return strip_header((FIXTURES / kind / (name + ".txt")).read_text(encoding="utf-8"))


class FakeRunner:
    def __init__(self, answers, missing=()):
        self.answers = {tuple(k): v for k, v in answers.items()}
        self.missing = set(missing)
        self.cmd = []

    def which(self, program):
        return None if program in self.missing else "/usr/bin/" + program

    def run(self, argv, timeout=None):
        self.cmd.append(list(argv))
        if argv[0] in self.missing:
            return CommandResult(argv, RC_MISSING, "", "%s: command not found" % argv[0], missing=True)
        key = tuple(argv)
        if key not in self.answers:
            raise AssertionError("the module ran a command the test did not expect: %r" % (argv,))
        answer = self.answers[key]
        if isinstance(answer, CommandResult):
            return answer
        rc, out, err = answer
        return CommandResult(argv, rc, out, err)
