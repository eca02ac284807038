"""Fixtures for the dpusim tests: a twin node in a temporary root, tools run in-process.

``twin`` is a factory: ``t = twin("bluefield3", role="dpu")`` returns a ``Twin`` whose
``t.run("mlxconfig", "-d", "03:00.0", "q")`` returns ``(rc, stdout, stderr)``. Time runs with
``DPUSIM_TIME_SCALE=0`` (no sleeping) unless a test sets it. ``corpus_dir`` is ``../shared/corpus``: a test
that uses it is reported "not run: no ../shared" on a clone without it, and fails under CI=true
(tests/shared_corpus.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

import pytest
from shared_corpus import require_shared

from dpusim import cli, state, tool


class Twin:
    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch):
        self.root = root
        self.mp = monkeypatch

    def _env(self) -> None:
        self.mp.setenv("DPUSIM_ROOT", str(self.root))

    def run(self, name: str, *args: str, stdin: str = "") -> tuple[int, str, str]:
        """Run one twin tool in-process with this node as DPUSIM_ROOT."""
        self._env()
        out, err = io.StringIO(), io.StringIO()
        self.mp.setattr(sys, "stdin", io.StringIO(stdin))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = tool.run(name, list(args))
        return rc, out.getvalue(), err.getvalue()

    def cli(self, *args: str) -> tuple[int, str, str]:
        self._env()
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(list(args))
        return rc, out.getvalue(), err.getvalue()

    @contextlib.contextmanager
    def edit(self):
        """Change the state directly (scenario builders)."""
        with state.open_node(self.root) as node:
            yield node

    def node(self) -> state.Node:
        return state.load_node(self.root)

    def card(self, index: int = 0) -> state.Card:
        return self.node().cards[index]


@pytest.fixture
def corpus_dir() -> Path:
    return require_shared("corpus")


@pytest.fixture
def twin(tmp_path, monkeypatch):
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "0")
    monkeypatch.delenv("DPUSIM_MLXCONFIG_LAYOUT", raising=False)
    monkeypatch.delenv("DPUSIM_MLXFWRESET_LAYOUT", raising=False)
    monkeypatch.delenv("DPUSIM_PERFTEST_LAYOUT", raising=False)
    monkeypatch.delenv("DPUSIM_MLNX_TOOLS_LAYOUT", raising=False)
    counter = {"n": 0}

    def make(*profiles: str, role: str = "host", card_dir: Path | None = None, name: str | None = None) -> Twin:
        counter["n"] += 1
        profiles = profiles or ("bluefield3",)
        root = tmp_path / (name or "node%d" % counter["n"])
        dirs = [card_dir] + [None] * (len(profiles) - 1) if card_dir else [None] * len(profiles)
        state.init_node(root, list(profiles), role, dirs)
        return Twin(root, monkeypatch)

    yield make
    os.environ.pop("DPUSIM_ROOT", None)


@pytest.fixture
def corpus_sample(corpus_dir):
    """``corpus_sample("mst/x.txt")`` -> (body after the '# ---' header, confidence string)."""

    def load(rel: str) -> tuple[str, str]:
        path = corpus_dir / rel
        return body_of(path), confidence_of(path)

    return load


def body_of(path: Path) -> str:
    """A corpus sample without its provenance header (everything up to the '# ---' line)."""
    text = path.read_text(encoding="utf-8")
    marker = "\n# ---\n"
    if marker not in text:
        raise AssertionError("%s has no '# ---' header terminator" % path)
    return text.split(marker, 1)[1]


def confidence_of(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# confidence:"):
            return line.split(":", 1)[1].strip()
    return ""
