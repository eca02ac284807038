# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.restriction_plan``: what ``bluefleet.dpu.host_restriction`` would change, worked out on the
controller from preflight's read of the DPU (``bluefleet.dpu.dpu_info`` with the section ``privilege``: the card's
``mlxprivhost q``), so that a DPU whose host level and flags are as asked needs no host_restriction run.

The options are host_restriction's, checked with its argument spec and its own rule; the comparison and the result
keys are the module's (``module_utils.domain._host_restriction``: ``state_of``, ``wanted_state``, ``outcome``). When
the read cannot answer - it lists not exactly one card, has no privilege section (the host side, mlxprivhost
missing), queried another device than the module would, or the node changed after it (``changed_at``, ``reset``:
``module_utils.domain._read_plan.stale_reason``), or the module would refuse the options - the answer says why and
the playbook runs the module, which reads the card itself.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def restriction_plan(read, options, changed_at=None, reset=False):
    """``{answered, in_state, why}`` and, when answered, host_restriction's check-mode result keys (``changed``,
    ``device``, ``level``, ``previous_level``, ``port_functions``, ``reset_required``, ``reset_required_by``,
    ``diff``) for ``options`` on the DPU ``read`` describes; ``in_state``: answered, and nothing to change."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._host_restriction import (
        argument_spec,
        check_params,
        plan_from_read,
    )
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._read_plan import answer_check
    if not isinstance(options, dict):
        raise AnsibleFilterError("restriction_plan: the options must be host_restriction's options (a dict), got %r"
                                 % (options,))
    return answer_check(read, options, "host_restriction", argument_spec(), plan_from_read, changed_at, reset,
                        check=check_params, done="changed")


class FilterModule:
    def filters(self):
        return {"restriction_plan": restriction_plan}
