"""bluefleet.dpu.preload (plugins/callback/preload.py, enabled by ansible.cfg): a task's worker is forked with the
filter and test plugins of ansible.builtin, the collection's filters and the roles' lookups already loaded by
ansible-playbook; without the callback the worker finds none of them and loads each itself."""

from __future__ import annotations

import configparser
import subprocess

from conftest import BIN, ROOT, ansible_env

# An action plugin runs in the task's worker, forked from the controller: it reports which plugin modules the fork
# inherited, before the worker renders anything (the task has no arguments and no condition).
ACTION = '''from __future__ import annotations
import sys
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        names = list(sys.modules)
        def loaded(prefix):
            return any(name.startswith(prefix) for name in names)
        return {"changed": False, "loaded": {
            "builtin_filters": loaded("ansible.plugins.filter.core"),
            "builtin_tests": loaded("ansible.plugins.test.core"),
            "collection_filters": loaded("ansible_collections.bluefleet.dpu.plugins.filter.roce_plan"),
            "lookups": loaded("ansible_collections.ansible.builtin.plugins.lookup.template"),
        }}
'''

PLAYBOOK = """- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - inherited_plugins:
      register: seen
    - ansible.builtin.debug:
        msg: "LOADED=[{{ seen.loaded | dict2items | selectattr('value') | map(attribute='key') | join(' ') }}]"
"""


def _loaded(tmp_path, env) -> list[str]:
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", str(tmp_path / "play.yml")],
                          env=dict(env, ANSIBLE_ACTION_PLUGINS=str(tmp_path / "action_plugins")), cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (line,) = [x for x in proc.stdout.splitlines() if "LOADED=" in x]
    return sorted(line.split("LOADED=[", 1)[1].split("]", 1)[0].split())


def test_ansible_cfg_enables_it():
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "ansible.cfg")
    assert "bluefleet.dpu.preload" in [c.strip() for c in config.get("defaults", "callbacks_enabled").split(",")]
    assert "bluefleet.dpu.preload" in ansible_env()["ANSIBLE_CALLBACKS_ENABLED"].split(",")


def test_workers_are_forked_with_the_plugins_loaded(tmp_path):
    (tmp_path / "action_plugins").mkdir()
    (tmp_path / "action_plugins" / "inherited_plugins.py").write_text(ACTION)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = ansible_env()
    kinds = ["builtin_filters", "builtin_tests", "collection_filters", "lookups"]
    assert _loaded(tmp_path, env) == kinds
    without = ",".join(c for c in env["ANSIBLE_CALLBACKS_ENABLED"].split(",") if c != "bluefleet.dpu.preload")
    assert _loaded(tmp_path, dict(env, ANSIBLE_CALLBACKS_ENABLED=without)) == []
