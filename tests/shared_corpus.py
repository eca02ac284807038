"""Where the reference material beside the clone lives, and what a test does when it is not there.

``../shared`` (the project's reference corpus, Redfish captures and CSDL schemas) sits beside the
checkout on the project's machines and in its CI, not on a user's clone. A test that needs it calls
``require_shared("corpus/flint")``: the path when present; otherwise the test is reported as not
run with that reason (``pytest.skip("not run: no ../shared ...")``), except under ``CI=true``, where
a missing corpus is a failure so that CI can never lose these tests quietly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def shared_present(rel: str = "") -> bool:
    return (SHARED / rel).exists()


def require_shared(rel: str = "") -> Path:
    """``SHARED / rel`` if it exists; skip ("not run: no ../shared ...") or, under CI=true, fail."""
    path = SHARED / rel
    if path.exists():
        return path
    reason = "not run: no ../shared (%s is missing; the reference corpus lives beside the clone)" % path
    if in_ci():
        pytest.fail(reason + " and CI=true requires it")
    pytest.skip(reason)
    raise AssertionError("unreachable")  # pragma: no cover
