"""scripts/run-phases.sh (what `make test` runs): one timing line per phase, failures keep their exit code."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run-phases.sh"
LINE = re.compile(r"^make test: (\S+) +(\d+)m (\d\d)s  (.+)$")


def run(tmp_path: Path, *phases: str, fail: dict[str, int] | None = None) -> tuple[int, list[tuple[str, str]], str]:
    """Run the script with a stand-in for make that logs each phase and exits with ``fail[phase]`` (else 0)."""
    log = tmp_path / "ran.txt"
    fake = tmp_path / "fake-make"
    cases = "".join("  %s) exit %d ;;\n" % (name, rc) for name, rc in (fail or {}).items())
    fake.write_text('#!/usr/bin/env bash\nphase=${@: -1}\necho "$phase" >> %s\ncase "$phase" in\n%s  *) exit 0 ;;\n'
                    "esac\n" % (log, cases))
    fake.chmod(0o755)
    proc = subprocess.run([str(SCRIPT), *phases], env=dict(os.environ, MAKE=str(fake)), capture_output=True,
                          text=True, timeout=60, check=False)
    rows = [(m.group(1), m.group(4)) for m in map(LINE.match, proc.stdout.splitlines()) if m]
    ran = log.read_text().split() if log.exists() else []
    wanted = [name for group in phases for name in group.split("+")]
    assert sorted(ran) == sorted(wanted), "every phase runs, even after a failure: %s" % ran
    if not any("+" in group for group in phases):
        assert ran == wanted, "phases run in the order given"
    return proc.returncode, rows, proc.stdout


def test_all_phases_pass(tmp_path):
    rc, rows, _log = run(tmp_path, "lint", "sanity", "unit")
    assert rc == 0
    assert rows == [("lint", "ok"), ("sanity", "ok"), ("unit", "ok"), ("wall", "ok")]


def test_a_failing_phase_fails_the_whole_with_its_code_and_timings_still_print(tmp_path):
    rc, rows, out = run(tmp_path, "lint", "sanity", "unit", "integration", fail={"sanity": 2, "integration": 1})
    assert rc == 2, out
    assert rows == [("lint", "ok"), ("sanity", "FAILED (rc 2)"), ("unit", "ok"), ("integration", "FAILED (rc 1)"),
                    ("wall", "FAILED (rc 2)")]


def test_phases_side_by_side_each_get_their_line_and_log(tmp_path):
    rc, rows, out = run(tmp_path, "lint+sanity", "unit", fail={"lint": 3})
    assert rc == 3, out
    assert rows == [("lint", "FAILED (rc 3)"), ("sanity", "ok"), ("unit", "ok"), ("wall", "FAILED (rc 3)")]
    assert "==== make lint (side by side with: lint sanity; the others' logs follow when all are done) ====" in out
    assert "==== make sanity (side by side with: lint sanity) ====" in out


def test_the_first_phase_of_a_group_streams_and_the_others_follow_whole(tmp_path):
    """The first phase's output comes while it runs (a CI log does not go quiet for a whole phase): phase a waits
    until the reader has seen its line, which a buffered log would never show in time. The other phase's log is
    printed once, whole, under its own heading, after the group."""
    seen = tmp_path / "seen"
    fake = tmp_path / "fake-make"
    fake.write_text('#!/usr/bin/env bash\nphase=${@: -1}\necho "$phase says hello"\n[ "$phase" = b ] && exit 0\n'
                    'for _ in $(seq 100); do [ -e %s ] && exit 0; sleep 0.1; done\nexit 7\n' % seen)
    fake.chmod(0o755)
    proc = subprocess.Popen([str(SCRIPT), "a+b"], env=dict(os.environ, MAKE=str(fake)), stdout=subprocess.PIPE,
                            text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.strip() == "a says hello":
            seen.touch()
    proc.wait(timeout=60)
    out = "".join(lines)
    assert proc.returncode == 0, out
    assert out.count("a says hello") == 1 and out.count("b says hello") == 1, out
    assert out.index("a says hello") < out.index("==== make b (side by side with: a b) ====") < \
        out.index("b says hello"), out


def test_side_by_side_phases_really_overlap(tmp_path):
    """Each of the two phases waits for the other's mark: run one after the other, both would time out."""
    fake = tmp_path / "fake-make"
    fake.write_text('#!/usr/bin/env bash\nphase=${@: -1}\ntouch %s/$phase.up\nother=a; [ "$phase" = a ] && other=b\n'
                    'for _ in $(seq 100); do [ -e %s/$other.up ] && exit 0; sleep 0.1; done\nexit 7\n'
                    % (tmp_path, tmp_path))
    fake.chmod(0o755)
    proc = subprocess.run([str(SCRIPT), "a+b"], env=dict(os.environ, MAKE=str(fake)), capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
