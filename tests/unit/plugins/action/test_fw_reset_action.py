"""bluefleet.dpu.fw_reset's action plugin: a reset that ends the session running the module (the node restarts under
it) is followed by a wait for the node and a read of the card in check mode; any other run is the module's own.

The module is replaced by a script of answers (what the connection returns or raises, call by call); the clock by
one that sleeps instantly.
"""

from __future__ import annotations

from unittest import mock

import pytest
from _action import make_action
from ansible.errors import AnsibleConnectionFailure
from ansible_collections.bluefleet.dpu.plugins.action import fw_reset

TWIN_DROP = {"failed": True, "rc": 255, "msg": "reset the firmware of 03:00.0 with mlxfwreset failed: exit status 255",
             "stderr": "Connection to sim01-dpu closed by remote host.\n",
             "cmd": [["mlxfwreset", "-d", "03:00.0", "-y", "-l", "3", "--sync", "1", "r"]]}
NOTHING_PENDING = {"changed": False, "reset": "none", "method": "none", "pending": {"nvconfig": [], "firmware": False},
                   "firmware": {"running": "32.43.1014", "flashed": "32.43.1014"}, "check_mode_prediction": False,
                   "cmd": [["mlxconfig", "-d", "03:00.0", "-e", "q"]]}
STILL_PENDING = dict(NOTHING_PENDING, pending={"nvconfig": ["NUM_OF_VFS"], "firmware": False})
ARGS = {"device": "03:00.0", "timeout": 600, "reconnect_delay": 7, "reconnect_timeout": 30, "reconnect_sleep": 2}


class Clock:
    def __init__(self):
        self.now = 1000.0
        self.slept = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def run(answers, args=None, check_mode=False, modules=None):
    """Run the action with the module answering ``answers`` in turn (an exception is raised); returns (result,
    the calls the module got as (module args, check mode), the clock, the connection). ``modules``: a list that gets
    the name of the module each call ran."""
    action, task, connection = make_action(fw_reset, "bluefleet.dpu.fw_reset", dict(ARGS if args is None else args),
                                           check_mode=check_mode)
    calls = []
    script = list(answers)

    def execute(name, module_args=None, task_vars=None):
        assert name in ("bluefleet.dpu.fw_reset", "bluefleet.dpu.dpu_info")
        if modules is not None:
            modules.append(name)
        calls.append((dict(module_args), task.check_mode))
        answer = script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)

    clock = Clock()
    with mock.patch.object(action, "_execute_module", side_effect=execute), \
            mock.patch.object(fw_reset.time, "monotonic", clock.monotonic), \
            mock.patch.object(fw_reset.time, "sleep", clock.sleep):
        result = action.run(task_vars={"inventory_hostname": "sim01-dpu"})
    assert not script, "answers left over: the action ran the module fewer times than expected"
    return result, calls, clock, connection


def test_a_reset_the_module_saw_through_is_its_own_result():
    answer = dict(NOTHING_PENDING, changed=True, reset="firmware_reset", verified=True)
    result, calls, clock, connection = run([answer])
    assert result["verified"] and result["reset"] == "firmware_reset" and "restarted" not in result
    assert calls == [({"device": "03:00.0", "timeout": 600}, False)], "the reconnect options stay on the controller"
    assert clock.slept == [] and not connection.reset.called


def test_a_refusal_is_not_a_restart():
    refused = {"failed": True, "rc": 1, "msg": "reset the firmware of 03:00.0 failed: -E- Reset-level '3' is not "
                                               "supported for device, 03:00.0.", "stderr": ""}
    result, calls, clock = run([refused])[:3]
    assert result["failed"] and "not supported" in result["msg"] and len(calls) == 1 and clock.slept == []


def test_the_twin_ends_the_session_then_the_card_is_read_in_check_mode():
    result, calls, clock, connection = run([TWIN_DROP, NOTHING_PENDING])
    assert result["restarted"] and result["verified"] and result["changed"] and not result.get("failed")
    assert calls[1] == ({"device": "03:00.0", "timeout": 600}, True), "the read is the module in check mode"
    assert clock.slept == [7]
    # the module answered (the tool reported its session's end): the connection carried that answer and is kept
    # (with Mitogen on the local connection one context serves every host: a reset would cut their tasks)
    assert not connection.reset.called
    assert result["reconnected_after"] == 7 and "check_mode_prediction" not in result
    assert result["cmd"] == TWIN_DROP["cmd"] + NOTHING_PENDING["cmd"]
    assert "sim01-dpu restarted under the reset" in result["msg"]


def test_a_real_session_end_raises_and_the_node_is_tried_until_it_answers():
    down = AnsibleConnectionFailure("Failed to connect to the host via ssh: Connection refused")
    answers = [AnsibleConnectionFailure("Shared connection to dpu closed."), down, down,
               {"unreachable": True, "msg": "timed out"}, NOTHING_PENDING]
    result, calls, clock, connection = run(answers)
    assert result["restarted"] and result["verified"] and not result.get("failed")
    assert clock.slept == [7, 2, 2, 2] and result["reconnected_after"] == 13
    assert [call[1] for call in calls] == [False, True, True, True, True]
    assert connection.reset.call_count == 4, "the connection is reset before each try after it was lost"


def test_an_ssh_module_failure_with_the_output_lost_resets_the_connection():
    lost = {"failed": True, "rc": 255, "msg": "MODULE FAILURE", "module_stdout": "",
            "module_stderr": "Shared connection to dpu closed.\r\n"}
    result, connection = run([lost, NOTHING_PENDING])[::3]
    assert result["restarted"] and result["verified"] and connection.reset.call_count == 1


def test_still_pending_after_the_restart_fails_naming_it():
    result = run([TWIN_DROP, STILL_PENDING])[0]
    assert result["failed"] and not result["verified"] and result["restarted"]
    assert "still has pending" in result["msg"] and "NUM_OF_VFS" in result["msg"] and result["rc"] == 255
    # no verdict that a power cycle is needed (the upgrade would record a blocker): the reset may not have run
    assert "power cycle" not in result["msg"].lower()


def test_a_node_that_never_answers_fails_after_the_timeout():
    down = AnsibleConnectionFailure("Failed to connect to the host via ssh: No route to host")
    result, calls, clock = run([TWIN_DROP] + [down] * 16)[:3]
    assert result["failed"] and "did not answer within reconnect_timeout=30 s" in result["msg"]
    assert "No route to host" in result["msg"] and "firmware_reconnect_timeout" in result["msg"]
    assert clock.now - 1000.0 <= 7 + 30 and len(calls) == 17


def test_check_mode_reads_once_whatever_it_answers():
    result, calls = run([dict(NOTHING_PENDING, reset="firmware_reset")], check_mode=True)[:2]
    assert result["reset"] == "firmware_reset" and len(calls) == 1 and calls[0][1] is True


@pytest.mark.parametrize("name,value", [("reconnect_delay", -1), ("reconnect_timeout", "soon"),
                                        ("reconnect_sleep", 0)])
def test_a_bad_wait_is_refused_before_the_module_runs(name, value):
    result, calls = run([], args=dict(ARGS, **{name: value}))[:2]
    assert result["failed"] and result["msg"].startswith("bluefleet.dpu.fw_reset: %s=" % name) and calls == []


def test_the_nodes_own_reboot_is_read_once_it_is_back():
    """`systemctl reboot` returns before the node goes down: the module says so (restarting) and the card is read
    after the wait; the first try meets the old session, dead by then, and the connection is reset for the next."""
    rebooted = {"changed": True, "reset": "warm_reboot", "method": "reboot_command", "restarting": True,
                "verified": False, "pending": {"nvconfig": ["NUM_OF_VFS"], "firmware": False},
                "cmd": [["systemctl", "reboot"]]}
    result, calls, clock, connection = run([rebooted, AnsibleConnectionFailure("Broken pipe"), NOTHING_PENDING])
    assert result["restarted"] and result["verified"] and not result["restarting"] and not result.get("failed")
    assert result["reset"] == "warm_reboot" and result["method"] == "reboot_command"
    assert clock.slept == [7, 2] and connection.reset.call_count == 1
    assert [call[1] for call in calls] == [False, True, True]


def test_a_reboot_that_did_not_activate_names_a_bigger_reset():
    rebooted = {"changed": True, "reset": "warm_reboot", "method": "reboot_command", "restarting": True,
                "verified": False, "cmd": [["systemctl", "reboot"]]}
    result = run([rebooted, STILL_PENDING])[0]
    assert result["failed"] and not result["verified"]
    assert result["msg"].startswith("verify the warm reboot of sim01-dpu failed: still pending after the node came "
                                    "back") and "a power cycle" in result["msg"]


# dpu_info's read of a DPU after the restart (filter firmware, nvconfig, dpu_os, rdma_links), as the twin answers it
CARD = {"mst": "/dev/mst/mt41692_pciconf0", "pci": "03:00.0", "device_type": "BlueField3(rev:1)",
        "functions": [{"mst": "/dev/mst/mt41692_pciconf0", "pci": "03:00.0"},
                      {"mst": "/dev/mst/mt41692_pciconf0.1", "pci": "03:00.1"}],
        "firmware": {"available": True, "running": "32.43.1014", "flashed": "32.43.1014", "pending_reset": False},
        "nvconfig": {"available": True},
        "pending_reset": {"required": False, "firmware": False, "nvconfig": []}}
LINKS = {"available": True, "all_active": True, "down": [], "links": [{"link": "mlx5_0/1", "state": "ACTIVE"}]}
DPU_OS = {"available": True, "release": "bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod"}
INFO = {"changed": False, "devices": [CARD], "dpu_os": DPU_OS, "rdma_links": LINKS, "side": "dpu",
        "filter": ["firmware", "nvconfig", "dpu_os", "rdma_links"], "read_at": 1.5,
        "cmd": [["mst", "status", "-v"], ["rdma", "link", "show"]]}
READ_ARGS = dict(ARGS, reconnect_read=["dpu_os", "rdma_links"])


def test_reconnect_read_reads_the_card_and_the_sections_with_dpu_info_in_one_run():
    modules = []
    result, calls = run([TWIN_DROP, INFO], args=READ_ARGS, modules=modules)[:2]
    assert modules == ["bluefleet.dpu.fw_reset", "bluefleet.dpu.dpu_info"]
    assert calls[0][0] == {"device": "03:00.0", "timeout": 600}, "the plugin's options stay on the controller"
    assert calls[1] == ({"filter": ["firmware", "nvconfig", "dpu_os", "rdma_links"], "side": "auto"}, True)
    assert result["restarted"] and result["verified"] and not result.get("failed")
    assert result["pending"] == {"nvconfig": [], "firmware": False}
    assert result["firmware"] == {"running": "32.43.1014", "flashed": "32.43.1014"}
    assert result["devices"] == [CARD] and result["dpu_os"] == DPU_OS and result["rdma_links"] == LINKS
    assert result["device"] == "/dev/mst/mt41692_pciconf0"


def test_reconnect_read_finds_what_is_still_pending_on_the_named_card():
    other = dict(CARD, mst="/dev/mst/mt4129_pciconf0", pci="0000:81:00.0", functions=[])
    pending = dict(CARD, pending_reset={"required": True, "firmware": True, "nvconfig": ["NUM_OF_VFS"]})
    result = run([TWIN_DROP, dict(INFO, devices=[other, pending])],
                 args=dict(READ_ARGS, device="0000:03:00.1"))[0]  # a function's address, with its PCI domain
    assert result["failed"] and not result["verified"] and result["rc"] == 255
    assert "NUM_OF_VFS" in result["msg"] and result["devices"] == [pending]


def test_reconnect_read_that_finds_no_card_leaves_the_verdict_to_the_modules_own_read():
    assert "found no card, not the card named by device=03:00.0" in fw_reset.as_card_read(
        dict(INFO, devices=[]), "03:00.0", ["rdma_links"])["msg"]
    modules = []
    result = run([TWIN_DROP, dict(INFO, devices=[], msg="no BlueField or ConnectX device found by mst status -v"),
                  dict(NOTHING_PENDING, failed=True, msg="mst status -v lists no card")], args=READ_ARGS,
                 modules=modules)[0]
    assert modules == ["bluefleet.dpu.fw_reset", "bluefleet.dpu.dpu_info", "bluefleet.dpu.fw_reset"]
    assert result["failed"] and "lists no card" in result["msg"]


def test_reconnect_read_without_the_nv_configuration_leaves_the_verdict_to_the_modules_own_read():
    """A node with mstflint only: dpu_info runs mlxconfig, which is missing there; fw_reset's read runs mstconfig."""
    mstflint_only = dict(CARD, nvconfig={"available": False, "reason": "mlxconfig not found on PATH"})
    result, calls = run([TWIN_DROP, dict(INFO, devices=[mstflint_only]), NOTHING_PENDING], args=READ_ARGS)[:2]
    assert result["verified"] and not result.get("failed") and calls[2][1] is True and len(calls) == 3


def test_reconnect_read_keeps_trying_while_the_node_is_down():
    down = AnsibleConnectionFailure("Failed to connect to the host via ssh: Connection refused")
    modules = []
    result, calls, clock = run([TWIN_DROP, down, INFO], args=READ_ARGS, modules=modules)[:3]
    assert result["verified"] and clock.slept == [7, 2]
    assert modules == ["bluefleet.dpu.fw_reset", "bluefleet.dpu.dpu_info", "bluefleet.dpu.dpu_info"]


def test_reconnect_read_is_not_used_where_the_node_did_not_restart():
    answer = dict(NOTHING_PENDING, changed=True, reset="firmware_reset", verified=True)
    modules = []
    result = run([answer], args=READ_ARGS, modules=modules)[0]
    assert modules == ["bluefleet.dpu.fw_reset"] and "rdma_links" not in result


@pytest.mark.parametrize("value", [["links"], "dpu_os,bfb", 3])
def test_a_bad_reconnect_read_is_refused_before_the_module_runs(value):
    result, calls = run([], args=dict(ARGS, reconnect_read=value))[:2]
    assert result["failed"] and result["msg"].startswith("bluefleet.dpu.fw_reset: reconnect_read=") and calls == []


def test_reconnect_read_that_fails_on_a_section_leaves_the_verdict_to_the_modules_own_read():
    garbage = {"failed": True, "msg": "parse rdma link show output failed: cannot parse rdma-link output at line 1",
               "cmd": [["rdma", "link", "show"]]}
    modules = []
    result, calls = run([TWIN_DROP, garbage, NOTHING_PENDING], args=READ_ARGS, modules=modules)[:2]
    assert modules == ["bluefleet.dpu.fw_reset", "bluefleet.dpu.dpu_info", "bluefleet.dpu.fw_reset"]
    assert calls[2] == ({"device": "03:00.0", "timeout": 600}, True)
    assert result["verified"] and not result.get("failed") and "rdma_links" not in result
