"""The conformance suite (tests/validation) proves what it claims.

- No silent pass: every check function asserts on every path it can leave by (an ``assert``, a ``raise``,
  ``pytest.skip("not applicable: ...")`` or a helper of its module that does so on every path); a bare
  ``return`` or a loop that may run zero times before the end is a check that can paint a green cell for
  something nobody looked at. Read from the source (AST), no fleet needed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tests" / "validation"
CHECK_FILES = sorted(SUITE.glob("test_*.py"))

ASSERTS, ESCAPES, FALLS = "asserts", "escapes", "falls"  # every path asserts / a path returns unasserted / falls off
_PYTEST_STOPS = {"skip", "fail", "xfail", "exit"}


class _Flow:
    """Does a statement list assert on every path? Conservative: a loop may run zero times, a branch that does not
    assert lets the path through, a ``return`` whose value calls no asserting helper escapes."""

    def __init__(self, asserting: set[str]):
        self.asserting = asserting

    def _calls_assert(self, node: ast.AST | None) -> bool:
        if node is None:
            return False
        for sub in ast.walk(node):
            if isinstance(sub, ast.Lambda):
                continue
            if isinstance(sub, ast.Call):
                func = sub.func
                if isinstance(func, ast.Name) and func.id in self.asserting:
                    return True
                if (isinstance(func, ast.Attribute) and func.attr in _PYTEST_STOPS
                        and isinstance(func.value, ast.Name) and func.value.id == "pytest"):
                    return True
        return False

    def block(self, stmts: list[ast.stmt]) -> str:
        for stmt in stmts:
            result = self.stmt(stmt)
            if result != FALLS:
                return result
        return FALLS

    def stmt(self, stmt: ast.stmt) -> str:
        if isinstance(stmt, ast.Assert | ast.Raise):
            return ASSERTS
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return FALLS
        if isinstance(stmt, ast.Return):
            return ASSERTS if self._calls_assert(stmt.value) else ESCAPES
        if isinstance(stmt, ast.If):
            if self._calls_assert(stmt.test):
                return ASSERTS
            results = {self.block(stmt.body), self.block(stmt.orelse)}
            if ESCAPES in results:
                return ESCAPES
            return ASSERTS if results == {ASSERTS} else FALLS
        if isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
            head = stmt.iter if isinstance(stmt, ast.For | ast.AsyncFor) else stmt.test
            if self._calls_assert(head):
                return ASSERTS
            if isinstance(stmt, ast.For) and isinstance(head, ast.Tuple | ast.List) and head.elts:
                return self.block(stmt.body)  # a literal, non-empty sequence: the body runs
            return ESCAPES if ESCAPES in (self.block(stmt.body), self.block(stmt.orelse)) else FALLS
        if isinstance(stmt, ast.With | ast.AsyncWith):
            if any(self._calls_assert(item.context_expr) for item in stmt.items):
                return ASSERTS
            return self.block(stmt.body)
        if isinstance(stmt, ast.Try):
            body = self.block(stmt.body + stmt.orelse)
            handlers = [self.block(h.body) for h in stmt.handlers]
            final = self.block(stmt.finalbody)
            if final == ASSERTS:
                return ASSERTS
            if ESCAPES in [body, *handlers, final]:
                return ESCAPES
            return ASSERTS if body == ASSERTS and all(h == ASSERTS for h in handlers) else FALLS
        return ASSERTS if self._calls_assert(stmt) else FALLS


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def unasserted_paths(source: str) -> dict[str, str]:
    """Check function name -> how it can end without asserting (``escapes`` or ``falls``)."""
    funcs = _functions(ast.parse(source))
    asserting: set[str] = set()
    while True:  # helpers of the module that assert on every path, to a fixed point
        flow = _Flow(asserting)
        more = {name for name, fn in funcs.items()
                if not name.startswith("test_") and flow.block(fn.body) == ASSERTS} - asserting
        if not more:
            break
        asserting |= more
    flow = _Flow(asserting)
    out = {}
    for name, fn in funcs.items():
        if name.startswith("test_"):
            result = flow.block(fn.body)
            if result != ASSERTS:
                out[name] = result
    return out


def test_the_silent_pass_detector_sees_returns_and_empty_loops():
    sample = '''
import pytest

def _ok(node):
    assert node

def _maybe(node):
    if node:
        return 1
    assert node

def test_bare_return(node):
    if not node:
        return
    assert node

def test_loop_only(nodes):
    for n in nodes:
        assert n

def test_helper(node):
    _ok(node)

def test_helper_that_can_return(node):
    _maybe(node)

def test_not_applicable(node):
    if not node:
        pytest.skip("not applicable: x")
    for n in node:
        assert n
    assert node

def test_try(node):
    try:
        value = int(node)
    except ValueError:
        raise AssertionError("bad") from None
    assert value
'''
    assert unasserted_paths(sample) == {"test_bare_return": ESCAPES, "test_loop_only": FALLS,
                                        "test_helper_that_can_return": FALLS}


@pytest.mark.parametrize("path", CHECK_FILES, ids=[p.name for p in CHECK_FILES])
def test_no_check_can_end_without_asserting(path):
    found = unasserted_paths(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.relative_to(ROOT)}: check(s) that can end without asserting (a green cell for "
                       f"something nobody checked): {found}; fix: assert, or pytest.skip('not applicable: <why>') "
                       "where the check does not apply to the host")
