# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark callback for ``bench/fleet/run.py --profile``: where a run's CPU goes, per task.

Ansible runs each task of each host in a worker process forked from ansible-playbook; the worker templates the
task and runs its action plugin on the controller, and the module runs in a child process of the worker (the
local connection). This callback wraps the worker's entry point so that, when a worker ends, it writes one JSON
line: its host and task, its own CPU (the controller's share of that task) and its children's CPU (the module
process and the twin tools it ran, which ``run.py`` subtracts: each twin tool logs the worker it ran under from
``BENCH_WORKER``). At the end of the run it writes ansible-playbook's own CPU (the strategy: variables, includes,
results). Linear and free strategies only: under Mitogen the modules do not run in the workers' children.

Each record also carries ``compile``: the worker's CPU in ansible-core's compilation of templates and expressions
(``TemplateEngine._compile_template`` / ``_compile_expression``, ansible-core 2.19's private templating engine; the
filter and test plugins a template names are loaded there too). ansible-core keeps no compiled template across
workers, so each worker compiles every template it renders. ``null`` where that engine is not found.
"""

from __future__ import annotations

import json
import os
import resource
import time

from ansible.executor.process import worker as _worker
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: bench_workers
type: aggregate
short_description: Per-task CPU of Ansible's worker processes for bench/fleet --profile
description:
  - Writes one JSON line per task and host (the worker's own CPU and its children's) and one with
    ansible-playbook's own CPU to the file in E(BENCH_FLEET_WORKERS).
"""


def _write(record):
    path = os.environ.get("BENCH_FLEET_WORKERS")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, (json.dumps(record) + "\n").encode())
        os.close(fd)


def _cpu(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


_RUN = _worker.WorkerProcess._run
# This process's CPU in template compilation: ansible-playbook's own count is not reported; each worker sets its
# copy to 0 when it starts.
_COMPILE = {"cpu": 0.0}

try:
    from ansible._internal._templating._engine import TemplateEngine as _Engine
except ImportError:  # another ansible-core: no compile figure
    _Engine = None


def _timed(compile_method):
    def timed(*args, **kwargs):
        started = time.process_time()
        try:
            return compile_method(*args, **kwargs)
        finally:
            _COMPILE["cpu"] += time.process_time() - started
    return timed


def _profiled_run(self):
    """The worker's run, its record written just before it sends its result: once the last result is in,
    ansible-playbook ends, and its clean-up terminates the workers still alive (WORKER_SHUTDOWN_POLL_COUNT is 0 by
    default), so a record written after the send could be lost (seen: 119 of 120 records). The module process has
    ended by then: the children's CPU is complete."""
    os.environ["BENCH_WORKER"] = str(os.getpid())  # inherited by the module process and the twin tools it runs
    _COMPILE["cpu"] = 0.0
    started = time.time()
    written = []

    def record():
        if not written:
            written.append(True)
            _write({"worker": os.getpid(), "host": self._host.get_name(), "task": self._task.get_name(),
                    "action": self._task.action, "self": _cpu(resource.RUSAGE_SELF),
                    "children": _cpu(resource.RUSAGE_CHILDREN), "compile": _COMPILE["cpu"] if _Engine else None,
                    "start": started, "end": time.time()})

    send = self._final_q.send_task_result

    def send_after_the_record(*args, **kwargs):
        record()
        return send(*args, **kwargs)

    self._final_q.send_task_result = send_after_the_record  # this worker's copy of the queue object only
    try:
        return _RUN(self)
    finally:
        record()  # a worker that sent no result


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_workers"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        _worker.WorkerProcess._run = _profiled_run  # before the strategy forks its first worker
        if _Engine is not None and not getattr(_Engine._compile_template, "bench_timed", False):
            for name in ("_compile_template", "_compile_expression"):
                timed = _timed(getattr(_Engine, name))
                timed.bench_timed = True
                setattr(_Engine, name, timed)

    def v2_playbook_on_stats(self, stats):
        _write({"main_self": _cpu(resource.RUSAGE_SELF)})
