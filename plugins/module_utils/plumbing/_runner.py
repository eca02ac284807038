# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The command runner every bluefleet module uses.

- Commands are argv lists (never shell strings), looked up on PATH of the module's environment.
- The child gets ``LC_ALL=C`` (and ``LANG=C``) so tools print their untranslated layout.
- Every call has a timeout. ``AnsibleModule.run_command`` (ansible-core 2.19) has no timeout
  argument, so the runner uses ``subprocess.run(..., timeout=...)`` itself.
- Every argv tried is appended to ``runner.cmd`` so modules can return it as ``cmd``.
- A tool that is not installed is a result, not an exception: rc 127 and ``missing`` set, the
  same status a shell gives (``tool_missing()`` tells it from other failures).
- A timeout is rc 124 (the status coreutils ``timeout`` uses) with ``timed_out`` set.
- MFT tools sometimes print ``-E- ...`` and exit 0; ``error_reason()`` treats that as an error.
- ``version_line()`` asks a tool for its version and keeps the first line it prints (modules return
  it as ``tool_version``).

No AnsibleModule import: modules build a ToolRunner and pass it to their logic, tests pass a fake.
"""

from __future__ import annotations

import os
import shutil
import subprocess

RC_MISSING = 127
RC_TIMEOUT = 124
DEFAULT_TIMEOUT = 60


class CommandResult:
    """One finished (or not started) command: ``rc``, ``stdout``, ``stderr``, ``argv``, ``missing``, ``timed_out``.

    Unpacks like the tuple ``run_command`` returns: ``rc, out, err = runner.run([...])``.
    """

    __slots__ = ("argv", "rc", "stdout", "stderr", "missing", "timed_out")

    def __init__(self, argv, rc, stdout, stderr, missing=False, timed_out=False):
        self.argv = list(argv)
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.missing = bool(missing)
        self.timed_out = bool(timed_out)

    def __iter__(self):
        return iter((self.rc, self.stdout, self.stderr))

    def __repr__(self):
        return "CommandResult(argv=%r, rc=%r, missing=%r, timed_out=%r)" % (
            self.argv, self.rc, self.missing, self.timed_out)

    def as_dict(self):
        """What a module passes to ``fail_json`` about this command."""
        return {"cmd": self.argv, "rc": self.rc, "stdout": self.stdout, "stderr": self.stderr}


def tool_missing(result):
    """True when the command could not run because the program is not installed."""
    return result.missing or result.rc == RC_MISSING


def error_reason(result):
    """Why a finished command failed, as one line, or None when it succeeded.

    A non-zero rc fails; so does rc 0 with an MFT error line (``-E- ...``) on stdout or stderr.
    """
    if result.missing:
        return "%s not found on PATH" % result.argv[0]
    if result.timed_out:
        return result.stderr.strip() or "timed out"
    for line in (result.stdout + "\n" + result.stderr).splitlines():
        if line.lstrip().startswith("-E-"):
            return line.strip()
    if result.rc != 0:
        text = (result.stderr.strip() or result.stdout.strip()).splitlines()
        last = text[-1].strip() if text else "no output"
        return "exit status %d: %s" % (result.rc, last)
    return None


def version_line(runner, argv):
    """First non-blank stdout line of ``argv`` (a tool's version option), or None.

    None when the tool is missing, fails (``error_reason()``), or prints nothing on stdout.
    """
    result = runner.run(list(argv))
    if error_reason(result):
        return None
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    return lines[0] if lines else None


class RunOnce:
    """A runner for read-only queries that runs each argv at most once and answers a repeat with the first result
    (a module whose sections ask the same tool for its version: dpu_info's tool_versions and tools)."""

    def __init__(self, runner):
        self.runner = runner
        self.results = {}

    def run(self, argv, **kwargs):
        key = tuple(argv)
        if key not in self.results:
            self.results[key] = self.runner.run(list(argv), **kwargs)
        return self.results[key]

    def which(self, program):
        return self.runner.which(program)


class ToolRunner:
    """Run tools with a fixed environment and timeout and remember every argv.

    ``environ``: the environment to start from (default: this process's); ``LC_ALL=C`` and
    ``LANG=C`` always win. ``which`` finds a program on that environment's PATH.
    """

    def __init__(self, timeout=DEFAULT_TIMEOUT, environ=None):
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds, got %r" % (timeout,))
        self.timeout = timeout
        env = dict(os.environ if environ is None else environ)
        env["LC_ALL"] = "C"
        env["LANG"] = "C"
        self.environ = env
        self.cmd = []

    def which(self, program):
        """Full path of ``program`` on the runner's PATH, or None."""
        return shutil.which(program, path=self.environ.get("PATH", os.defpath))

    def run(self, argv, timeout=None):
        """Run ``argv`` (a list of str); return a CommandResult. Never raises for tool failures."""
        if isinstance(argv, (str, bytes)) or not argv:
            raise TypeError("argv must be a non-empty list of strings, got %r" % (argv,))
        argv = [str(a) for a in argv]
        self.cmd.append(list(argv))
        limit = self.timeout if timeout is None else timeout
        path = self.which(argv[0]) if os.sep not in argv[0] else argv[0]
        if path is None:
            return CommandResult(argv, RC_MISSING, "", "%s: command not found" % argv[0], missing=True)
        try:
            proc = subprocess.run([path] + argv[1:], env=self.environ, capture_output=True, timeout=limit,
                                  stdin=subprocess.DEVNULL, check=False)
        except FileNotFoundError:
            return CommandResult(argv, RC_MISSING, "", "%s: command not found" % argv[0], missing=True)
        except subprocess.TimeoutExpired as exc:
            out = _text(exc.stdout)
            err = _text(exc.stderr)
            msg = "%s timed out after %s s" % (argv[0], limit)
            return CommandResult(argv, RC_TIMEOUT, out, (err + "\n" + msg).strip(), timed_out=True)
        return CommandResult(argv, proc.returncode, _text(proc.stdout), _text(proc.stderr))


def _text(data):
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return data
