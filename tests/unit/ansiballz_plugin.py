"""The integration tests' AnsiballZ callback (tests/integration/callback_plugins/ansiballz_cache.py), loaded as a
module for the unit tests of its cache key and of the bytecode it adds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

PLUGIN = Path(__file__).resolve().parents[1] / "integration" / "callback_plugins" / "ansiballz_cache.py"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
