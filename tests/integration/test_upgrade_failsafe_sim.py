"""playbooks/upgrade.yml fails safe: a failure at any step leaves the host restriction as it found it.

One 1-pair sim fleet per failure point (so the cases run apart under pytest-xdist). The DPU's host is restricted
with a non-default flag (disable_tracer), the upgrade asks for new NIC firmware, and one fault makes one step fail:
the run fails, the message names the node, the step and what to do, and the restriction (level and flags, current
and pending) equals what it was before the run. Where the fault can be cleared, a re-run converges.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import dpusim, make_sim_inventory, restriction, run_playbook, twin_state

OLD_FW = "32.41.1000"
NEW_FW = "32.43.1014"
DPU = "sim01-dpu"
MST = "/dev/mst/mt41692_pciconf0"


@pytest.fixture
def fleet(tmp_path, monkeypatch):
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "0")
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    image = tmp_path / "fw.bin"
    dpusim("make-image", "--kind", "nic-fw", "--profile", "bluefield3", "--version", NEW_FW, "-o", str(image))
    run_playbook("playbooks/upgrade.yml", inventory, "--list-hosts")  # the inventory plugin creates the twins
    root = inventory.parent / "state" / DPU
    proc = subprocess.run([str(root / "bin" / "mlxprivhost"), "-d", MST, "r", "--disable_tracer"], check=True,
                          timeout=60, capture_output=True, text=True, env=dict(os.environ, DPUSIM_ROOT=str(root)))
    assert proc.returncode == 0
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"firmware_nic_image": str(image), "firmware_nic_version": NEW_FW,
                                 "bluefleet_state_dir": str(tmp_path / "records")}))
    return {"dir": tmp_path, "inventory": inventory, "root": root, "extra": "@%s" % extra}


def upgrade(fleet, *args, check=True):
    return run_playbook("playbooks/upgrade.yml", fleet["inventory"], "-e", fleet["extra"], *args, check=check)


def failure(run):
    msgs = [e["event_data"]["res"].get("msg", "") for e in run["events"]
            if e.get("event") == "runner_on_failed" and not e["event_data"].get("ignore_errors")
            and e["event_data"].get("host") == DPU]
    assert msgs, run["stdout"][-3000:]
    return msgs[-1]


def _state_dir_is_a_file(fleet):
    blocker = fleet["dir"] / "not-a-dir"
    blocker.write_text("x")
    path = fleet["dir"] / "extra-state.json"
    path.write_text(json.dumps({"bluefleet_state_dir": str(blocker / "records")}))
    return ["-e", "@%s" % path]


def _no_firmware_reset(fleet):
    """mlxfwreset not allowed: a BlueField in DPU mode then needs a power cycle, and no way to do one is configured
    (the sim inventory's is a command), so the reset plan (made from the read of the card, after the lift) fails
    before anything is written."""
    path = fleet["dir"] / "extra-no-fw-reset.json"
    path.write_text(json.dumps({"firmware_allow_fw_reset": False, "firmware_power_cycle_method": "none"}))
    return ["-e", "@%s" % path]


def fault(*argv):
    return lambda f: dpusim("--root", str(f["root"]), "fault", *argv)


# step -> (how to break it, how to clear it, words the failure message must carry)
CASES = {
    "read versions": (fault("set", "device_missing"), fault("clear"),
                      ["upgrade failed at 'Read what the node runs", "no BlueField or ConnectX card found",
                       "host restriction unchanged"]),
    "record versions": (_state_dir_is_a_file, None, ["upgrade failed at 'Write the record'", "not-a-dir",
                                                     "host restriction restored as before"]),
    "firmware plan": (_no_firmware_reset, None,
                      ["upgrade failed at 'Plan the reset", "power_cycle_method is none",
                       "host restriction restored as before",
                       "NIC firmware running %s, flashed %s" % (OLD_FW, OLD_FW)]),
    "firmware burn": (fault("set", "interrupted_burn"),
                      None,  # the twin clears an interrupted burn itself: the re-run burns again
                      ["upgrade failed at 'Burn the NIC firmware", "host restriction restored as before",
                       "NIC firmware running %s" % OLD_FW]),
    "health gate": (fault("set", "garbage_output", "--tool", "rdma"),
                    fault("clear"),
                    ["upgrade failed at 'Health gate, read the links", "host restriction restored as before",
                     "NIC firmware running %s" % NEW_FW]),
}


# The re-run after clearing the fault, for the faults that leave the node half way (the others fail before any
# write; tests/integration/test_fault_matrix_sim.py re-runs every fault kind). Each run costs seconds of ansible.
CONVERGE = ("firmware burn", "health gate")


@pytest.mark.parametrize("step", sorted(CASES))
def test_a_failure_at_any_step_restores_the_restriction(fleet, step):
    inject, clear, words = CASES[step]
    before = restriction(fleet["root"])
    assert before["level"] == "RESTRICTED" and before["flags"]["disable_tracer"] is True
    extra = inject(fleet)
    extra = extra if isinstance(extra, list) else []
    run = upgrade(fleet, *extra, check=False)
    assert run["rc"] != 0, "the upgrade passed with the fault %r" % step
    if step == "read versions":
        # the card is gone: the restriction cannot be read, so compare once the card is back
        clear(fleet)
    assert restriction(fleet["root"]) == before, "restriction changed by a failure at %r" % step
    msg = failure(run)
    assert msg.startswith("sim01-dpu: upgrade failed at '"), msg
    for word in words:
        assert word in msg, "%r not in the failure message: %s" % (word, msg)
    if step not in CONVERGE:
        return
    if step != "read versions" and clear is not None:
        clear(fleet)
    again = upgrade(fleet)  # the cause is gone (or clears itself): the re-run converges
    assert twin_state(fleet["root"])["cards"][0]["firmware"]["running"]["version"] == NEW_FW, again["stdout"][-2000:]
    assert restriction(fleet["root"]) == before


def test_a_failure_before_the_summary_still_sees_the_record(fleet):
    """The node's record is read by the summary task, after 'read versions'. A failure before it (here a read that
    cannot be parsed) is handled by the rescue, which reads the record itself: a node recorded as left down by an
    earlier run gets that run's recovery (restart the Arm) in the message, and the record of this failure keeps the
    versions the earlier run recorded (the rollback's target)."""
    records = fleet["dir"] / "records"
    records.mkdir()
    previous = {"nic_firmware": OLD_FW, "nic_firmware_flashed": OLD_FW, "bfb_release": None,
                "host_level": "RESTRICTED"}
    written = {"host": DPU, "fleet": "earlier", "previous": previous,
               "target": {"nic_firmware": NEW_FW, "bfb_release": ""},
               "blocked": {"reason": "dpu_down", "at": "2026-12-01T00:00:00Z", "flashed": OLD_FW,
                           "step": "Install the BFB from the host over rshim (the DPU reboots itself)"}}
    (records / ("%s.json" % DPU)).write_text(json.dumps(written))
    fault("set", "garbage_output", "--tool", "mlxconfig")(fleet)
    run = upgrade(fleet, check=False)
    assert run["rc"] != 0
    msg = failure(run)
    assert "upgrade failed at 'Read what the node runs" in msg, msg
    assert "the DPU is down" in msg and "SW_RESET 1" in msg, msg
    record = json.loads((records / ("%s.json" % DPU)).read_text())
    assert record["previous"] == previous, record
    assert record["blocked"]["reason"] == "dpu_down", record
    assert record["blocked"]["step"].startswith("Read what the node runs"), record  # this run's failure, recorded


GATE_READ = "Health gate, read the links and what the node runs, in one run (step 'health gate')"


def _links_vars(fleet, **values):
    path = fleet["dir"] / "extra-links.json"
    path.write_text(json.dumps(values))
    return ["-e", "@%s" % path]


def test_the_health_gate_reads_the_links_again_until_they_are_up(fleet):
    """After the reset the ports read DOWN for two reads (fault links_training: the links come back): the first is
    the reset's own read once the DPU's Arm answered again (firmware_reconnect_read), so the gate reads for itself,
    again every upgrade_links_interval seconds, and passes on its second read."""
    before = restriction(fleet["root"])
    fault("set", "links_training", "--reads", "2")(fleet)
    run = upgrade(fleet, *_links_vars(fleet, upgrade_links_interval=1), check=False)
    assert run["rc"] == 0, run["stdout"][-3000:]
    gate = [e["event_data"]["res"] for e in run["events"] if e.get("event") == "runner_on_ok"
            and e["event_data"].get("task") == GATE_READ]
    assert [(g["attempts"], g["rdma_links"]["all_active"]) for g in gate] == [(2, True)], gate
    reset = [e["event_data"]["res"] for e in run["events"] if e.get("event") == "runner_on_ok"
             and e["event_data"].get("task") == "Reset NIC firmware"]
    assert [(r["restarted"], r["verified"], r["rdma_links"]["all_active"]) for r in reset] == [(True, True, False)]
    assert twin_state(fleet["root"])["cards"][0]["firmware"]["running"]["version"] == NEW_FW
    assert restriction(fleet["root"]) == before


def test_the_health_gate_fails_when_the_links_stay_down(fleet):
    """Ports still DOWN after upgrade_links_wait seconds of reads: the gate fails, names the ports and the wait, and the
    restriction goes back."""
    before = restriction(fleet["root"])
    fault("set", "links_training", "--reads", "50")(fleet)
    run = upgrade(fleet, *_links_vars(fleet, upgrade_links_wait=2, upgrade_links_interval=1), check=False)
    assert run["rc"] != 0
    msg = failure(run)
    assert "upgrade failed at 'Health gate, the node runs the target and its links are up" in msg, msg
    assert "RDMA ports not active (read again for up to 2 s): mlx5_0/1 DOWN, mlx5_1/1 DOWN" in msg, msg
    assert "host restriction restored as before" in msg, msg
    assert restriction(fleet["root"]) == before
    fault("clear")(fleet)


def test_the_health_gate_fails_in_the_read_it_has(fleet):
    """No image asked: 'read versions' read the links and nothing touched the card since, so the gate judges that
    read. Ports DOWN there: the node does not end before the gate (its pass ends a node with no task of the gate's),
    the gate does not read again (nothing ran that could bring the links up) and its assert names the ports."""
    before = restriction(fleet["root"])
    fault("set", "links_training", "--reads", "50")(fleet)
    run = upgrade(fleet, *_links_vars(fleet, firmware_nic_image=""), check=False)
    assert run["rc"] != 0
    msg = failure(run)
    assert "upgrade failed at 'Health gate, the node runs the target and its links are up" in msg, msg
    assert "RDMA ports not active: mlx5_0/1 DOWN, mlx5_1/1 DOWN" in msg, msg
    assert not [e for e in run["events"] if e.get("event") == "runner_on_ok"
                and e["event_data"].get("task") == GATE_READ], "read again"
    assert twin_state(fleet["root"])["cards"][0]["firmware"]["running"]["version"] == OLD_FW
    assert restriction(fleet["root"]) == before
    fault("clear")(fleet)
