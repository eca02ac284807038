# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which devlink device each netdev belongs to, and what differs from the eswitch asked, shared by ``eswitch`` (its
check), ``dpu_info`` (the eswitch section's ``ports``) and the filter ``bluefleet.dpu.eswitch_plan`` (eswitch's check,
worked out on the controller from preflight's read).

- ``PORTS_ARGV`` (``devlink -j port show``) and ``port_owners(ports, handles)``: netdev -> devlink device of the
  ports of ``handles``, from the parsed ports (``_devlink.parse_port``), as ``owners_of`` finds them.
- ``resolve_device(device, devices)`` and ``owners_of(netdevs, ports, devices, option)``: the devices the options
  name (a PCI address; the devices owning each netdev's port, one entry per device in the order of the netdevs);
  ToolError, before anything changes, for one devlink does not list or that has no eswitch, all of them named.
- ``plan_entry(params, devices, handle, netdevs, vfs_of)`` and ``outcome(params, plan, changed)``: the eswitch asked
  for each device, whether it differs, and the module's result keys. ``vfs_of(handle)`` gives the VFs to unbind
  around a mode change (the module reads sysfs; a plan from a read gives None: not read).
- ``plan_from_read(read, params)``: the module's check-mode answer from a dpu_info read, or why it cannot be given.

Errors are ``_tooling.ToolError``. No AnsibleModule import, no I/O.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._cards import full_bdf
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import device_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    fs_root_spec,
    timeout_spec,
)

KEYS = ("mode", "inline_mode", "encap_mode")
PORTS_ARGV = ("devlink", "-j", "port", "show")
MUTUALLY_EXCLUSIVE = [("device", "netdev", "netdevs")]
REQUIRED_ONE_OF = [("device", "netdev", "netdevs")]
_BDF_RE = LazyPattern(r"^(?:pci/)?(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])$")


def argument_spec():
    return {
        "device": device_spec(),
        "netdev": {"type": "str"},
        "netdevs": {"type": "list", "elements": "str"},
        "mode": {"type": "str", "choices": ["legacy", "switchdev"], "required": True},
        "inline_mode": {"type": "str", "choices": ["none", "link", "network", "transport"]},
        "encap_mode": {"type": "str", "choices": ["none", "basic"]},
        "fs_root": fs_root_spec(),
        "timeout": timeout_spec(60),
    }


def handle_of(device):
    """``03:00.0`` / ``0000:03:00.0`` / ``pci/0000:03:00.0`` -> ``pci/0000:03:00.0``; None when not a PCI address."""
    match = _BDF_RE.match(device.strip())
    if not match:
        return None
    return "pci/%s:%s" % ((match.group(1) or "0000").lower(), match.group(2).lower())


def check_netdevs(params):
    if params["netdevs"] is not None and not params["netdevs"]:
        raise ToolError("set eswitch failed: netdevs is empty; give the uplinks, e.g. [p0, p1]")


def resolve_device(device, devices):
    """The devlink handle of the ``device`` option; a device devlink does not list fails here."""
    known = ", ".join(sorted(devices)) or "none"
    handle = handle_of(device)
    if handle is None:
        raise ToolError("set eswitch failed: device %r is not a PCI address; give one like 0000:03:00.0 "
                        "(devlink lists: %s)" % (device, known))
    if handle not in devices:
        raise ToolError("set eswitch failed: no devlink device %s on this machine (devlink lists: %s); "
                        "check the device option" % (handle, known))
    return handle


def owners_of(netdevs, ports, devices, option):
    """``[(handle, [netdev, ...])]`` in the order of ``netdevs``, one entry per device (two netdevs of one device
    set it once), from ``ports`` (parsed ``devlink -j port show``). The netdevs that are no port of a device with an
    eswitch (``devices``) fail here, all of them named in one message."""
    owners, problems = {}, []
    for netdev in netdevs:
        found = sorted({port["device"] for port in ports.values() if port.get("netdev") == netdev})
        if not found:
            problems.append("netdev %r is not a port of any devlink device" % netdev)
        elif found[0] not in devices:
            problems.append("devlink shows no eswitch for %s (the device of netdev %s)" % (found[0], netdev))
        else:
            owners.setdefault(found[0], []).append(netdev)
    if problems:
        names = sorted({port["netdev"] for port in ports.values() if port.get("netdev")})
        raise ToolError("set eswitch failed: %s (devlink ports: %s); check the %s option; nothing was changed"
                        % ("; ".join(problems), ", ".join(names) or "none", option))
    return list(owners.items())


def port_owners(ports, handles):
    """``{netdev: device}`` for the ports (parsed ``devlink -j port show``) of the devices ``handles`` that have a
    netdev; a netdev of two ports keeps the device ``owners_of`` takes (the first by name)."""
    owners = {}
    for port in ports.values():
        netdev, device = port.get("netdev"), port.get("device")
        if netdev and device in handles and (netdev not in owners or device < owners[netdev]):
            owners[netdev] = device
    return owners


def plan_entry(params, devices, handle, netdevs, vfs_of):
    """The eswitch asked for the device ``handle`` (an option left null keeps what the device has) and whether it
    differs; ``vf_drivers``: ``vfs_of(handle)`` when the mode changes (the VFs unbound around it), else empty."""
    before = devices[handle]
    want = dict(before)
    for key in KEYS:
        if params[key] is not None:
            want[key] = params[key]
    changed = want != before
    vfs = vfs_of(handle) if want["mode"] != before["mode"] else []
    return {"device": handle, "netdevs": netdevs, "before": before, "want": want, "changed": changed,
            "vf_drivers": vfs, "after": before}


def _vfs(entry):
    return None if entry["vf_drivers"] is None else [vf for vf, dummy in entry["vf_drivers"]]


def outcome(params, plan, changed):
    """The module's result keys for ``plan`` (its entries with ``after`` set: in check mode, the state predicted).
    A ``vfs`` of None: the VFs were not read (a plan from a read, where the mode changes)."""
    if params["netdevs"] is None:
        entry = plan[0]
        return {
            "changed": changed,
            "device": entry["device"],
            "eswitch": entry["after"],
            "before": entry["before"],
            "previous": entry["before"],
            "vfs": _vfs(entry),
            "reset_required": "none",
            "diff": make_diff(entry["before"], entry["want"]),
        }
    vfs = [_vfs(entry) for entry in plan]
    return {
        "changed": changed,
        "eswitches": [{"device": entry["device"], "netdevs": entry["netdevs"], "changed": entry["changed"],
                       "eswitch": entry["after"], "before": entry["before"], "vfs": _vfs(entry)}
                      for entry in plan],
        "before": dict((entry["device"], entry["before"]) for entry in plan),
        "vfs": None if None in vfs else [vf for each in vfs for vf in each],
        "reset_required": "none",
        "diff": make_diff(dict((entry["device"], entry["before"]) for entry in plan),
                          dict((entry["device"], entry["want"]) for entry in plan)),
    }


def plan_from_read(read, params):
    """eswitch's check of ``params`` (its options, validated) from a dpu_info read with the section ``eswitch`` and
    its ``ports`` (dpu_info's ``eswitch_ports``): ``dict(outcome, answered=True)``, or ``{"answered": False,
    "why": ...}``: then the module must read the node itself.

    The read keeps what devlink shows for the cards' PCI functions: the eswitch of each (``devlink dev eswitch
    show``) and the netdev of each of their ports (``devlink -j port show``). It answers when every device the
    options name is one of those functions and has an eswitch; a netdev it finds on no card's port, or whose device
    has no eswitch, it leaves to the module, which fails naming it (or finds it on a device that is no card's).
    """
    def unanswered(why):
        return {"answered": False, "why": why}

    cards = read.get("devices")
    if not isinstance(cards, list) or not cards:
        return unanswered("the read lists no card")
    devices, ports = {}, {}
    for card in cards:
        section = card.get("eswitch")
        if not isinstance(section, dict) or not section.get("available"):
            return unanswered("the read has no eswitch section%s" % (
                (": " + section["reason"]) if isinstance(section, dict) and section.get("reason") else ""))
        if params["device"] is None and section.get("ports") is None:
            return unanswered("the read has no devlink ports%s" % (
                (": " + section["ports_reason"]) if section.get("ports_reason")
                else " (dpu_info's eswitch_ports was not asked)"))
        for bdf, state in (section.get("functions") or {}).items():
            devices["pci/" + full_bdf(bdf)] = dict(state)
        for netdev, handle in (section.get("ports") or {}).items():
            ports["%s/%s" % (handle, netdev)] = {"device": handle, "netdev": netdev}
    try:
        if params["device"] is not None:
            owners = [(resolve_device(params["device"], devices), [])]
        else:
            option = "netdev" if params["netdev"] is not None else "netdevs"
            netdevs = [params["netdev"]] if params["netdev"] is not None else params["netdevs"]
            owners = owners_of(netdevs, ports, devices, option)
    except ToolError as exc:
        return unanswered("the read cannot tell what eswitch would find for the cards' functions: %s" % exc.msg)
    plan = [plan_entry(params, devices, handle, netdevs, lambda handle: None) for handle, netdevs in owners]
    for entry in plan:
        entry["after"] = entry["want"]  # the check-mode prediction
    changed = any(entry["changed"] for entry in plan)
    return dict(outcome(params, plan, changed), answered=True)
