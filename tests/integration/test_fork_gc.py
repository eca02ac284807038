"""The suite's fork_gc callback (callback_plugins/fork_gc.py, enabled by conftest.ansible_env): a task's worker is
forked with the controller's objects frozen out of the cyclic collector; without the callback they are not."""

from __future__ import annotations

from conftest import ansible_env, worker_probe


def _frozen(tmp_path, env) -> int:
    return int(worker_probe(tmp_path, env, "gc.get_freeze_count()", imports="import gc"))


def test_workers_are_forked_with_the_controllers_objects_frozen(tmp_path):
    env = ansible_env()
    assert "fork_gc" in env["ANSIBLE_CALLBACKS_ENABLED"].split(",")
    assert _frozen(tmp_path, env) > 10000  # the controller's modules, plugins, play and inventory objects
    without = ",".join(c for c in env["ANSIBLE_CALLBACKS_ENABLED"].split(",") if c != "fork_gc")
    assert _frozen(tmp_path, dict(env, ANSIBLE_CALLBACKS_ENABLED=without)) == 0
