# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.ipsec_offload_plan``: what ``bluefleet.dpu.ipsec_offload`` in check mode would answer,
worked out on the controller from preflight's read of the DPU (``bluefleet.dpu.dpu_info`` with the section
``ipsec_offload``: whether mlnx-bf.conf exists, the value of its last IPSEC_FULL_OFFLOAD assignment, the driver's
IPsec mode per uplink), so that the switchdev role needs no ipsec_offload run on a DPU that holds it.

The options are ipsec_offload's, checked with its argument spec and its check of ``path``; the comparison and the
result keys are the module's (``module_utils.domain._ipsec_offload``). When the read cannot answer - no such section,
the file could not be read, the read was made of another file or under another root, the node changed after it
(``changed_at``, ``reset``: ``module_utils.domain._read_plan.stale_reason``), or the module would refuse the options -
the answer says why and the playbook runs the module, which reads the node itself.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def check_path(params):
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._ipsec_offload import path_problem
    from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError

    problem = path_problem(params["path"])
    if problem:
        raise ToolError(problem)


def ipsec_offload_plan(read, options, changed_at=None, reset=False):
    """``{answered, in_state, why}`` and, when answered, ``changes`` and ipsec_offload's check-mode result keys but
    ``diff`` (``changed``, ``conf_file``, ``full_offload``, ``before``, ``previous``, ``driver_ipsec_mode``,
    ``restart_required``, ``reset_required``) for ``options`` on the DPU ``read`` describes; ``in_state``: answered,
    the file as asked and the driver running it (no change, no restart)."""
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._ipsec_offload import (
        argument_spec,
        plan_from_read,
    )
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._read_plan import answer_check

    if not isinstance(options, dict):
        raise AnsibleFilterError("ipsec_offload_plan: the options must be ipsec_offload's options (a dict), got %r"
                                 % (options,))
    return answer_check(read, options, "ipsec_offload", argument_spec(), plan_from_read, changed_at, reset,
                        check=check_path)


class FilterModule:
    def filters(self):
        return {"ipsec_offload_plan": ipsec_offload_plan}
