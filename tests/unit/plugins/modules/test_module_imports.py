"""The read modules import a section's code when that section is read.

A module run is a fresh process that imports (and compiles: zipimport keeps no bytecode) every file it imports from
the AnsiballZ zip. dpu_info imported the parsers and domain code of all fifteen sections, where the upgrade's reads ask
for three to five of them (bench/module_cost). Each probe runs in a fresh interpreter and lists the collection's
module_utils it imported.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[4]
HERE = pathlib.Path(__file__).resolve().parent

PROBE = r"""
import importlib, json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
module = importlib.import_module("ansible_collections.bluefleet.dpu.plugins.modules." + sys.argv[3])
exec(sys.argv[4])
print(json.dumps(sorted(m.split(".module_utils.")[1] for m in sys.modules if ".plugins.module_utils." in m
                        and not m.endswith(("module_utils.domain", "module_utils.parsers", "module_utils.plumbing")))))
"""

# What every run of the module needs: its runner and reader, the option specs, and for dpu_info the discovery (mst) and
# the tool requirements its argument spec lists.
BASE = {
    "dpu_info": ["domain._cards", "parsers._mst", "parsers._parse_common", "parsers._tool_versions",
                 "plumbing._argspec", "plumbing._runner", "plumbing._tool_check", "plumbing._tooling"],
    "gpu_info": ["domain._gpu_read", "parsers._parse_common", "plumbing._argspec", "plumbing._runner",
                 "plumbing._tooling"],
}

# dpu_info's read of a BlueField-3's Arm side (test_dpu_info's answers), the sections of the upgrade's first read
# without the reset levels
READ = r"""
from fake_tools import FakeRunner
from test_dpu_info import dpu_answers
assert module.DpuInfo(FakeRunner(dpu_answers()), %r).gather()["devices"]
"""


def _imported(module, code="pass"):
    collections = ROOT / ".collections"
    assert (collections / "ansible_collections" / "bluefleet" / "dpu").exists(), "make venv links the collection"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(collections), str(HERE), module, code],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_dpu_info_imports_no_section_code_until_it_reads_one():
    assert _imported("dpu_info") == BASE["dpu_info"]


def test_gpu_info_imports_no_section_code_until_it_reads_one():
    assert _imported("gpu_info") == BASE["gpu_info"]


def test_dpu_info_imports_the_code_of_the_sections_it_reads():
    got = _imported("dpu_info", READ % (["firmware", "privilege", "dpu_os", "nvconfig"],))
    assert sorted(set(got) - set(BASE["dpu_info"])) == ["parsers._bf_release", "parsers._flint", "parsers._mlxconfig",
                                                        "parsers._mlxprivhost"]
    got = _imported("dpu_info", READ % (["firmware", "eswitch"],))
    assert sorted(set(got) - set(BASE["dpu_info"])) == ["parsers._devlink", "parsers._flint"]
