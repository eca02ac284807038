# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``bluefleet.dpu.snap_settings``: the SNAP storage settings of a DPU (remote NVMe-oF targets, the
emulated NVMe controllers and their namespaces), checked on the controller before a role writes anything.

The rules are the ones of ``module_utils.domain._doca.check_snap`` (the conformance check uses the same function):
every target has name, address and an NQN starting with ``nqn.``; controllers are unique with a non-negative
integer ``pf_id``; every namespace has a unique positive ``nsid``, a declared controller, a bdev
``<target>n<N>`` of a declared target and, when given, a positive integer ``size_bytes``. Settings that hang
together come back unchanged; otherwise the filter fails with check_snap's message, which names the entry,
what is wrong and the variables to fix.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def _fail(msg):
    raise AnsibleFilterError("snap_settings: %s" % msg)


def _entries(value, var):
    """``value`` as a list of entries; None means none. A mapping or a string is refused (it is not a list)."""
    # Imported here, not at the top: to find one filter, Ansible loads every filter file of the collection, in
    # every worker (one per task and host); only the called filter's code need be imported.
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._doca import SNAP_FIX
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        _fail("%s must be a list of mappings, got %r; %s" % (var, value, SNAP_FIX))
    return list(value)


def snap_settings(targets, controllers=None, namespaces=None):
    """``targets`` unchanged when targets, controllers and namespaces hang together; AnsibleFilterError otherwise."""
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._doca import DocaError, check_snap
    checked = (_entries(targets, "doca_services_snap_targets"),
               _entries(controllers, "doca_services_snap_controllers"),
               _entries(namespaces, "doca_services_snap_namespaces"))
    try:
        check_snap(*checked)
    except DocaError as err:
        _fail(str(err))
    return targets


class FilterModule:
    def filters(self):
        return {"snap_settings": snap_settings}
