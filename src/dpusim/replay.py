# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""Replay mode: tools answer from a capture written by ``bluefleet capture DIR``.

Capture layout (written by ``src/bluefleet/capture.py``)::

    DIR/manifest.json   {"format": 1, "created": "...", "hostname": "...", "commands": [
                           {"argv": ["mst", "status", "-v"], "rc": 0,
                            "stdout": "out/003.stdout", "stderr": "out/003.stderr"}, ...]}
    DIR/out/NNN.stdout, DIR/out/NNN.stderr

``dpusim replay DIR`` writes ``$DPUSIM_ROOT/replay.json`` = ``{"capture": "/abs/DIR"}``;
``dpusim replay --off`` removes it. While it exists every tool call is looked up by its exact
argv; a call that is not in the manifest fails with exit status 3 and says so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

REPLAY_FILE = "replay.json"
NOT_CAPTURED_RC = 3


class ReplayError(Exception):
    pass


def is_active(root: Path) -> bool:
    return (root / REPLAY_FILE).exists()


def load_manifest(capture: Path) -> dict[str, Any]:
    path = capture / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ReplayError("dpusim replay: %s has no manifest.json; make it with: bluefleet capture %s"
                          % (capture, capture)) from exc
    except ValueError as exc:
        raise ReplayError("dpusim replay: %s is not valid JSON: %s" % (path, exc)) from exc
    if data.get("format") != 1 or not isinstance(data.get("commands"), list):
        raise ReplayError("dpusim replay: %s is not a bluefleet capture manifest (format 1)" % path)
    return data


def activate(root: Path, capture: Path) -> int:
    capture = capture.resolve()
    manifest = load_manifest(capture)
    for entry in manifest["commands"]:
        for key in ("stdout", "stderr"):
            if entry.get(key) and not (capture / entry[key]).exists():
                raise ReplayError("dpusim replay: %s lists %s, which is missing" % (capture, entry[key]))
    root.mkdir(parents=True, exist_ok=True)
    (root / REPLAY_FILE).write_text(json.dumps({"capture": str(capture)}) + "\n", encoding="utf-8")
    return len(manifest["commands"])


def deactivate(root: Path) -> bool:
    path = root / REPLAY_FILE
    if path.exists():
        path.unlink()
        return True
    return False


def answer(root: Path, name: str, argv: list[str]) -> int:
    """Print the captured stdout/stderr of ``name argv`` and return its captured exit status."""
    try:
        capture = Path(json.loads((root / REPLAY_FILE).read_text(encoding="utf-8"))["capture"])
        manifest = load_manifest(capture)
    except (ReplayError, ValueError, KeyError, OSError) as exc:
        print(str(exc) if isinstance(exc, ReplayError) else "dpusim replay: broken %s: %s" % (root / REPLAY_FILE, exc),
              file=sys.stderr)
        return NOT_CAPTURED_RC
    wanted = [name, *argv]
    for entry in manifest["commands"]:
        if entry.get("argv") == wanted:
            if entry.get("stdout"):
                sys.stdout.write((capture / entry["stdout"]).read_text(encoding="utf-8", errors="surrogateescape"))
            if entry.get("stderr"):
                sys.stderr.write((capture / entry["stderr"]).read_text(encoding="utf-8", errors="surrogateescape"))
            sys.stdout.flush()
            return int(entry.get("rc", 0))
    print("dpusim replay: '%s' is not in the capture %s; captured commands: %s"
          % (" ".join(wanted), capture, "; ".join(" ".join(e["argv"]) for e in manifest["commands"])),
          file=sys.stderr)
    return NOT_CAPTURED_RC
