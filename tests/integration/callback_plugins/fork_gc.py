"""Freeze the controller's objects out of Python's cyclic collector before each task (the integration tests only).

ansible-playbook forks a worker per host for every task. Python's cyclic collector, in the controller and in
each worker, walks every object the controller holds when a collection reaches the oldest generation; in a worker
that also writes to each page it walks, so the fork's shared pages are copied. ``gc.freeze()`` at each task's
start (before its workers are forked) moves the objects the controller holds to the collector's permanent
generation, which no collection walks (the use the ``gc`` documentation gives for forking servers). Measured on
site.yml's re-run over a two-pair sim fleet, three runs each, alternating: 20.3-20.7 CPU-s without, 19.3-19.9 with.

The price: cyclic garbage made before a task starts is kept until the run ends. A test's run is short; a
user's run over a large fleet is not, so this is not part of the collection (``bench/`` does not load it either).
Enabled by tests/integration/conftest.py (``ansible_env``) and `make molecule`.
"""

from __future__ import annotations

import gc

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fork_gc"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_task_start(self, task, is_conditional):
        gc.freeze()

    def v2_playbook_on_handler_task_start(self, task):
        gc.freeze()
