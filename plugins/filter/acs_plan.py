# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.acs_plan``: what ``bluefleet.dpu.pci_acs`` would change, worked out on the controller from
preflight's read of the GPU host (``bluefleet.dpu.gpu_info``, section ``acs``: ``lspci -D -vvv`` and the boot-time
unit), so that a host whose bridges have ACS off and whose unit is as asked needs no pci_acs run.

The options are pci_acs's, checked with its argument spec; the plan is pci_acs's own (``module_utils.domain.
_pci_acs``: ``plan``, with ``targets`` and ``unit_text``). When the read cannot answer - lspci or the unit could not
be read, the unit was read under another root than the options' ``fs_root``, the bridges asked are not bridges with
ACS (pci_acs fails with its own message), the node changed after the read (``changed_at``, ``reset``), or pci_acs
would refuse the options - the answer says why and the playbook runs pci_acs, which reads the node itself.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def acs_plan(read, options, changed_at=None, reset=False):
    """``{answered, in_state, why, changes}`` for pci_acs with ``options`` on the host ``read`` (a gpu_info result)
    describes; ``changes`` are the bridges pci_acs would write, then the unit's path when it would write it;
    ``in_state``: answered, and nothing to change."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._pci_acs import argument_spec, plan_from_read
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._read_plan import answer_check
    if not isinstance(options, dict):
        raise AnsibleFilterError("acs_plan: the options must be pci_acs's options (a dict), got %r" % (options,))
    return answer_check(read, options, "pci_acs", argument_spec(),
                        lambda read, params: plan_from_read(read.get("acs"), params), changed_at, reset)


class FilterModule:
    def filters(self):
        return {"acs_plan": acs_plan}
