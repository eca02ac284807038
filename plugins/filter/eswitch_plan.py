# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.eswitch_plan``: what ``bluefleet.dpu.eswitch`` in check mode would answer, worked out on the
controller from preflight's read of the node (``bluefleet.dpu.dpu_info`` with the section ``eswitch`` and its
``ports``, ``eswitch_ports=true``), so that the switchdev role needs no eswitch check run.

The options are eswitch's, checked with its argument spec (and its exclusive options); the netdev -> device
resolution, the comparison and the result keys are the module's (``module_utils.domain._eswitch``: ``owners_of``,
``plan_entry``, ``outcome``). It answers only where the module would not fail: when a netdev is no port of a card's
function, or its device has no eswitch, or the read lacks the section or the ports, or the node changed after it
(``changed_at``, ``reset``: ``module_utils.domain._read_plan.stale_reason``), or the module would refuse the options,
the answer says why and the playbook runs the module, which reads the node itself (and fails naming the netdev).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def eswitch_plan(read, options, changed_at=None, reset=False):
    """``{answered, in_state, why}`` and, when answered, eswitch's check-mode result keys (with O(netdevs):
    ``changed``, ``eswitches``, ``before``, ``vfs``, ``reset_required``, ``diff``) for ``options`` on the node ``read``
    describes; ``in_state``: answered, and nothing to change. ``vfs`` is null where a mode differs (not read)."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._eswitch import (
        MUTUALLY_EXCLUSIVE,
        REQUIRED_ONE_OF,
        argument_spec,
        check_netdevs,
        plan_from_read,
    )
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._read_plan import answer_check
    if not isinstance(options, dict):
        raise AnsibleFilterError("eswitch_plan: the options must be eswitch's options (a dict), got %r" % (options,))
    return answer_check(read, options, "eswitch", argument_spec(), plan_from_read, changed_at, reset,
                        check=check_netdevs, done="changed", mutually_exclusive=MUTUALLY_EXCLUSIVE,
                        required_one_of=REQUIRED_ONE_OF)


class FilterModule:
    def filters(self):
        return {"eswitch_plan": eswitch_plan}
