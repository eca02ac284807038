"""The suite's fork_gc callback (callback_plugins/fork_gc.py, enabled by conftest.ansible_env): a task's worker is
forked with the controller's objects frozen out of the cyclic collector; without the callback they are not."""

from __future__ import annotations

import json
import subprocess

from conftest import BIN, ROOT, ansible_env

# An action plugin runs in the task's worker, forked from the controller: it reports what the fork inherited.
ACTION = '''from __future__ import annotations
import gc
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        return {"changed": False, "frozen": gc.get_freeze_count()}
'''

PLAYBOOK = """- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - frozen_objects:
      register: seen
    - ansible.builtin.debug:
        msg: "FROZEN={{ seen.frozen | to_json }}"
"""


def _frozen(tmp_path, env) -> int:
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", str(tmp_path / "play.yml")],
                          env=dict(env, ANSIBLE_ACTION_PLUGINS=str(tmp_path / "action_plugins")), cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (line,) = [x for x in proc.stdout.splitlines() if "FROZEN=" in x]
    return json.loads(line.split("FROZEN=", 1)[1].strip().strip('"'))


def test_workers_are_forked_with_the_controllers_objects_frozen(tmp_path):
    (tmp_path / "action_plugins").mkdir()
    (tmp_path / "action_plugins" / "frozen_objects.py").write_text(ACTION)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = ansible_env()
    assert "fork_gc" in env["ANSIBLE_CALLBACKS_ENABLED"].split(",")
    assert _frozen(tmp_path, env) > 10000  # the controller's modules, plugins, play and inventory objects
    without = ",".join(c for c in env["ANSIBLE_CALLBACKS_ENABLED"].split(",") if c != "fork_gc")
    assert _frozen(tmp_path, dict(env, ANSIBLE_CALLBACKS_ENABLED=without)) == 0
