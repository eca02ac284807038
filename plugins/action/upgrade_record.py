# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bluefleet.dpu.upgrade_record: write one node's upgrade record on the controller, in the worker itself.

The record is the controller's own state (playbooks/upgrade.yml reads it back with a lookup), so writing it needs
no module process: ``ansible.builtin.copy`` delegated to localhost started two (stat, then copy) per node and
batch, and ``ansible.builtin.file`` a third for the folder. Documentation: plugins/modules/upgrade_record.py.
"""

from __future__ import annotations

import json
import os
import stat

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.json import get_encoder
from ansible.plugins.action import ActionBase
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import (
    missing_folders,
    octal_mode,
    write_file,
)

ARGUMENT_SPEC = {
    "path": {"type": "path", "required": True},
    "record": {"type": "dict", "required": True},
    "mode": {"type": "raw", "default": "0644"},
    "dir_mode": {"type": "raw", "default": "0755"},
}


def parse_mode(value, what):
    """'0644' or an int (YAML's 0644 arrives as 420) -> int; AnsibleActionFail otherwise."""
    try:
        return octal_mode(value, what)
    except ValueError as exc:
        raise AnsibleActionFail(str(exc)) from None


def render(record):
    """The record as the file holds it: ``to_nice_json`` and a newline (the same bytes the playbook wrote with
    ``ansible.builtin.copy`` before, so that a record of an earlier run compares equal)."""
    return json.dumps(record, cls=get_encoder("tagless"), indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def folders_to_make(path):
    """The folders above ``path`` that do not exist, outermost first; AnsibleActionFail when one is a file."""
    try:
        return missing_folders(path)
    except NotADirectoryError as exc:
        raise AnsibleActionFail("%s is in the way: a file where the record's folder is needed; remove it or choose "
                                "another folder" % exc.filename) from None


def read_before(path):
    """(text before or None, mode before or None); AnsibleActionFail when ``path`` is not a file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None, None
    if not stat.S_ISREG(st.st_mode):
        raise AnsibleActionFail("%s is %s, not a file; remove it or choose another folder"
                                % (path, "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"))
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read(), stat.S_IMODE(st.st_mode)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        path = os.path.abspath(os.path.expanduser(args["path"]))
        mode = parse_mode(args["mode"], "mode")
        dir_mode = parse_mode(args["dir_mode"], "dir_mode")
        content = render(args["record"])
        try:
            folders = folders_to_make(path)  # first: it names a file in the way
            before, before_mode = read_before(path)
            changed = before != content or before_mode != mode
            if changed and not self._task.check_mode:
                for folder in folders:
                    os.mkdir(folder)
                    os.chmod(folder, dir_mode)  # mkdir's mode goes through the umask
                write_file(path, content, mode=mode)
                if stat.S_IMODE(os.stat(path).st_mode) != mode:
                    os.chmod(path, mode)
        except OSError as exc:
            raise AnsibleActionFail("upgrade_record: cannot write %s: %s; free space or make the folder writable, "
                                    "or choose another folder" % (path, exc.strerror or exc)) from None
        result.update(changed=changed, path=path, created=before is None, directories=folders)
        if changed and self._task.diff:
            result["diff"] = {"before_header": path, "after_header": path, "before": before or "",
                              "after": content}
        return result
