"""Loading the collection's filter files stays cheap.

To find one collection filter, ansible-core 2.19's Jinja2Loader loads every file of the collection's filter folder,
and it does so in every worker (one forked process per task and host, each starting with an empty plugin cache). A
filter file that imports its module_utils at the top makes every task that uses any bluefleet filter pay for all of
them: 45 ms of CPU per worker, measured, against 16 ms when each filter imports its code when called.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[4]
FILTERS = ROOT / "plugins" / "filter"

# Loads every filter file as the Jinja2Loader does (each file by path, then its FilterModule().filters()), then
# prints the bluefleet module_utils that loading imported.
PROBE = r"""
import importlib.util, json, pathlib, sys
sys.path.insert(0, sys.argv[2])
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.py")):
    name = "ansible_collections.bluefleet.dpu.plugins.filter." + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    module.FilterModule().filters()
print(json.dumps(sorted(m for m in sys.modules if ".plugins.module_utils." in m)))
"""


def test_loading_every_filter_file_imports_no_module_utils():
    collections = ROOT / ".collections"
    assert (collections / "ansible_collections" / "bluefleet" / "dpu").exists(), "make venv links the collection"
    out = subprocess.run([sys.executable, "-c", PROBE, str(FILTERS), str(collections)], check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == [], "a filter file imports module_utils at load time: import it in the filter function"


def test_the_filters_still_import_their_code_when_called():
    from ansible_collections.bluefleet.dpu.plugins.filter.files_plan import files_plan

    answer = files_plan({}, [{"path": "/etc/x", "content": "a"}])
    assert answer["answered"] is False and answer["why"]
