"""dpusim.tool's start-up shortcut: a tool call imports only the module that answers its name.

The shortcut must answer exactly as the full registry does, for every name, and fall back to it for a name it
does not know (a new tool module needs no entry in MODULE_OF).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from dpusim import tool, tools

REGISTRY = tools.registry()


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_tool_name_resolves_to_the_registry_main(name):
    assert tool.tool_table(name)[name] is REGISTRY[name]


def test_every_shortcut_entry_names_a_module_that_answers_it():
    for name, module in tool.MODULE_OF.items():
        table = tool.tool_table(name)
        assert list(table) == [name], "MODULE_OF[%r] = %r: %s does not list it in NAMES" % (name, module, module)
        assert table[name].__module__ == "dpusim.tools.%s" % module


def test_an_unknown_name_falls_back_to_the_full_registry():
    assert tool.tool_table("no-such-tool") == REGISTRY
    assert tool.tool_table("_common") == REGISTRY  # helper modules are never tools


def test_a_tool_call_imports_only_its_own_tool_module():
    code = ("import sys; from dpusim import tool; tool.tool_table('bfver'); "
            "print(sorted(m for m in sys.modules if m.startswith('dpusim.tools.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.strip() == "['dpusim.tools._common', 'dpusim.tools.bluefield']", out
