# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.peermem_plan``: what ``bluefleet.dpu.peermem`` would do, worked out on the controller from
preflight's read of the GPU host (``bluefleet.dpu.gpu_info``, section ``peermem``: lsmod, the nv_mem registration
file, the modules-load.d file), so that a host where nvidia_peermem is as asked needs no peermem run.

The options are peermem's, checked with its argument spec; the plan is peermem's own (``module_utils.domain.
_peermem``: ``plan``). When the read cannot answer - lsmod was not read, the modules-load.d file could not be read,
the read was made under other roots than the options name, the node changed after it (``changed_at``, ``reset``:
``module_utils.domain._read_plan.stale_reason``), or peermem would refuse the options - the answer says why and the
playbook runs peermem, which reads the node itself.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def peermem_plan(read, options, changed_at=None, reset=False):
    """``{answered, in_state, why, changes}`` for peermem with ``options`` on the host ``read`` (a gpu_info result)
    describes; ``changes`` are peermem's ``actions``; ``in_state``: answered, and nothing to do."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._peermem import argument_spec, plan_from_read
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._read_plan import answer_check
    if not isinstance(options, dict):
        raise AnsibleFilterError("peermem_plan: the options must be peermem's options (a dict), got %r" % (options,))
    return answer_check(read, options, "peermem", argument_spec(),
                        lambda read, params: plan_from_read(read.get("peermem"), params), changed_at, reset)


class FilterModule:
    def filters(self):
        return {"peermem_plan": peermem_plan}
