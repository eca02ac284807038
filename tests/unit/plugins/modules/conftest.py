"""Fixtures to drive bluefleet modules with recorded tool outputs through a fake runner.

``run_module(module, args, runner, check_mode=False, diff=True)`` runs the module's ``main()`` with that runner
(see fake_tools.FakeRunner) and returns ``(failed, result)``.
"""

from __future__ import annotations

import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from fake_tools import FakeRunner


class _Exit(Exception):
    def __init__(self, failed, result):
        super().__init__(result.get("msg"))
        self.failed = failed
        self.result = result


@pytest.fixture(autouse=True)
def target_side(monkeypatch):
    """Modules run on the target: once a test elsewhere imports controller code (a filter plugin, a role's
    argument spec), ansible-core sends module.warn() to the controller's display instead of the result's
    ``warnings``. Every module test runs as the target would."""
    from ansible.module_utils import _internal

    monkeypatch.setattr(_internal, "is_controller", False)


@pytest.fixture
def fake_runner():
    return FakeRunner


@pytest.fixture
def run_module(monkeypatch):
    def _exit_json(self, **kwargs):
        raise _Exit(False, json.loads(json.dumps(kwargs)))

    def _fail_json(self, msg, **kwargs):
        kwargs["msg"] = msg
        raise _Exit(True, json.loads(json.dumps(kwargs)))

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)

    def run(module, args, runner, check_mode=False, diff=True):
        made = []

        def factory(timeout=None, environ=None):
            made.append(timeout)
            runner.built_with_timeout = timeout
            return runner

        monkeypatch.setattr(module, "ToolRunner", factory)
        args = dict(args)
        if check_mode:
            args["_ansible_check_mode"] = True
        # Most module tests look at the diff, so they run as `--diff` would; diff=False runs as a plain
        # task does (no diff key may come back: test_module_shape.py).
        args["_ansible_diff"] = bool(diff)
        with patch_module_args(args):
            try:
                module.main()
            except _Exit as exc:
                assert made or exc.failed, "the module succeeded without building its runner"
                return exc.failed, exc.result
        raise AssertionError("the module returned without exit_json or fail_json")

    return run
