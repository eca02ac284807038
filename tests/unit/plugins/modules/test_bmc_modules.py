"""bmc_info / bmc_firmware / bmc_reset / bmc_bfb against the twin BMC on loopback (dpusim bmc).

The twin runs with DPUSIM_TIME_SCALE=0.001 (a 5-minute BMC push takes 0.3 s); the modules poll with
poll_interval 0. Each bad input and fault of issue #19 is a test: the error names the BMC, the
setting and the fix, and the twin is unchanged.
"""

from __future__ import annotations

import re

import pytest
from ansible_collections.bluefleet.dpu.plugins.modules import bmc_bfb, bmc_firmware, bmc_info, bmc_reset
from bmc_twin import PASSWORD, TwinBmc, make_runner

from dpusim import faults, images, state
from dpusim.bmc import service


@pytest.fixture(autouse=True)
def target_side(monkeypatch):
    from ansible.module_utils import _internal

    monkeypatch.setattr(_internal, "is_controller", False)
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "0.001")


@pytest.fixture
def run(monkeypatch):
    return make_runner(monkeypatch)


@pytest.fixture
def twin(tmp_path):
    t = TwinBmc(tmp_path / "dpu")
    yield t
    t.stop()


def fw_args(twin, tmp_path, component="bmc", version="BF-24.10-33", **extra):
    kind = {"bmc": "bmc-fw", "erot": "erot-fw"}.get(component)
    path = tmp_path / ("%s-%s.img" % (component, version))
    if kind:
        service.make_image(kind, version, path)
    else:
        images.make_image("nic-fw", "bluefield3", version, path)
    options = dict(component=component, image=str(path), version=version, poll_interval=0, task_timeout=30)
    options.update(extra)
    return twin.args(**options)


def posts(result):
    return [r for r in result["requests"] if not r.startswith("GET ")]


# ------------------------------------------------------------------ bmc_info
def test_bmc_info_reads_the_card_versions_and_preflight(run, twin):
    failed, res = run(bmc_info, twin.args())
    assert not failed and res["changed"] is False
    card = twin.card()
    assert res["firmware"]["DPU_NIC"] == card["firmware"]["running"]["version"]
    assert res["firmware"]["DPU_OS"] == card["dpu_os"]["release"]
    assert res["bmc_version"] == "BF-24.10-10"
    assert res["boot_progress"]["OemLastState"] == "OsIsRunning"
    assert res["transfer_protocols"] == ["SCP", "HTTP", "HTTPS"]
    assert all(c["ok"] for c in res["preflight"])
    assert posts(res) == []


def test_bmc_info_on_a_bf_23_10_bmc_says_bfb_needs_a_newer_bmc(run, tmp_path):
    old = TwinBmc(tmp_path / "old", firmware="23.10")
    try:
        failed, res = run(bmc_info, old.args())
    finally:
        old.stop()
    assert not failed
    check = next(c for c in res["preflight"] if c["check"] == "bmc_supports_bfb_over_http")
    assert not check["ok"] and "BF-24.04" in check["fix"]


# ------------------------------------------------------------------ bad input and faults, every module
def test_wrong_password_stops_after_the_first_401_and_never_locks(run, twin):
    args = twin.args()
    args["bmc"]["password"] = "wrong-password"
    failed, res = run(bmc_info, args)
    assert failed and res["requests"] == ["GET /redfish/v1/UpdateService/FirmwareInventory"]
    assert "refused the credentials of user 'root'" in res["msg"] and twin.address in res["msg"]
    assert "bluefleet_bmc.username/password" in res["msg"]
    assert "wrong-password" not in str(res) and PASSWORD not in str(res)
    assert twin.card()["bmc"]["auth"] == {"failures": 1, "locked_until": 0.0}  # one try, far from the lockout
    failed, _res = run(bmc_info, twin.args())
    assert not failed


def test_unreachable_bmc(run, twin, tmp_path):
    with state.open_node(twin.root) as node:
        faults.set_fault(node, "bmc_unreachable", {})
    before = twin.card()
    failed, res = run(bmc_info, twin.args())
    assert failed and "is unreachable" in res["msg"] and "bluefleet_bmc.address" in res["msg"]
    assert twin.address in res["msg"]
    failed, res = run(bmc_firmware, fw_args(twin, tmp_path))
    assert failed and "is unreachable" in res["msg"] and twin.address in res["msg"]
    assert twin.card() == before


def test_tls_mismatch(run, tmp_path):
    tls = TwinBmc(tmp_path / "tls", tls=True)
    try:
        args = tls.args()
        args["bmc"]["validate_certs"] = True
        failed, res = run(bmc_info, args)
        assert failed and "TLS" in res["msg"] and "ca_path" in res["msg"] and tls.address in res["msg"]
        plain = tls.args()
        plain["bmc"]["address"] = tls.address.replace("https://", "http://")
        failed, res = run(bmc_info, plain)
        assert failed and tls.address.replace("https://", "http://") in res["msg"]
        assert "write https:// in bluefleet_bmc.address" in res["msg"]
    finally:
        tls.stop()


# ------------------------------------------------------------------ bmc_firmware
def test_bmc_firmware_check_mode_push_activate_and_rerun(run, twin, tmp_path):
    args = fw_args(twin, tmp_path)
    failed, res = run(bmc_firmware, dict(args, _ansible_diff=True), check_mode=True)
    assert not failed and res["changed"] and res["outcome"] == "would_install"
    assert posts(res) == [] and twin.card()["bmc"]["tasks"] == []
    assert res["diff"] == {"before": {"version": "BF-24.10-10"}, "after": {"version": "BF-24.10-33"}}
    failed, res = run(bmc_firmware, args)
    assert not failed, res["msg"]
    assert res["changed"] and res["outcome"] == "installed" and res["activated"] == "bmc_restart"
    assert (res["before"], res["after"], res["reset_required"]) == ("BF-24.10-10", "BF-24.10-33", "none")
    assert res["task"]["state"] == "Completed"
    assert posts(res) == ["POST /redfish/v1/UpdateService/update-multipart",
                          "POST /redfish/v1/Managers/Bluefield_BMC/Actions/Manager.Reset"]
    failed, res = run(bmc_firmware, args)
    assert not failed and not res["changed"] and res["outcome"] == "skipped" and posts(res) == []


def test_bmc_firmware_identical_image_without_version_is_no_change(run, twin, tmp_path):
    args = fw_args(twin, tmp_path, version="BF-24.10-10")
    del args["version"]
    failed, res = run(bmc_firmware, args)
    assert not failed and res["changed"] is False and res["outcome"] == "identical"
    assert twin.card()["bmc"]["versions"]["bmc"] == "BF-24.10-10"


def test_bmc_firmware_nic_is_staged_and_names_the_power_cycle(run, twin, tmp_path):
    failed, res = run(bmc_firmware, fw_args(twin, tmp_path, component="nic", version="32.43.1014"))
    assert not failed, res.get("msg")
    assert res["changed"] and res["activated"] is None and res["reset_required"] == "power_cycle"
    assert twin.card()["firmware"]["running"]["version"] == "32.41.1000"
    failed, res = run(bmc_reset, twin.args(target="card", poll_interval=0, wait_timeout=30))
    assert not failed, res.get("msg")
    assert res["action"] == {"uri": "/redfish/v1/Chassis/Card1/Actions/Chassis.Reset", "ResetType": "PowerCycle"}
    assert res["boot_progress"]["OemLastState"] == "OsIsRunning"
    assert twin.card()["firmware"]["running"]["version"] == "32.43.1014"


def test_bmc_firmware_image_for_another_component_aborts_verbatim(run, twin, tmp_path):
    args = fw_args(twin, tmp_path, component="erot", version="00.02.0200.0000_n02")
    args["component"] = "bmc"
    args["version"] = "BF-24.10-40"
    before = twin.card()
    failed, res = run(bmc_firmware, args)
    assert failed and "ended Exception/Critical" in res["msg"] and twin.address in res["msg"]
    assert "Update.1.0.VerificationFailed: Verification of image" in res["msg"]
    assert "TaskEvent.1.0.3.TaskAborted: The task with Id '0' has completed with errors." in res["msg"]
    assert "Fix: the image is not a bmc firmware image: give image an image made for bmc firmware" in res["msg"]
    after = twin.card()
    assert after["bmc"]["versions"] == before["bmc"]["versions"] and after["firmware"] == before["firmware"]


def test_bmc_firmware_task_aborted_by_the_bmc_shows_its_messages_verbatim_then_a_rerun_installs(run, twin, tmp_path):
    with state.open_node(twin.root) as node:
        faults.set_fault(node, "bmc_task_aborts", {})
    args = fw_args(twin, tmp_path)
    before = twin.card()
    failed, res = run(bmc_firmware, args)
    assert failed and twin.address in res["msg"] and "ended Exception/Critical" in res["msg"]
    assert ("TaskEvent.1.0.3.TaskStarted: The task with Id '0' has started. | Update.1.0.ApplyFailed: Installation "
            "of image 'bmc-BF-24.10-33.img' to 'BMC_Firmware' failed. | TaskEvent.1.0.3.TaskAborted: The task with "
            "Id '0' has completed with errors.") in res["msg"]
    assert "Fix: the BMC could not install the image and runs the version it had: re-run" in res["msg"]
    assert [m.split(":")[0] for m in res["task"]["messages"]] == [
        "TaskEvent.1.0.3.TaskStarted", "Update.1.0.ApplyFailed", "TaskEvent.1.0.3.TaskAborted"]
    after = twin.card()
    assert after["bmc"]["versions"] == before["bmc"]["versions"] and after["firmware"] == before["firmware"]
    with state.open_node(twin.root) as node:
        faults.clear_fault(node, "bmc_task_aborts")
    failed, res = run(bmc_firmware, args)
    assert not failed, res["msg"]
    assert res["changed"] and twin.card()["bmc"]["versions"]["bmc"] == "BF-24.10-33"


def test_bmc_firmware_task_that_never_ends_times_out_then_a_rerun_resumes(run, twin, tmp_path, monkeypatch):
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "0.05")  # the ERoT task takes 3 s: the re-run finds it still running
    with state.open_node(twin.root) as node:
        faults.set_fault(node, "bmc_task_hangs", {})
    args = fw_args(twin, tmp_path, component="erot", version="00.02.0200.0000_n02", task_timeout=1)
    failed, res = run(bmc_firmware, args)
    assert failed and re.search(r"still Running at \d+%", res["msg"]) and "re-run the task to resume" in res["msg"]
    with state.open_node(twin.root) as node:
        faults.clear_fault(node, "bmc_task_hangs")
    args["task_timeout"] = 30
    failed, res = run(bmc_firmware, args)
    assert not failed, res.get("msg")
    assert res["changed"] and res["task"]["id"] == "0", res["requests"]
    assert "POST /redfish/v1/UpdateService/update-multipart" not in posts(res)  # resumed, not pushed again
    assert res["after"] == "00.02.0200.0000_n02"


def test_bmc_firmware_refuses_while_the_erot_copies(run, twin, tmp_path):
    with state.open_node(twin.root) as node:
        node.cards[0].data["bmc"]["erot_copy_until"] = 4e9
    failed, res = run(bmc_firmware, fw_args(twin, tmp_path))
    assert failed and "erot_background_copy_done" in res["msg"] and "wait until the ERoT" in res["msg"]
    assert posts(res) == []


def test_bmc_restarting_mid_poll_is_ridden_out(run, twin, tmp_path, monkeypatch):
    """The BMC drops connections for a while during the task: the poll carries on."""
    from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing import _redfish

    real_get = _redfish.RedfishClient.get
    calls = {"n": 0}

    def get(self, uri):
        calls["n"] += 1
        if "/TaskService/Tasks/" in uri and calls["n"] % 3 == 0:
            with state.open_node(twin.root) as node:  # the BMC restarts under the poll
                node.cards[0].data["bmc"]["away_until"] = service.wall_clock() + 0.05
        return real_get(self, uri)

    monkeypatch.setattr(_redfish.RedfishClient, "get", get)
    failed, res = run(bmc_firmware, fw_args(twin, tmp_path, component="erot", version="00.02.0300.0000_n02"))
    assert not failed, res.get("msg")
    assert res["after"] == "00.02.0300.0000_n02"


# ------------------------------------------------------------------ bmc_reset
def test_bmc_reset_check_mode_and_bad_reset_type(run, twin):
    failed, res = run(bmc_reset, twin.args(target="system"), check_mode=True)
    assert not failed and res["changed"] and posts(res) == []
    boots = twin.card()["arm_boot_id"]
    failed, res = run(bmc_reset, twin.args(target="bmc", reset_type="PowerCycle"))
    assert failed and "GracefulRestart, ForceRestart, GracefulShutdown" in res["msg"] and "reset_type" in res["msg"]
    assert twin.card()["arm_boot_id"] == boots


# ------------------------------------------------------------------ bmc_bfb
def bfb_args(twin, tmp_path, profile="bluefield3", version="2.9.2-31_24.11", **extra):
    path = images.make_image("bfb", profile, version, tmp_path / ("%s-%s.bfb" % (profile, version)),
                             nic_fw_version="32.43.2026")
    return twin.args(bfb=str(path), serve_address="127.0.0.1", poll_interval=0, task_timeout=60, boot_timeout=60,
                     version=images.bfb_release(version), **extra)


def test_bmc_bfb_installs_with_bf_cfg_and_a_rerun_changes_nothing(run, twin, tmp_path):
    cfg = tmp_path / "bf.cfg"
    cfg.write_text("ubuntu_PASSWORD='$6$salt$hashhashhash'\n")
    args = bfb_args(twin, tmp_path, bf_cfg=str(cfg))
    failed, res = run(bmc_bfb, args, check_mode=True)
    assert not failed and res["changed"] and posts(res) == []
    failed, res = run(bmc_bfb, args)
    assert not failed, res.get("msg")
    assert res["changed"] and res["after"] == images.bfb_release("2.9.2-31_24.11")
    assert res["boot_progress"]["OemLastState"] == "OsIsRunning"
    assert "hashhash" not in str(res)
    assert twin.card()["dpu_os"]["release"] == res["after"]
    failed, res = run(bmc_bfb, args)
    assert not failed and not res["changed"] and posts(res) == []


def test_bmc_bfb_bluefield2_bfb_to_a_bluefield3(run, twin, tmp_path):
    before = twin.card()["dpu_os"]["release"]
    failed, res = run(bmc_bfb, bfb_args(twin, tmp_path, profile="bluefield2"))
    assert failed and "Invalid FW Package" in res["msg"] and twin.address in res["msg"]
    assert "Fix: the image is not for this card (a BlueField-3 takes a BlueField-3 package): give bfb" in res["msg"]
    assert twin.card()["dpu_os"]["release"] == before


def test_bmc_bfb_rshim_held_by_the_host(run, twin, tmp_path):
    with state.open_node(twin.root) as node:
        node.cards[0].data["bmc"]["host_rshim"] = "Enabled"
    failed, res = run(bmc_bfb, bfb_args(twin, tmp_path))
    assert failed and "rshim_not_held_by_host" in res["msg"] and "systemctl stop rshim" in res["msg"]
    assert twin.address in res["msg"] and posts(res) == []


def test_bmc_bfb_bmc_too_old(run, tmp_path):
    old = TwinBmc(tmp_path / "old", firmware="23.10")
    try:
        failed, res = run(bmc_bfb, bfb_args(old, tmp_path))
    finally:
        old.stop()
    assert failed and "bmc_supports_bfb_over_http" in res["msg"] and "BF-24.04 or newer" in res["msg"]
    assert posts(res) == []


def test_bmc_bfb_needs_an_advertised_address(run, twin, tmp_path):
    args = bfb_args(twin, tmp_path)
    args["serve_address"] = "0.0.0.0"
    failed, res = run(bmc_bfb, args)
    assert failed and "advertise_address" in res["msg"] and res.get("requests") == []
