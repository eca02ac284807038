"""bluefleet run: failure messages in full (loop items too) and which failures mean "stopped before any change"."""

from __future__ import annotations

import io

from bluefleet.run import LiveView, failure_message, is_preflight


def test_plain_failure_keeps_the_whole_message():
    msg = "x" * 500
    assert failure_message({"failed": True, "msg": msg}) == msg


def test_loop_failure_lists_each_failed_item_with_its_message():
    res = {"failed": True, "msg": "One or more items failed", "results": [
        {"failed": True, "msg": "firmware_timeout='0': give a whole number", "item": {"key": "firmware_timeout"},
         "_ansible_item_label": "firmware_timeout"},
        {"failed": False, "msg": "All assertions passed", "_ansible_item_label": "firmware_bfb_timeout"},
        {"failed": True, "msg": "firmware_bfb_poll_interval='-1': give a whole number",
         "_ansible_item_label": "firmware_bfb_poll_interval"}]}
    text = failure_message(res)
    assert text == ("2 item(s) failed: firmware_timeout: firmware_timeout='0': give a whole number; "
                    "firmware_bfb_poll_interval: firmware_bfb_poll_interval='-1': give a whole number")


def test_no_log_results_stay_hidden():
    assert failure_message({"censored": "the output has been hidden", "failed": True}) == "(output hidden: no_log)"
    res = {"failed": True, "results": [{"failed": True, "censored": "hidden", "_ansible_item_label": "psk"}]}
    assert failure_message(res) == "1 item(s) failed: psk: (output hidden: no_log)"


def test_which_failures_are_preflight():
    assert is_preflight({"role": "bluefleet.dpu.preflight", "task": "DPU names a GPU host that lists it back"})
    assert is_preflight({"task_path": "/c/roles/ipsec/tasks/preflight.yml:12", "task": "Check the pre-shared key"})
    assert is_preflight({"task": "The rolling inputs are valid, checked before any node is touched"})
    assert not is_preflight({"role": "bluefleet.dpu.firmware", "task_path": "/c/roles/firmware/tasks/configure.yml:3",
                             "task": "Burn the NIC firmware"})


def test_live_view_prints_the_whole_message_and_marks_preflight():
    out = io.StringIO()
    view = LiveView(out, 2, "site", tty=False, names={"h1", "h1-dpu"})
    view({"event": "runner_on_failed", "event_data": {
        "host": "h1-dpu", "task": "DPU names a GPU host that lists it back", "role": "preflight",
        "res": {"failed": True, "msg": "h1-dpu: a DPU must set bluefleet_host " + "y" * 300}}})
    assert "y" * 300 in out.getvalue()
    assert view.preflight_failed == {"h1-dpu"} and not view.changed
