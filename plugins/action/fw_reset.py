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

The three ``reconnect_*`` options are this plugin's (the firmware role passes firmware_reconnect_delay,
firmware_reconnect_timeout and firmware_reconnect_sleep); they are taken off before the module runs. The read after
the restart is made whatever ``verify`` says: it is how the plugin knows the node is back. Documentation:
plugins/modules/fw_reset.py.
"""

from __future__ import annotations

import time

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

CONTROLLER_OPTIONS = {"reconnect_delay": 60, "reconnect_timeout": 1800, "reconnect_sleep": 5}
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


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        module_args = dict(self._task.args)
        try:
            delay, timeout, sleep = (seconds(module_args, name) for name in CONTROLLER_OPTIONS)
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
                                                      dropped=not restarts))

    def read_after_restart(self, module_args, task_vars, first, waits, dropped):
        """Wait for the node, then read the card in check mode; the task's result. ``dropped``: the session ended
        under the reset (else the module said the node restarts after its command)."""
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
            read = self.read_in_check_mode(module_args, task_vars)
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

    def read_in_check_mode(self, module_args, task_vars):
        """The module's read of the card, nothing written (check mode); a connection that fails is unreachable."""
        check_mode = self._task.check_mode
        self._task.check_mode = True
        try:
            return self._execute_module("bluefleet.dpu.fw_reset", module_args=dict(module_args), task_vars=task_vars)
        except AnsibleConnectionFailure as exc:
            return {"unreachable": True, "msg": str(exc)}
        finally:
            self._task.check_mode = check_mode
