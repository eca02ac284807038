"""bluefleet.dpu.preload (plugins/callback/preload.py, enabled by ansible.cfg): a task's worker is forked with the
filter and test plugins of ansible.builtin, the collection's filters and the roles' lookups already loaded by
ansible-playbook; without the callback the worker finds none of them and loads each itself."""

from __future__ import annotations

import configparser

from conftest import ROOT, ansible_env, worker_probe

# Which plugin modules the fork inherited, before the worker renders anything.
MODULES = {
    "builtin_filters": "ansible.plugins.filter.core",
    "builtin_tests": "ansible.plugins.test.core",
    "collection_filters": "ansible_collections.bluefleet.dpu.plugins.filter.roce_plan",
    "lookups": "ansible_collections.ansible.builtin.plugins.lookup.template",
}
ANSWER = "' '.join(kind for kind, prefix in %r.items() if any(name.startswith(prefix) for name in list(sys.modules)))"


def _loaded(tmp_path, env) -> list[str]:
    return sorted(worker_probe(tmp_path, env, ANSWER % MODULES, imports="import sys").split())


def test_ansible_cfg_enables_it():
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "ansible.cfg")
    assert "bluefleet.dpu.preload" in [c.strip() for c in config.get("defaults", "callbacks_enabled").split(",")]
    assert "bluefleet.dpu.preload" in ansible_env()["ANSIBLE_CALLBACKS_ENABLED"].split(",")


def test_workers_are_forked_with_the_plugins_loaded(tmp_path):
    env = ansible_env()
    kinds = ["builtin_filters", "builtin_tests", "collection_filters", "lookups"]
    assert _loaded(tmp_path, env) == kinds
    without = ",".join(c for c in env["ANSIBLE_CALLBACKS_ENABLED"].split(",") if c != "bluefleet.dpu.preload")
    assert _loaded(tmp_path, dict(env, ANSIBLE_CALLBACKS_ENABLED=without)) == []
