# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.lineinfile_plan``: whether ``ansible.builtin.lineinfile`` with ``path``, ``line``,
``create: true`` and ``mode`` would change the file, worked out on the controller from preflight's read of the node
(``bluefleet.dpu.dpu_info``, section ``files`` read with ``file_lines``: the file's mode and whether it holds the line
as lineinfile leaves it alone), so that a node whose file holds the line needs no lineinfile run.

It answers "in state" only where lineinfile changes nothing: a regular file (no symbolic link) with that mode whose
last line equal to ``line`` ends with the line separator (``module_utils.domain._lineinfile``). When the read cannot
answer - no files section, another root, the path or its lines not read, or the node changed after the read
(``changed_at``, ``reset``) - the answer says why and the playbook runs lineinfile.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def lineinfile_plan(read, path, line, mode, fs_root="/", changed_at=None, reset=False):
    """``{answered, in_state, why, changes}`` for lineinfile with ``path`` (as the machine sees it, under
    ``fs_root``), ``line``, ``create: true`` and ``mode``; ``in_state``: answered, and nothing to write."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._lineinfile import line_changes
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._read_plan import stale_reason
    for name, value in (("path", path), ("line", line)):
        if not isinstance(value, str) or not value:
            raise AnsibleFilterError("lineinfile_plan: %s must be a non-empty string, got %r" % (name, value))
    why = stale_reason(read, changed_at, reset)
    if why:
        return {"answered": False, "in_state": False, "why": why}
    changes = line_changes(read.get("files"), str(path), str(line), mode, fs_root)
    if isinstance(changes, str):
        return {"answered": False, "in_state": False, "why": changes}
    return {"answered": True, "in_state": not changes, "why": "", "changes": changes}


class FilterModule:
    def filters(self):
        return {"lineinfile_plan": lineinfile_plan}
