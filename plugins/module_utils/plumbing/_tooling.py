# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every bluefleet module does around a tool call: the one error type, run-and-parse, common options.

- ``ToolError``: why a module fails. ``msg`` is the whole message (``"<verb> <object> failed: <reason>"``),
  ``result`` the CommandResult whose output explains it (or None), ``extra`` more return keys for
  ``fail_json``. ``main()`` of each module turns it into ``fail_json``; ``details()`` gives the keys.
- ``run_tool()``: run an argv; a non-zero rc, an MFT ``-E-`` line with rc 0, a timeout or a missing tool
  (unless allowed) raise ToolError ``"<what> failed: <reason>"``.
- ``parse_output()``: a parser over a command's stdout; its ParseError becomes ToolError ``"<what> failed: ..."``.
- ``ToolReader``: for the read-only ``*_info`` modules: a missing tool is remembered and answered with
  None (the section says ``available: false``) instead of failing, every tool that answered is listed,
  and a ParseError asks the user to report the output.
- The argument-spec fragments of ``_argspec.py`` (``timeout_spec``, ``side_spec``, ``fs_root_spec``),
  re-exported for the modules that import them from here, and the check that a number of seconds is
  positive (``nonpositive_seconds``).
- ``sha256_of()`` / ``is_sha256()`` for the modules that check a file before writing it to a card.

No AnsibleModule import: modules pass what they need.
"""

from __future__ import annotations

import hashlib
import time

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern, ParseError
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import (
    fs_root_spec,
    side_spec,
    timeout_spec,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import (
    error_reason,
    tool_missing,
    version_line,
)

# The option specs are re-exported from _argspec, where they live, for the modules that import them from here.
__all__ = ["ToolError", "ToolReader", "fs_root_spec", "is_sha256", "nonpositive_seconds", "parse_output", "run_module",
           "run_tool", "run_until_listening", "sha256_of", "side_spec", "timeout_spec", "unavailable",
           "with_change_time", "without_unasked_diff"]

_SHA256_RE = LazyPattern(r"^[0-9a-fA-F]{64}$")


def nonpositive_seconds(params, label, keys=("timeout",)):
    """The failure message for the first of ``keys`` that is not a positive number of seconds, or None."""
    for key in keys:
        if params[key] <= 0:
            return "%s failed: %s must be a positive number of seconds, got %d" % (label, key, params[key])
    return None


class ToolError(Exception):
    """A module's failure: ``msg``, the command ``result`` that explains it (or None) and ``extra`` return keys."""

    def __init__(self, msg, result=None, **extra):
        super().__init__(msg)
        self.msg = msg
        self.result = result
        self.extra = extra

    def details(self, with_cmd=True):
        """Keys for ``fail_json``: the failing command's ``cmd`` (unless ``with_cmd`` is false), ``rc``,
        ``stdout``, ``stderr`` and the ``extra`` keys."""
        out = self.result.as_dict() if self.result is not None else {}
        if not with_cmd:
            out.pop("cmd", None)
        out.update(self.extra)
        return out


def run_tool(runner, argv, what, allow_missing=False, hint="", missing_hint=""):
    """Run ``argv``; return its CommandResult, or None for a missing tool when ``allow_missing``.

    A failure raises ToolError ``"<what> failed: <reason><hint>"``; ``missing_hint`` is added too when the
    tool is not installed.
    """
    result = runner.run(list(argv))
    if allow_missing and tool_missing(result):
        return None
    reason = error_reason(result)
    if reason:
        if tool_missing(result):
            hint = missing_hint + hint
        raise ToolError("%s failed: %s%s" % (what, reason, hint), result)
    return result


def run_until_listening(runner, argv, refused, connect_wait, timeout=None, between=None):
    """Run a client's ``argv``; while ``refused(result)`` says its server (started in the background, on a host that
    may be busy) is not listening yet, run it again once a second, up to ``connect_wait`` seconds after the first
    try. ``between()`` runs before each new try. Returns the last result: still refused when the wait ran out."""
    give_up = time.monotonic() + connect_wait
    while True:
        result = runner.run(argv, timeout=timeout)
        if not refused(result) or time.monotonic() >= give_up:
            return result
        time.sleep(1)
        if between is not None:
            between()


def parse_output(parser, result, what):
    """``parser(result.stdout)``; a ParseError raises ToolError ``"<what> failed: <parse error>"``."""
    try:
        return parser(result.stdout)
    except ParseError as exc:
        raise ToolError("%s failed: %s" % (what, exc), result) from exc


class ToolReader:
    """Runs read-only queries for the ``*_info`` modules.

    ``missing``: tools not found on PATH (each tried once; later calls return None at once).
    ``used``: tools that ran, in first-use order (whose versions a module may ask for).
    """

    def __init__(self, runner):
        self.runner = runner
        self.missing = []
        self.used = []

    def run(self, argv, what, allow_text=None):
        """Run ``argv``; None when the tool is missing; raise ToolError when it fails.

        ``allow_text``: a failure whose output contains this text is returned, not raised.
        """
        tool = argv[0]
        if tool in self.missing:
            return None
        result = self.runner.run(list(argv))
        if tool_missing(result):
            self.missing.append(tool)
            return None
        if tool not in self.used:
            self.used.append(tool)
        reason = error_reason(result)
        if reason and not (allow_text and allow_text in result.stdout + result.stderr):
            raise ToolError("%s failed: %s" % (what, reason), result)
        return result

    @staticmethod
    def parse(parsers, kind, result, what):
        """``parsers[kind](result.stdout)``; a ParseError names the parser kind to report the output with."""
        try:
            return parsers[kind](result.stdout)
        except ParseError as exc:
            raise ToolError("parse %s output failed: %s; the tool printed something this parser does not know: "
                            "run `bluefleet parse %s` on it and report it" % (what, exc, kind), result) from exc

    @staticmethod
    def missing_reason(tool):
        return "%s not found on PATH" % tool


def unavailable(reason):
    """A section the module could not gather, and why."""
    return {"available": False, "reason": reason}


def is_sha256(text):
    """True for 64 hex digits (as ``sha256sum`` prints a digest)."""
    return bool(_SHA256_RE.match(text))


def sha256_of(path):
    """Hex sha256 of the file at ``path`` (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_module(module, label, runner_class, work, version_argv=None, predicts=None):
    """The end of a tool-driven module's ``main()``, written once.

    Checks the ``timeout`` option, runs ``work(runner)`` with a fresh ``runner_class`` (the module's
    ``ToolRunner``, passed in so tests can put a fake in its place), turns a ToolError
    into ``fail_json`` (with every argv run so far), adds ``tool_version`` when ``version_argv(result)``
    gives the argv that prints it, and ``cmd``, drops ``diff`` unless the user ran with ``--diff``, and in
    check mode says whether the resource keys are the predicted after-state (``check_mode_prediction``:
    ``predicts``; False for a module whose outcome is only known after it acts; None, for read-only
    modules, leaves the key out), then ``exit_json``.
    """
    params = module.params
    problem = nonpositive_seconds(params, label)
    if problem:
        module.fail_json(msg=problem)
    runner = runner_class(timeout=params["timeout"])
    try:
        result = work(runner)
    except ToolError as exc:
        module.fail_json(msg=exc.msg, cmd=[list(a) for a in runner.cmd], **exc.details(with_cmd=False))
    if version_argv is not None:
        result["tool_version"] = version_line(runner, version_argv(result))
    result["cmd"] = [list(a) for a in runner.cmd]
    if module.check_mode and predicts is not None:
        result.setdefault("check_mode_prediction", bool(predicts))
    module.exit_json(**without_unasked_diff(module, with_change_time(module, result)))


def with_change_time(module, result):
    """``result`` with the fact ``bluefleet_changed_at`` (now, by the clock of the machine the module runs on) when
    the module changed something there, not in check mode: it tells a play that a read of the node made earlier in
    the run (dpu_info's ``read_at``) no longer holds. Modules that act from the controller (the BMC modules) leave
    it out: their clock is not the node's."""
    if result.get("changed") and not module.check_mode:
        facts = dict(result.get("ansible_facts") or {}, bluefleet_changed_at=time.time())
        result = dict(result, ansible_facts=facts)
    return result


def without_unasked_diff(module, result):
    """``result`` without its ``diff`` key unless the user asked for one (``--diff``, ``diff: true``)."""
    if not getattr(module, "_diff", False):
        result.pop("diff", None)
    return result
