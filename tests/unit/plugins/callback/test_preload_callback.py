"""bluefleet.dpu.preload: what it loads in ansible-playbook is what the collection's templates name (the workers'
side, that a forked worker finds them loaded: tests/integration/test_preload.py)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from ansible_collections.bluefleet.dpu.plugins.callback import preload

ROOT = Path(__file__).resolve().parents[4]
FILTERS = ROOT / "plugins" / "filter"


def _yaml_sources():
    for folder in ("roles", "playbooks"):
        yield from (ROOT / folder).rglob("*.yml")
        yield from (ROOT / folder).rglob("*.j2")
    yield ROOT / "site.yml"


def test_the_lookups_are_those_the_roles_and_playbooks_name():
    named = set()
    for path in _yaml_sources():
        named |= set(re.findall(r"""(?:lookup|query)\(\s*['"]([\w.]+)['"]""", path.read_text()))
    assert named, "no lookup found: the scan reads the wrong files"
    assert named == set(preload.LOOKUPS)


def test_the_filters_are_every_filter_of_the_collection():
    defined = set()
    for path in FILTERS.glob("*.py"):
        if path.name == "__init__.py":
            continue
        module = importlib.import_module("ansible_collections.bluefleet.dpu.plugins.filter." + path.stem)
        defined |= {"bluefleet.dpu." + name for name in module.FilterModule().filters()}
    assert defined and set(preload.own_filters()) == defined


def test_loads_once_and_says_nothing(monkeypatch):
    calls = []

    class Loader:
        def __init__(self, kind):
            self.kind = kind

        def all(self):
            calls.append((self.kind, "all"))
            return iter(())

        def get(self, name, **kwargs):
            calls.append((self.kind, name))

    for kind in ("filter", "test", "lookup"):
        monkeypatch.setattr(preload, kind + "_loader", Loader(kind))
    callback = preload.CallbackModule()
    callback.v2_playbook_on_start(playbook=None)
    callback.v2_playbook_on_start(playbook=None)  # an imported playbook: nothing more
    assert calls.count(("filter", "all")) == 1 and calls.count(("test", "all")) == 1
    assert [name for kind, name in calls if kind == "filter" and name != "all"] == preload.own_filters()
    assert [name for kind, name in calls if kind == "lookup"] == list(preload.LOOKUPS)
    assert len(calls) == 2 + len(preload.own_filters()) + len(preload.LOOKUPS)
