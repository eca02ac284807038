# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bluefleet.dpu.fw_reset: run the module; where the reset restarts the node the module runs on, reconnect and read.

A level-3 ``mlxfwreset`` run in a BlueField's own Arm OS restarts that OS ("BlueField system reboot", NVIDIA DOCA
"BlueField Reset and Reboot Procedures"): the session that runs the module ends under it, before the module can read
the card again and answer. Ansible then reports the task unreachable (the connection raises), or failed with ssh's
exit status 255 and its "closed by remote host" line (the twin's model of it, ``dpusim.tools.mlxfwreset``). A reboot
or power cycle by the node's own command (``reboot_command``, ``power_cycle_command``) returns before the node goes
down: the module answers ``restarting`` without reading the card (it would find it as before). In both cases, as
``ansible.builtin.reboot`` does around its reboot command, the node is tried again after ``reconnect_delay`` s and
then every ``reconnect_sleep`` s (the connection reset before a try where it was lost) until it answers or
``reconnect_timeout`` s have passed, and the module then reads the card in check mode (nothing is written): the task
fails unless nothing is pending. A run that ends otherwise (the reset refused, nothing to reset, check mode) is the
module's result as it is.

The ``reconnect_*`` options are this plugin's (the firmware role passes firmware_reconnect_delay,
firmware_reconnect_timeout, firmware_reconnect_sleep and firmware_reconnect_read); they are taken off before the
module runs. The read after the restart is made whatever ``verify`` says: it is how the plugin knows the node is back.
With ``reconnect_read`` (sections of ``bluefleet.dpu.dpu_info``: ``dpu_os``, ``rdma_links``) that read is
``dpu_info``'s instead, with the card's firmware and NV configuration and those sections, in the one module run: what
is pending is the card's ``pending_reset`` as dpu_info reads it (Next Boot against Current, the flashed firmware
against the running one), the same questions the module's own read asks, and a check after the reset (the upgrade's
health gate) can take the sections from it instead of reading the node again (a dpu_info read that fails with the
node up, or does not read the card whole, is followed by the module's own read: the check then reads for itself and
names any failure). Documentation:
plugins/modules/fw_reset.py.
"""

from __future__ import annotations

import time

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

CONTROLLER_OPTIONS = {"reconnect_delay": 60, "reconnect_timeout": 1800, "reconnect_sleep": 5, "reconnect_read": []}
WAITS = ("reconnect_delay", "reconnect_timeout", "reconnect_sleep")
# dpu_info's sections a read after the restart can add (those a check after a reset asks for)
READ_SECTIONS = ("dpu_os", "rdma_links")
# ssh's own words when the remote end goes away under a command (OpenSSH clientloop.c, and the ssh connection
# plugin's "Shared connection to HOST closed." of a multiplexed session)
DROP_WORDS = ("closed by remote host", "Shared connection to")


def session_dropped(result):
    """The module's run ended because its session did: unreachable, or failed with ssh's exit status 255 and words."""
    if result.get("unreachable"):
        return True
    if not result.get("failed") or result.get("rc") not in (255, None):
        return False
    text = "%s %s %s" % (result.get("msg", ""), result.get("stderr", ""), result.get("module_stderr", ""))
    return any(words in text for words in DROP_WORDS)


def connection_lost(result):
    """The module's own answer did not come back (the connection raised, or ssh's MODULE FAILURE with the module's
    output lost): the connection is reset before the node is tried again. Where the module answered (the twin's
    tool reported the end of its session), the connection carried that answer and is left as it is: with Mitogen
    on the local connection one context serves every host, and resetting it would cut the other hosts' tasks."""
    return bool(result.get("unreachable")) or "module_stderr" in result or "module_stdout" in result


def seconds(args, name):
    """A whole number of seconds from the plugin's option ``name`` (reconnect_sleep above 0, the others 0 or more);
    ValueError names it."""
    value = args.pop(name, CONTROLLER_OPTIONS[name])
    least = 1 if name == "reconnect_sleep" else 0
    try:
        number = int(str(value))
    except ValueError:
        number = -1
    if number < least:
        wanted = "above 0" if least else "0 or more"
        raise ValueError("%s=%r: give a whole number of seconds (%s)" % (name, value, wanted))
    return number


def sections(args):
    """The dpu_info sections ``reconnect_read`` asks for (a list, or one name); ValueError names a wrong one."""
    value = args.pop("reconnect_read", None) or []
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or any(name not in READ_SECTIONS for name in names):
        raise ValueError("reconnect_read=%r: give a list of %s" % (value, ", ".join(READ_SECTIONS)))
    return list(dict.fromkeys(names))


def card_of(read, device):
    """The card ``device`` names (its mst device or PCI address, or one of its functions', PCI addresses compared
    with their domain: ``domain._cards.full_bdf``), or the only card when ``device`` is empty, in a dpu_info read;
    None where there is not exactly one."""
    from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._cards import full_bdf

    cards = read.get("devices") or []
    if not device:
        return cards[0] if len(cards) == 1 else None
    found = [card for card in cards
             if full_bdf(device) in {full_bdf(entry.get(key)) for entry in [card] + list(card.get("functions") or [])
                                     for key in ("mst", "pci")}]
    return found[0] if len(found) == 1 else None


def as_card_read(read, device, wanted):
    """A dpu_info read shaped as the module's read of the card (``pending``, ``firmware``, ``device``), with the
    card under ``devices`` and the sections asked for, as dpu_info returns them; failed where it does not serve."""
    if read.get("failed"):
        return read
    card = card_of(read, device)
    if card is None:
        return {"failed": True, "cmd": read.get("cmd", []),
                "msg": "the read of the card after the restart (dpu_info) found %s, not the card %s: %s"
                       % ("no card" if not read.get("devices") else "%d cards" % len(read["devices"]),
                          "named by device=%s" % device if device else "to read (name it with device)",
                          read.get("msg") or "check that the card is seated and its driver loaded (mst start)")}
    pending = card.get("pending_reset") or {}
    firmware = card.get("firmware") or {}
    out = {"device": card.get("mst") or device, "devices": [card], "cmd": read.get("cmd", []),
           "firmware": {"running": firmware.get("running"), "flashed": firmware.get("flashed")},
           "pending": {"nvconfig": list(pending.get("nvconfig") or []), "firmware": bool(pending.get("firmware"))},
           "read_at": read.get("read_at")}
    if not firmware.get("available", True) or not (card.get("nvconfig") or {}).get("available", True):
        out.update(failed=True, msg="the read of the card after the restart could not read its firmware or NV "
                                    "configuration")
    out.update({name: read[name] for name in wanted if name in read})
    return out


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        module_args = dict(self._task.args)
        try:
            delay, timeout, sleep = (seconds(module_args, name) for name in WAITS)
            wanted = sections(module_args)
        except ValueError as exc:
            return dict(result, failed=True, msg="bluefleet.dpu.fw_reset: %s" % exc)
        try:
            first = self._execute_module("bluefleet.dpu.fw_reset", module_args=module_args, task_vars=task_vars)
        except AnsibleConnectionFailure as exc:
            first = {"unreachable": True, "msg": str(exc)}
        restarts = not first.get("failed") and first.get("restarting")  # its own reboot or power cycle, by command
        if self._task.check_mode or not (restarts or session_dropped(first)):
            return dict(result, **first)
        return dict(result, **self.read_after_restart(module_args, task_vars, first, (delay, timeout, sleep),
                                                      dropped=not restarts, wanted=wanted))

    def read_after_restart(self, module_args, task_vars, first, waits, dropped, wanted=()):
        """Wait for the node, then read the card in check mode; the task's result. ``dropped``: the session ended
        under the reset (else the module said the node restarts after its command); ``wanted``: reconnect_read."""
        delay, timeout, sleep = waits
        host = task_vars.get("inventory_hostname", "the node")
        started = time.monotonic()
        time.sleep(delay)
        last = None
        lost = connection_lost(first)
        while True:
            if lost:
                try:
                    self._connection.reset()
                except AttributeError:
                    pass
            read = self.read_in_check_mode(module_args, task_vars, wanted)
            if not session_dropped(read):
                break
            last = read
            lost = connection_lost(read)
            if time.monotonic() - started + sleep > delay + timeout:
                return {"failed": True, "unreachable": False, "changed": True, "restarted": True,
                        "msg": "%s did not answer within reconnect_timeout=%d s after %s (the node restarts: a "
                               "BlueField's Arm OS after mlxfwreset -l 3 from its Arm side, or the node's own reboot "
                               "or power cycle): %s. Check the node's console (its BMC, or rshim's from its GPU host) "
                               "and run again once it answers; a longer wait: firmware_reconnect_timeout."
                               % (host, timeout, "its session ended under the reset" if dropped else
                                  "its %s by command" % first.get("reset", "reset").replace("_", " "),
                                  (last or first).get("msg", "")),
                        "cmd": first.get("cmd", [])}
            time.sleep(sleep)
        waited = int(time.monotonic() - started)
        out = dict(read, changed=True, restarted=True, restarting=False, reconnected_after=waited,
                   cmd=list(first.get("cmd", [])) + list(read.get("cmd", [])))
        out.pop("check_mode_prediction", None)
        if read.get("failed"):
            out["msg"] = "%s: read of the card after the node came back (%d s) failed: %s" % (
                host, waited, read.get("msg", ""))
            return out
        pending = read.get("pending") or {}
        if (pending.get("nvconfig") or pending.get("firmware")) and not dropped:
            what = first.get("reset", "reset").replace("_", " ")
            out.update(failed=True, verified=False,
                       msg="verify the %s of %s failed: still pending after the node came back (%d s): %s; the card "
                           "may need a bigger reset (a power cycle)" % (what, host, waited, pending))
            return out
        if pending.get("nvconfig") or pending.get("firmware"):
            # The session's end does not tell whether the reset ran before it (a connection that dropped first looks
            # the same): no verdict on the reset here, and the exit status is the session's (ssh's 255).
            out.update(failed=True, verified=False, rc=255,
                       msg="%s: the session ended under the reset (closed by remote host: the node restarted, or the "
                           "connection dropped before the reset ran), and the card read after the node answered "
                           "again (%d s) still has pending: %s. Run again: the reset is planned again from what the "
                           "card says then." % (host, waited, pending))
            return out
        out.update(verified=True, reset=first.get("reset", read.get("reset")),
                   method=first.get("method", read.get("method")),
                   msg="%s restarted under the reset and answered again after %d s: nothing is pending"
                       % (host, waited))
        return out

    def read_in_check_mode(self, module_args, task_vars, wanted=()):
        """The module's read of the card, nothing written (check mode), or dpu_info's with the sections of
        ``reconnect_read``; a connection that fails is unreachable."""
        check_mode = self._task.check_mode
        self._task.check_mode = True
        try:
            if wanted:
                read = self._execute_module("bluefleet.dpu.dpu_info", task_vars=task_vars, module_args={
                    "filter": ["firmware", "nvconfig", *wanted], "side": module_args.get("side", "auto")})
                if session_dropped(read):
                    return read
                shaped = as_card_read(read, module_args.get("device"), wanted)
                # A read that failed with the node up (a section's tool printed what its parser does not know), or
                # did not read the card whole (not found; a node with mstflint only, whose mstconfig dpu_info does not
                # run): the module's own read of the card decides the reset, and a check after it reads the sections
                # itself and names any failure as its own.
                if not shaped.get("failed"):
                    return shaped
            return self._execute_module("bluefleet.dpu.fw_reset", module_args=dict(module_args), task_vars=task_vars)
        except AnsibleConnectionFailure as exc:
            return {"unreachable": True, "msg": str(exc)}
        finally:
            self._task.check_mode = check_mode
