# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load the Jinja plugins and lookups once in ansible-playbook, before it forks a worker."""

from __future__ import annotations

DOCUMENTATION = r"""
name: preload
type: aggregate
short_description: Load the filters, tests and lookups once in the controller, before any worker is forked
description:
  - ansible-playbook forks a worker per host for every task. ansible-core 2.19 loads the Jinja plugins (every
    filter and test file of ansible.builtin, and each collection filter a template names) the first time a
    template needs one, in the process that renders it, and a worker's loads end with the worker. Until
    ansible-playbook itself renders such a template (a C(meta) task's condition), every worker of every task scans
    the plugin folders and imports those files again.
  - At the start of the playbook this callback loads, in ansible-playbook, every filter and test plugin of
    ansible.builtin, every filter of this collection, and the lookups the collection's roles use
    (C(ansible.builtin.file), C(template), C(env), C(config), C(password)). The workers are forked with them loaded.
  - It changes no variable, task or result, and prints nothing. ansible.cfg of this repository enables it; elsewhere
    add it to C(callbacks_enabled) (see README, "Speed").
requirements:
  - enable in configuration (C(callbacks_enabled = bluefleet.dpu.preload), or C(ANSIBLE_CALLBACKS_ENABLED))
"""

import os

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader, lookup_loader, test_loader

# The lookups the roles and playbooks of this collection use
# (tests/unit/plugins/callback/test_preload_callback.py keeps the list equal to what they name).
LOOKUPS = ("ansible.builtin.config", "ansible.builtin.env", "ansible.builtin.file", "ansible.builtin.password",
           "ansible.builtin.template")


def own_filters() -> list[str]:
    """The fully qualified names of this collection's filters: one documentation file per filter beside the
    plugins (plugins/filter/<name>.yml, which ansible-doc reads)."""
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "filter")
    return sorted("bluefleet.dpu." + name[:-4] for name in os.listdir(folder) if name.endswith(".yml"))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bluefleet.dpu.preload"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None, options=None):
        super().__init__(display=display, options=options)
        self._loaded = False

    def preload(self) -> None:
        """Load them once (a playbook run may start more than one playbook: import_playbook)."""
        if self._loaded:
            return
        self._loaded = True
        for loader in (filter_loader, test_loader):
            for _plugin in loader.all():  # ansible.builtin's (and any legacy folder's) filter and test files
                pass
        for name in own_filters():
            filter_loader.get(name)
        for name in LOOKUPS:
            lookup_loader.get(name, class_only=True)

    def v2_playbook_on_start(self, playbook):
        self.preload()
