# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""Tool front-ends of the twin: one module per tool family, discovered at import time.

Contract for a tool module ``dpusim/tools/<family>.py``:

* ``NAMES``: tuple of the command names it answers to, e.g. ``("mlxconfig", "mstconfig")``;
* ``main(argv: list[str], prog: str) -> int``: ``argv`` excludes the program name, ``prog`` is
  the name it was called by (so ``mstconfig`` and ``mlxconfig`` can differ where the real ones do).
  Print to ``sys.stdout`` / ``sys.stderr``; return the exit status. Raise ``state.StateError`` for
  "not initialised" conditions; the dispatcher prints it and exits 1.

Modules are found with ``pkgutil`` so another helper adds a module without editing this file.
Modules whose name starts with ``_`` are helpers, not tools.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

ToolMain = Callable[[list[str], str], int]


def registry() -> dict[str, ToolMain]:
    """Map every tool name to its ``main``; a name claimed twice is an error."""
    table: dict[str, ToolMain] = {}
    owners: dict[str, str] = {}
    import pkgutil  # only for the whole registry: a tool call imports just its own module (dpusim.tool)

    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module("%s.%s" % (__name__, info.name))
        names = getattr(module, "NAMES", None)
        main = getattr(module, "main", None)
        if not names or main is None:
            continue
        for name in names:
            if name in table:
                raise RuntimeError("dpusim: tool %r defined by both %s and %s" % (name, owners[name], info.name))
            table[name] = main
            owners[name] = info.name
    return table


def names() -> list[str]:
    return sorted(registry())
