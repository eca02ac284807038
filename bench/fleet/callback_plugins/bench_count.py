# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark callback: one JSON line per task result and per play start, with the controller's CPU so far.

Enabled only by bench/fleet/run.py (ANSIBLE_CALLBACK_PLUGINS + ANSIBLE_CALLBACKS_ENABLED); writes to the file
named by BENCH_FLEET_EVENTS. A "module run" is a task result on a host whose action runs on the target
(everything but the controller-side actions below) and that was not skipped.
"""

from __future__ import annotations

import json
import os
import resource
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: bench_count
type: aggregate
short_description: Task results per host and play boundaries for bench/fleet
description:
  - Writes one JSON line per task result and per play start to the file in E(BENCH_FLEET_EVENTS).
"""

# Actions that run in the controller process only (no module is sent to the target).
_CONTROLLER_SHORT = ("set_fact", "assert", "debug", "fail", "meta", "add_host", "group_by", "include_tasks",
                     "import_tasks", "include_role", "import_role", "include_vars", "set_stats", "pause",
                     "validate_argument_spec")
# The collection's own controller-side actions (an action plugin that starts no module process).
_COLLECTION_CONTROLLER = ("bluefleet.dpu.upgrade_record",)
CONTROLLER_ONLY = (frozenset(_CONTROLLER_SHORT) | frozenset("ansible.builtin." + name for name in _CONTROLLER_SHORT)
                   | frozenset(_COLLECTION_CONTROLLER))


def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_count"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        path = os.environ.get("BENCH_FLEET_EVENTS")
        self._out = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 (open for the run)

    def _write(self, record):
        if self._out is not None:
            record["t"] = time.time()
            record["cpu"] = _cpu()
            self._out.write(json.dumps(record) + "\n")
            self._out.flush()

    def v2_playbook_on_play_start(self, play):
        self._write({"event": "play", "play": play.get_name()})

    def _result(self, result, status):
        task = result._task
        action = task.action
        runs = 0
        if status != "skipped" and action not in CONTROLLER_ONLY:
            items = result._result.get("results")
            if isinstance(items, list):  # a loop: one module run per item that was not skipped
                runs = sum(1 for item in items if isinstance(item, dict) and not item.get("skipped"))
            else:
                runs = 1
        self._write({"event": "result", "status": status, "host": result._host.get_name(), "action": action,
                     "task": task.get_name(),
                     "runs": runs, "changed": bool(result._result.get("changed"))})

    def v2_runner_on_ok(self, result):
        self._result(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._result(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._result(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        self._write({"event": "end"})
        if self._out is not None:
            self._out.close()
            self._out = None
