"""playbooks/upgrade.yml and playbooks/rollback.yml against a 4-pair sim fleet (images by ``dpusim make-image``).

The tests run in order on one fleet: check mode (the plan, nothing touched), a fault on node 2 (the DPU never
comes back after the BFB: the batch stops, later nodes untouched, the failure names the step and the tool's
words), the re-run after clearing it (canary then one batch; completes), a second run (changes nothing), rollback
of one node to its recorded versions. A restricted host is lifted for the upgrade and restricted again.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import BIN, changed_count, make_sim_inventory, run_playbook, twin_state, twin_tool
from conftest import FIRMWARE_AFTER_THE_PLANS as AFTER_THE_PLANS

PLAYBOOK = "playbooks/upgrade.yml"
ROLLBACK = "playbooks/rollback.yml"
OLD_FW = "32.41.1000"
NEW_FW = "32.43.1014"
OLD_RELEASE = "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod"
NEW_RELEASE = "bf-bundle-2.9.2-31_25.02_ubuntu-22.04_prod"
DPUS = ["sim01-dpu", "sim02-dpu", "sim03-dpu", "sim04-dpu"]
PASSWORD_HASH = "$1$3B0RIrfX$TlHry93NFUJzg3Nya00rE1"  # bf.cfg ubuntu_PASSWORD (as test_firmware_images_sim)
CARD = "/dev/mst/mt41692_pciconf0"
GATE = "Health gate, the node runs the target and its links are up (step 'health gate')"
GATE_READ = "Health gate, read the links and what the node runs, in one run (step 'health gate')"
SHOW_PLAN = "Show the reset plan and request the reset that activates what is pending"
GATE_END = "End a node whose health gate passes in the read it has, with no host restriction to restore"
RESTORE = "Restore the host restriction with its flags (step 'restore restriction')"


def dpusim(*argv):
    proc = subprocess.run([str(BIN / "dpusim"), *argv], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, "dpusim %s: %s%s" % (" ".join(argv), proc.stdout, proc.stderr)
    return proc.stdout


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    directory = tmp_path_factory.mktemp("upgrade")
    inventory = make_sim_inventory(directory / "inventory", nodes=4)
    images = {}
    for name, kind, version in (("fw", "nic-fw", NEW_FW), ("bfb", "bfb", "2.9.2-31_25.02"),
                                ("fw-old", "nic-fw", OLD_FW), ("bfb-old", "bfb", OLD_RELEASE)):
        images[name] = directory / (name + ".bin")
        dpusim("make-image", "--kind", kind, "--profile", "bluefield3", "--version", version, "-o", str(images[name]))
    state_dir = directory / "records"
    extra = {"firmware_nic_image": str(images["fw"]), "firmware_nic_version": NEW_FW,
             "firmware_bfb_image": str(images["bfb"]), "firmware_bfb_version": NEW_RELEASE,
             "firmware_bfb_ready_timeout": 3, "firmware_bfb_poll_interval": 1,
             "firmware_bfb_password_hash": PASSWORD_HASH,
             "bluefleet_state_dir": str(state_dir)}
    (directory / "extra.json").write_text(json.dumps(extra))
    return {"dir": directory, "inventory": inventory, "images": images, "records": state_dir,
            "state": directory / "inventory" / "state", "extra": "@%s" % (directory / "extra.json")}


def vars_file(fleet, name, data):
    """Extra vars as a file: run_playbook joins its arguments with spaces, so JSON goes through -e @FILE."""
    path = fleet["dir"] / (name + ".json")
    path.write_text(json.dumps(data))
    return "@%s" % path


def upgrade(fleet, *args, check=True):
    return run_playbook(PLAYBOOK, fleet["inventory"], "-e", fleet["extra"], *args, check=check)


def snapshot(fleet):
    return {path.name: twin_state(path) for path in sorted(fleet["state"].iterdir()) if (path / "node.json").exists()}


def card(fleet, host):
    return twin_state(fleet["state"] / host)["cards"][0]


def versions(fleet, dpu):
    data = card(fleet, dpu)
    return data["firmware"]["running"]["version"], data["dpu_os"]["release"]


def batches(run):
    """Hosts of the upgrade play, batch by batch, from the events (a play start opens each serial batch)."""
    out = []
    current = None
    for event in run["events"]:
        kind = event.get("event")
        data = event.get("event_data", {})
        if kind == "playbook_on_play_start":
            current = [] if data.get("play") == "Rolling upgrade, canary first, then batches" else None
            if current is not None:
                out.append(current)
        elif kind == "runner_on_start" and current is not None and data.get("host") not in current:
            current.append(data["host"])
    return out


def failures(run):
    return {e["event_data"]["host"]: e["event_data"]["res"] for e in run["events"]
            if e.get("event") == "runner_on_failed" and not e["event_data"].get("ignore_errors")}


def passed(run, task):
    """Hosts that passed through ``task``: it ran, failed or was skipped there (ended before it: none)."""
    return sorted(e["event_data"]["host"] for e in run["events"]
                  if e.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped")
                  and e["event_data"].get("task") == task)


def results(run, task):
    return {e["event_data"]["host"]: e["event_data"]["res"] for e in run["events"]
            if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == task}


def test_check_mode_prints_each_reset_plan_and_changes_nothing(fleet):
    # the inventory plugin creates the twin roots when it first parses the inventory
    upgrade(fleet, "--list-hosts")
    root = fleet["state"] / "sim03-dpu"
    subprocess.run([str(root / "bin" / "mlxprivhost"), "-d", "/dev/mst/mt41692_pciconf0", "r", "--disable_tracer"],
                   check=True,
                   timeout=60, capture_output=True, env=dict(os.environ, DPUSIM_ROOT=str(root)))
    assert card(fleet, "sim03-dpu")["privhost"]["level"] == "RESTRICTED"
    before = snapshot(fleet)
    run = upgrade(fleet, "--check")
    assert snapshot(fleet) == before, "check mode changed the twin"
    assert not fleet["records"].exists(), "check mode wrote a record"
    plans = results(run, SHOW_PLAN)
    assert sorted(plans) == DPUS
    for plan in plans.values():
        lines = plan["msg"]
        assert lines[0] == "/dev/mst/mt41692_pciconf0: 2 change(s); reset: power_cycle"
        assert lines[1].startswith("  bfb: %s -> %s (needs power_cycle" % (OLD_RELEASE, NEW_RELEASE))
        assert lines[2].startswith("  nic_firmware: %s -> %s (needs firmware_reset" % (OLD_FW, NEW_FW))
    assert changed_count(run) > 0


def test_dpu_never_returns_stops_the_rollout_after_the_failed_node(fleet):
    dpusim("--root", str(fleet["state"] / "sim02-dpu"), "fault", "set", "dpu_never_returns")
    before = snapshot(fleet)
    run = upgrade(fleet, "-e", vars_file(fleet, "serial-112", {"upgrade_serial": ["1", "1", "2"]}), check=False)
    assert run["rc"] != 0
    assert batches(run) == [["sim01-dpu"], ["sim02-dpu"]]
    msg = failures(run)["sim02-dpu"]["msg"]
    assert msg.startswith("sim02-dpu: upgrade failed at 'Install the BFB from the host over rshim")
    assert "BlueField Update Failed" in msg and "SW_RESET 1" in msg  # the tool's console, then what to do
    assert versions(fleet, "sim01-dpu") == (NEW_FW, NEW_RELEASE)  # the canary went through
    for untouched in ("sim03", "sim03-dpu", "sim04", "sim04-dpu"):
        assert twin_state(fleet["state"] / untouched) == before[untouched], untouched
    record = json.loads((fleet["records"] / "sim02-dpu.json").read_text())
    assert record["previous"]["nic_firmware"] == OLD_FW and record["previous"]["bfb_release"] == OLD_RELEASE


def test_rerun_after_the_fault_completes_canary_then_batch(fleet):
    dpusim("--root", str(fleet["state"] / "sim02-dpu"), "fault", "clear")
    dpusim("--root", str(fleet["state"] / "sim02"), "power-cycle")  # what a person does for a DPU that stays down
    run = upgrade(fleet, "-e", vars_file(fleet, "serial-13", {"upgrade_serial": ["1", "3"]}))
    assert [sorted(batch) for batch in batches(run)] == [["sim01-dpu"], ["sim02-dpu", "sim03-dpu", "sim04-dpu"]]
    assert run["stats"]["changed"].get("sim01-dpu", 0) == 0, "the canary was already at the target"
    for dpu in DPUS:
        assert versions(fleet, dpu) == (NEW_FW, NEW_RELEASE), dpu
    assert PASSWORD_HASH not in run["stdout"] and PASSWORD_HASH not in json.dumps(run["events"])
    # mlxfwreset -l 3 run in each DPU's Arm OS restarts that OS and ends the session that ran it (the twin, as ssh
    # reports it): the reset's task waited for the node and read the card again, nothing pending
    reset = results(run, "Reset NIC firmware")
    assert sorted(reset) == ["sim02-dpu", "sim03-dpu", "sim04-dpu"]
    for dpu, res in reset.items():
        assert res["restarted"] and res["verified"] and res["changed"], (dpu, res)
        assert not res["pending"]["nvconfig"] and not res["pending"]["firmware"], (dpu, res)
        # that read (dpu_info's, firmware_reconnect_read) also read the DPU's release and its ports, all ACTIVE: the
        # health gate took it instead of reading the node again; the canary, at the target, is read by the gate
        assert res["dpu_os"]["release"] == NEW_RELEASE and res["rdma_links"]["all_active"], (dpu, res)
    assert sorted(results(run, GATE_READ)) == ["sim01-dpu"]
    # where the gate passes in that read and no restriction is to be restored (sim02, sim04) the node ends there, with
    # no task of the gate's; sim03 restores its restriction after the gate's assert; the canary read for itself
    assert passed(run, GATE_END) == ["sim01-dpu", "sim03-dpu"], "skipped there; the others ended at it"
    assert sorted(results(run, GATE)) == ["sim01-dpu", "sim03-dpu"]
    # the restricted host was lifted for the upgrade and restricted again
    privhost = card(fleet, "sim03-dpu")["privhost"]
    assert privhost["level"] == "RESTRICTED"
    # lifting cleared the flags (mlxprivhost p); the restore put back the one it had, from the record
    assert dict(privhost["current"], **privhost.get("pending", {}))["disable_tracer"] is True
    lifted = results(run, "Lift the host restriction for the upgrade (step 'lift restriction')")
    assert lifted["sim03-dpu"]["changed"] and lifted["sim03-dpu"]["previous_level"] == "RESTRICTED"
    # the node with a blocker (sim02) and the restricted one (sim03) go through the whole preparation; an ordinary
    # upgrade (sim04) only records its versions, and a node at the target (sim01) skips it
    lift = "Lift the host restriction for the upgrade (step 'lift restriction')"
    assert passed(run, lift) == ["sim02-dpu", "sim03-dpu"]
    assert passed(run, "Write the record") == ["sim02-dpu", "sim03-dpu", "sim04-dpu"]
    record = json.loads((fleet["records"] / "sim03-dpu.json").read_text())
    assert record["previous"] == {"nic_firmware": OLD_FW, "nic_firmware_flashed": OLD_FW,
                                  "bfb_release": OLD_RELEASE, "host_level": "RESTRICTED",
                                  "host_flags": {"disable_rshim": False, "disable_tracer": True,
                                                 "disable_counter_rd": False, "disable_port_owner": False}}
    assert record["target"] == {"nic_firmware": NEW_FW, "bfb_release": NEW_RELEASE}


def test_second_run_changes_nothing(fleet):
    before = snapshot(fleet)
    run = upgrade(fleet, "-e", vars_file(fleet, "serial-13", {"upgrade_serial": ["1", "3"]}))
    assert changed_count(run) == 0, run["stdout"][-3000:]
    after = snapshot(fleet)
    for name in before:
        assert before[name]["cards"] == after[name]["cards"], name
    # Every node at the target: the firmware role ends after its plans, the gate still reads and checks each node,
    # and a node whose restriction is as 'read versions' saw it ends before the restore.
    for task in AFTER_THE_PLANS:
        assert passed(run, task) == [], "%s: the firmware role went on with nothing to do" % task
    assert passed(run, GATE_READ) == DPUS and passed(run, GATE) == DPUS
    assert passed(run, RESTORE) == [], "the restriction was as 'read versions' saw it on every node"
    assert passed(run, "A BlueField in DPU mode is upgraded from its Arm side, a GPU host only when it lists no DPU "
                       "(firmware_run_on)") == ["sim01-dpu"], "one task for the play, on its first host"


def test_a_setting_pending_on_one_card_brings_back_the_reset_there_alone(fleet):
    """NV configuration written by hand (Next Boot, pending) on one DPU: the reset plan sees it; that node alone
    resets and its reset finds nothing pending; the others end after their plans."""
    assert twin_tool(fleet["state"] / "sim02-dpu", "mlxconfig", "-d", CARD, "-y", "set",
                     "NUM_OF_VFS=8").returncode == 0
    before = snapshot(fleet)
    run = upgrade(fleet, "-e", vars_file(fleet, "serial-13", {"upgrade_serial": ["1", "3"]}))
    assert sorted(run["stats"].get("changed") or {}) == ["sim02-dpu"], run["stdout"][-3000:]
    assert passed(run, "Reset NIC firmware") == ["sim02-dpu"]
    assert passed(run, SHOW_PLAN) == ["sim02-dpu"]
    # the reset read the card after the Arm came back and found nothing pending: with no NV parameter asked and no
    # image, that read is the check (the role checks nothing after it)
    reset = results(run, "Reset NIC firmware")["sim02-dpu"]
    assert reset["verified"] and reset["pending"] == {"nvconfig": [], "firmware": False}, reset
    assert passed(run, "Nothing is pending and Next Boot holds what was asked") == []
    assert all(passed(run, task) in ([], ["sim02-dpu"]) for task in AFTER_THE_PLANS)
    assert card(fleet, "sim02-dpu")["mlxconfig"]["current"]["NUM_OF_VFS"] == 8
    after = snapshot(fleet)
    for name in before:  # sim02 sees the same card
        if name not in ("sim02", "sim02-dpu"):
            assert before[name]["cards"] == after[name]["cards"], name


def test_rollback_returns_a_node_to_its_recorded_versions(fleet):
    # not the upgrade's extra vars: firmware_*_image given with -e would win over the rollback's images
    common = vars_file(fleet, "rollback", {"bluefleet_state_dir": str(fleet["records"]),
                                           "firmware_bfb_poll_interval": 1})
    missing = run_playbook(ROLLBACK, fleet["inventory"], "--limit", "sim04-dpu", "-e", common, check=False)
    assert missing["rc"] != 0
    assert 'rollback_nic_images["%s"]' % OLD_FW in failures(missing)["sim04-dpu"]["msg"]
    images = vars_file(fleet, "rollback-images", {
        "rollback_nic_images": {OLD_FW: str(fleet["images"]["fw-old"])},
        "rollback_bfb_images": {OLD_RELEASE: str(fleet["images"]["bfb-old"])}})
    # check mode: the plan for both versions, and not one byte of any twin or record changes
    before, records = file_bytes(fleet["state"]), file_bytes(fleet["records"])
    check = run_playbook(ROLLBACK, fleet["inventory"], "--limit", "sim04-dpu", "-e", common, "-e", images,
                         "--check", "--diff")
    assert file_bytes(fleet["state"]) == before, "rollback --check changed the twin"
    assert file_bytes(fleet["records"]) == records, "rollback --check changed a record"
    assert changed_count(check) > 0
    lines = results(check, SHOW_PLAN)["sim04-dpu"]["msg"]
    assert lines[0] == "/dev/mst/mt41692_pciconf0: 2 change(s); reset: power_cycle", lines
    assert lines[1].startswith("  bfb: %s -> %s (needs power_cycle" % (NEW_RELEASE, OLD_RELEASE)), lines
    assert lines[2].startswith("  nic_firmware: %s -> %s (needs firmware_reset" % (NEW_FW, OLD_FW)), lines
    run_playbook(ROLLBACK, fleet["inventory"], "--limit", "sim04-dpu", "-e", common, "-e", images)
    assert versions(fleet, "sim04-dpu") == (OLD_FW, OLD_RELEASE)
    assert versions(fleet, "sim03-dpu") == (NEW_FW, NEW_RELEASE)
    # again, then check again: nothing to do, nothing changes
    before = file_bytes(fleet["state"])
    for extra in ((), ("--check", "--diff")):
        again = run_playbook(ROLLBACK, fleet["inventory"], "--limit", "sim04-dpu", "-e", common, "-e", images, *extra)
        assert changed_count(again) == 0, again["stdout"][-3000:]
        assert file_bytes(fleet["state"]) == before, "a rollback with nothing to do changed the twin"


def file_bytes(directory):
    """Every file under ``directory`` with its bytes: the twins' state (node, card, rendered files) and records.

    Left out: lock files (taking a lock may create one) and each root's bin/ (tool front-ends the inventory
    plugin writes again when the twin gains a tool; they hold no state)."""
    return {str(path.relative_to(directory)): path.read_bytes() for path in sorted(directory.rglob("*"))
            if path.is_file() and not path.name.endswith(".lock")
            and "bin" not in path.relative_to(directory).parts[1:2]}
