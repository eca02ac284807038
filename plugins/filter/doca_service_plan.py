# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.doca_service_plan``: what ``bluefleet.dpu.doca_service`` with ``services`` would do, worked
out on the controller from preflight's read of the DPU (``bluefleet.dpu.dpu_info`` with the section ``doca_services``:
the sha256 of each service's manifest and configuration files, and each service's pod as the module finds it), so that
the doca_services role needs no doca_service run on a DPU that runs every service as asked.

The options are doca_service's, checked with its argument spec and its own checks of the services (known name,
pinned image, manifest that parses, file names, a service named twice, two services writing one file); the manifest
text, the files each service writes, the pod choice and the readiness are the module's
(``module_utils.domain._doca``). In state only where the module would write nothing - each file's sha256 is that of
the text the module would write; for a service removed, no manifest and none of the files named - and would wait for
no pod (each service's pod ready for its config hash; a removed one's gone). When the read cannot answer - no such
section, the files read under another root or the manifests in another folder, the pods not read (crictl missing or
failing), a service with its own ``config_dir``, the node changed after the read (``changed_at``, ``reset``:
``module_utils.domain._read_plan.stale_reason``), or options the module would refuse - the answer says why and the
playbook runs the module, which reads the node itself (and fails with its own message on bad input).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def doca_service_plan(read, services, manifest_dir, fs_root, changed_at=None, reset=False):
    """``{answered, in_state, why}`` and, when answered, ``changes`` and doca_service's check-mode result keys but
    ``diff`` (``changed``, ``changed_files``, ``services``, ``reset_required``) for the module's options ``services``,
    ``manifest_dir`` and ``fs_root`` on the DPU ``read`` describes; ``in_state``: answered, nothing to write and no
    pod to wait for."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._doca import (
        MODULE_RULES,
        argument_spec,
        check_services,
        plan_from_read,
    )
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._read_plan import answer_check

    if not isinstance(services, list):
        raise AnsibleFilterError("doca_service_plan: services must be doca_service's services (a list), got %r"
                                 % (services,))
    options = {"services": services, "manifest_dir": manifest_dir, "fs_root": fs_root}
    return answer_check(read, options, "doca_service", argument_spec(), plan_from_read, changed_at, reset,
                        check=check_services, **MODULE_RULES)


class FilterModule:
    def filters(self):
        return {"doca_service_plan": doca_service_plan}
