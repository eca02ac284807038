# ruff: noqa: UP031  (printf-style formats, as the rest of the twin)
"""Boot units: what systemd would start at boot, run by the twin after ``dpusim reboot`` / ``power-cycle``.

A unit counts when it is enabled for the default target the way ``systemctl enable`` does it:
``$ROOT/etc/systemd/system/multi-user.target.wants/NAME.service`` (a link to, or copy of, the unit file).
Of its ``[Service]`` section the twin honours ``EnvironmentFile=`` (``-`` prefix: optional), ``Environment=``
and ``ExecStart=`` (``-`` prefix: a failure is ignored), as systemd does for a ``Type=oneshot`` unit, in the
unit's name order. The command runs with the node's environment (``DPUSIM_ROOT`` = the node root, the node's
``bin/`` first on ``PATH``), so the vendor tools it calls are the node's twins.

The twin never runs anything of the machine it runs on: an ``ExecStart=`` or ``EnvironmentFile=`` path outside
the node root is not run and is reported as such.
"""

from __future__ import annotations

import configparser
import os
import shlex
import subprocess
from pathlib import Path

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

WANTS = Path("etc/systemd/system/multi-user.target.wants")
UNIT_TIMEOUT_S = 120.0


class _Unit(configparser.RawConfigParser):
    def optionxform(self, optionstr: str) -> str:  # keys are case-sensitive in systemd units
        return optionstr


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def _read_env_file(path: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")) or "=" not in line:
            continue
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def _run_unit(root: Path, unit: Path) -> dict[str, Any]:
    name = unit.name
    parser = _Unit(strict=False, interpolation=None)
    try:
        parser.read_string(unit.read_text(encoding="utf-8"))
    except (OSError, configparser.Error) as exc:
        return {"unit": name, "result": "failed", "error": "cannot read the unit: %s" % exc}
    if not parser.has_section("Service"):
        return {"unit": name, "result": "skipped", "error": "no [Service] section"}
    service = parser["Service"]
    env = dict(os.environ)
    env["DPUSIM_ROOT"] = str(root)
    env["PATH"] = os.pathsep.join([str(root / "bin"), env.get("PATH", "")])
    for item in shlex.split(service.get("Environment", "")):
        if "=" in item:
            key, value = item.split("=", 1)
            env[key] = value
    env_file = service.get("EnvironmentFile", "").strip()
    if env_file:
        optional = env_file.startswith("-")
        path = Path(env_file.lstrip("-"))
        if not _inside(root, path):
            return {"unit": name, "result": "not run", "error": "EnvironmentFile %s is outside the node root %s"
                    % (path, root)}
        if path.is_file():
            env.update(_read_env_file(path))
        elif not optional:
            return {"unit": name, "result": "failed", "error": "EnvironmentFile %s does not exist" % path}
    exec_start = service.get("ExecStart", "").strip()
    if not exec_start:
        return {"unit": name, "result": "skipped", "error": "no ExecStart"}
    ignore_failure = exec_start.startswith("-")
    argv = shlex.split(exec_start.lstrip("-@+!:"))
    program = Path(argv[0])
    if not program.is_absolute() or not _inside(root, program):
        return {"unit": name, "result": "not run", "error": "ExecStart %s is outside the node root %s"
                % (argv[0], root)}
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=UNIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"unit": name, "result": "failed", "error": str(exc)}
    ok = proc.returncode == 0 or ignore_failure
    out: dict[str, Any] = {"unit": name, "result": "done" if ok else "failed", "rc": proc.returncode}
    if not ok:
        out["error"] = (proc.stderr or proc.stdout).strip()[-2000:]
    return out


def run_boot_units(root: Path) -> list[dict[str, Any]]:
    """Run the node's enabled boot units; one result per unit (``done``, ``failed``, ``not run``, ``skipped``)."""
    root = Path(root).resolve()
    wants = root / WANTS
    if not wants.is_dir():
        return []
    results = []
    for link in sorted(wants.glob("*.service")):
        unit = link.resolve() if link.is_symlink() else link
        if not _inside(root, unit) or not unit.is_file():
            results.append({"unit": link.name, "result": "not run",
                            "error": "the unit file %s is missing or outside the node root" % unit})
            continue
        results.append(_run_unit(root, unit))
    return results
