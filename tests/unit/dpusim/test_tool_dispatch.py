"""dpusim.tool's start-up: a tool call imports only the module that answers its name, and runs compiled code.

The shortcut must answer exactly as the full registry does, for every name, and fall back to it for a name it
does not know (a new tool module needs no entry in MODULE_OF).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpusim import state, tool, tools

SRC = Path(tool.__file__).resolve().parents[1]

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


# What a twin tool call leaves out of its start-up, each needed by some calls only: typing (annotations, read by
# type checkers alone), subprocess (passing through to a real tool), tempfile (writing state), pkgutil (the whole
# registry), hashlib (a host's rshim misc snapshot), shutil (finding a real tool: it imports bz2 and lzma), copy (the
# state's copies are dpusim.jsondata.clone). A front-end starts a Python for every call.
ONLY_SOMETIMES = ("typing", "subprocess", "tempfile", "pkgutil", "hashlib", "shutil", "copy")


def test_a_reading_tool_call_starts_without_what_only_some_calls_need(twin):
    root = twin("bluefield3", role="dpu").root
    code = ("import io, sys; from dpusim import tool; out = sys.stdout; sys.stdout = io.StringIO(); "
            "rc = tool.run('mlxconfig', ['-d', '03:00.0', 'q']); text = sys.stdout.getvalue(); sys.stdout = out; "
            "print(rc, 'SRIOV_EN' in text, sorted(m for m in %r if m in sys.modules))" % (ONLY_SOMETIMES,))
    env = dict(os.environ, DPUSIM_ROOT=str(root), PYTHONPATH=str(SRC))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
                         env=env).stdout
    assert out.split() == ["0", "True", "[]"], out


# The `dpusim` command as tests and `bluefleet sim` call it (fault set/list, state, rshim): the modules of other
# subcommands (boot units: configparser, subprocess; the kubelet: secrets, socket; images: hashlib) stay out.
CLI_ONLY_SOMETIMES = ("dpusim.boot", "dpusim.kubelet", "configparser", "secrets", "socket", "hashlib")


@pytest.mark.parametrize("argv", [["fault", "list"], ["fault", "set", "tool_hang", "--tool", "flint"], ["state"]],
                         ids=["fault-list", "fault-set", "state"])
def test_the_dpusim_command_starts_without_other_subcommands_modules(twin, argv):
    root = twin("bluefield3", role="dpu").root
    code = ("import contextlib, io, sys; from dpusim import cli; sys.argv = ['dpusim', *%r]\n"
            "with contextlib.redirect_stdout(io.StringIO()): rc = cli.main()\n"
            "print(rc, sorted(m for m in %r if m in sys.modules))" % (argv, CLI_ONLY_SOMETIMES))
    env = dict(os.environ, DPUSIM_ROOT=str(root), PYTHONPATH=str(SRC))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
                         env=env).stdout
    assert out.split() == ["0", "[]"], out


def test_writing_the_front_ends_compiles_the_twin_even_where_bytecode_is_not_written(tmp_path):
    """With PYTHONDONTWRITEBYTECODE set and a source tree nothing compiled, each tool call would compile every
    module it imports again (about 50 instead of 34 ms of CPU per call): `dpusim env` compiles them once."""
    src = tmp_path / "src"
    shutil.copytree(SRC / "dpusim", src / "dpusim", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(src))
    subprocess.run([sys.executable, "-m", "dpusim.cli", "env", "--root", str(tmp_path / "root")], env=env,
                   capture_output=True, text=True, check=True, timeout=120)
    for module in ("tool.py", "state.py", "tools/_common.py", "tools/mlxconfig.py"):
        assert Path(importlib.util.cache_from_source(str(src / "dpusim" / module))).is_file(), module
    root = tmp_path / "root"
    state.init_node(root, ["bluefield3"], "dpu", [None])
    proc = subprocess.run([sys.executable, "-v", str(root / "bin" / "mlxconfig"), "-d", "03:00.0", "q"],
                          env=dict(env, DPUSIM_ROOT=str(root)), capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and "SRIOV_EN" in proc.stdout, proc.stderr[-2000:]
    compiled_here = [line for line in proc.stderr.splitlines()
                     if line.startswith("# code object from") and line.rstrip("'").endswith(".py")]
    assert not compiled_here, compiled_here
