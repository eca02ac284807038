"""``_parse_common.LazyPattern``: a regular expression compiled at its first use, and the rule that keeps the
collection's module-side code from compiling any at import time.

Each module run imports its code afresh from the AnsiballZ zip; a ``re.compile`` at module level ran on every run
for every pattern of every file imported (about 65 ms of the 0.39 CPU-s of a dpu_info run, bench/module_cost).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers import _parse_common
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern

ROOT = Path(__file__).resolve().parents[3]
# Code that runs in module processes: the modules and their module_utils.
MODULE_SIDE = sorted((ROOT / "plugins" / "module_utils").rglob("*.py")) + sorted((ROOT / "plugins" / "modules").glob(
    "*.py"))


def _counting_compile(monkeypatch):
    calls = []
    real = re.compile

    def compile_(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(_parse_common.re, "compile", compile_)
    return calls


def test_nothing_is_compiled_until_first_use(monkeypatch):
    calls = _counting_compile(monkeypatch)
    pattern = LazyPattern(r"^(?P<key>[a-z]+)=(?P<value>.*)$")
    assert calls == []
    assert pattern.match("speed=100").group("value") == "100"
    assert calls == [(r"^(?P<key>[a-z]+)=(?P<value>.*)$", 0)]


def test_a_bad_pattern_fails_at_first_use_not_at_import():
    pattern = LazyPattern(r"(unclosed")
    with pytest.raises(re.error):
        pattern.match("x")


def test_later_uses_do_not_compile_again(monkeypatch):
    calls = _counting_compile(monkeypatch)
    pattern = LazyPattern(r"\d+")
    for text in ("a1", "b22", "c333"):
        pattern.search(text)
    pattern.findall("1 2")
    pattern.findall("3 4")
    assert len(calls) == 1


@pytest.mark.parametrize(("method", "args"), [
    ("match", ("Base GUID: 0x1",)),
    ("fullmatch", ("base guid: 0x1",)),
    ("search", ("  FW Version: 32.43",)),
    ("findall", ("a: 1 b: 2",)),
    ("split", ("a: 1 b: 2",)),
    ("sub", ("=", "a: 1 b: 2")),
    ("subn", ("=", "a: 1 b: 2")),
])
def test_same_answers_as_the_compiled_pattern(method, args):
    source, flags = r"(?P<label>[a-z ]+)\s*:\s*", re.IGNORECASE
    lazy, compiled = LazyPattern(source, flags), re.compile(source, flags)
    got, want = getattr(lazy, method)(*args), getattr(compiled, method)(*args)
    if isinstance(want, re.Match):
        assert (got.span(), got.groupdict()) == (want.span(), want.groupdict())
    else:
        assert got == want
    assert [m.span() for m in lazy.finditer(args[-1])] == [m.span() for m in compiled.finditer(args[-1])]
    assert (lazy.pattern, lazy.flags, lazy.groups, dict(lazy.groupindex)) == (
        compiled.pattern, compiled.flags, compiled.groups, dict(compiled.groupindex))


def test_flags_are_kept():
    assert LazyPattern(r"^lifecycle\s+(?P<state>.+)$", re.IGNORECASE).match("LIFECYCLE Secured").group("state") == (
        "Secured")
    assert LazyPattern(r"^lifecycle").match("LIFECYCLE") is None


def test_private_names_are_not_the_patterns():
    pattern = LazyPattern(r"x")
    with pytest.raises(AttributeError):
        pattern._compiled  # noqa: B018 - the lookup itself is the test
    assert "LazyPattern('x', 0)" == repr(pattern)


def _import_time_compiles(path):
    """``re.compile(...)`` calls that run when ``path`` is imported: anywhere outside a function body (module level,
    class bodies, default arguments are left out: there are none)."""
    tree = ast.parse(path.read_text(), str(path))
    found = []

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Call) and ast.unparse(child.func) in ("re.compile", "compile"):
                found.append("%s:%d" % (path.name, child.lineno))
            visit(child)

    visit(tree)
    return found


def test_rule_finds_an_import_time_compile(tmp_path):
    bad = tmp_path / "_probe.py"
    bad.write_text("import re\n_X = re.compile(r'x')\n_T = (('a', re.compile(r'a')),)\n\n\nclass C:\n"
                   "    Y = re.compile(r'c')\n\n    def later(self):\n        return re.compile(r'y')\n")
    assert _import_time_compiles(bad) == ["_probe.py:2", "_probe.py:3", "_probe.py:7"]


@pytest.mark.parametrize("path", MODULE_SIDE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_side_file_compiles_a_pattern_at_import(path):
    assert _import_time_compiles(path) == [], "use _parse_common.LazyPattern instead of re.compile at module level"
