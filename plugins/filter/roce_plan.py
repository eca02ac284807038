# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.roce_plan``: what ``bluefleet.dpu.roce_qos`` would change, worked out on the controller from
preflight's read of the node (``bluefleet.dpu.dpu_info`` with the section ``roce``), so that a node that holds every
setting needs no roce_qos run.

The options are roce_qos's, checked with its argument spec and its input checks; the comparison is roce_qos's own
(``module_utils.domain._roce_qos``: ``view_state``, ``desired_state``, ``changes_of``). When the read cannot answer
- it was made for other netdevs, a netdev could not be read, the node changed after the read (``changed_at``,
``reset``: ``module_utils.domain._read_plan.stale_reason``), or the options do not pass roce_qos's checks - the
answer says why and the playbook runs roce_qos, which reads the node itself.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def roce_plan(read, options, changed_at=None, reset=False):
    """``{answered, in_state, why, changes, rdma}`` for roce_qos with ``options`` on the node ``read`` describes;
    ``in_state``: answered, and nothing to change."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._read_plan import answer_check
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._roce_qos import (
        argument_spec,
        check_input,
        netdevs_of,
        plan_from_read,
    )
    if not isinstance(options, dict):
        raise AnsibleFilterError("roce_plan: the options must be roce_qos's options (a dict), got %r" % (options,))
    return answer_check(read, options, "roce_qos", argument_spec(),
                        lambda read, params: plan_from_read(read.get("roce"), params), changed_at, reset,
                        check=lambda params: check_input(params, netdevs_of(params)))


class FilterModule:
    def filters(self):
        return {"roce_plan": roce_plan}
