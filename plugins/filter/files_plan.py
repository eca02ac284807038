# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.files_plan``: the paths ``bluefleet.dpu.files`` would write, worked out on the controller
from preflight's read of the node (``bluefleet.dpu.dpu_info`` with the section ``files``: each file's sha256 and mode,
each link's target), so that a node whose files are all as asked needs no files run.

Compared as the module compares: a file differs when it is missing, not a regular file, or holds other content or
another mode; a link when it points elsewhere (``module_utils.domain._read_plan.files_changes``). When the read cannot
answer - a path or root it did not read, or the node changed after it (``changed_at``, ``reset``) - the answer says
why and the playbook runs the module.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def files_plan(read, files=None, links=None, fs_root="/", changed_at=None, reset=False):
    """``{answered, in_state, why, changes}`` for the files module with ``files``, ``links`` and ``fs_root``;
    ``in_state``: answered, and nothing to write."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._read_plan import files_changes, stale_reason
    for name, value in (("files", files), ("links", links)):
        if not isinstance(value or [], list) or not all(isinstance(e, dict) and "path" in e for e in value or []):
            raise AnsibleFilterError("files_plan: %s must be the files module's %s (a list of dicts with path), got %r"
                                     % (name, name, value))
    why = stale_reason(read, changed_at, reset)
    if why:
        return {"answered": False, "in_state": False, "why": why}
    changes = files_changes(read.get("files"), files or [], links or [], fs_root)
    if isinstance(changes, str):
        return {"answered": False, "in_state": False, "why": changes}
    return {"answered": True, "in_state": not changes, "why": "", "changes": changes}


class FilterModule:
    def filters(self):
        return {"files_plan": files_plan}
