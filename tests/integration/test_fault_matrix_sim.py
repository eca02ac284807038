"""Fault matrix (issue 16): one sim fleet, one fault kind per pair, playbooks/upgrade.yml run once with every fault
injected, asserted per host; a run limited to the pairs whose failure a re-run cannot fix stops them before
repeating it (a card that needs a power cycle, with no power cycle method; a DPU left down), one more goes straight
to the power cycle once a method is set (no mlxfwreset again); then every fault is cleared (the operator's fix) and
one re-run converges.

12 kinds: the twin's device_missing, garbage_output (three tools, three steps), interrupted_burn,
power_cycle_required, tool_hang, rshim_busy, dpu_never_returns; new: connection_drop (an SSH session that drops
under the read once the DPU is back from its reset: ridden out, RETRIED), host_reboot (the DPU reboots under a
task), the controller's state directory that cannot be written (bluefleet_state_dir), a corrupt NIC image and an
image for another PSID (per-pair inputs).

Each faulted pair's run fails with a message that names the host, the step and the way out; the host restriction
(zero trust) of every pair is as it was before the run, except the pair whose DPU is left down (its message says
the restriction is NOT restored and how to bring the DPU back); the healthy pair is upgraded in the same run.
Not in this matrix (other stages, their own tests): peermem_einval (test_gpudirect_sim.py), gpu_driver_down
(test_conformance_breaks_sim.py), a kubelet that never starts (DOCA services), the bmc_* faults (bmc_upgrade.yml).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import dpusim, make_sim_inventory, restriction, run_playbook, twin_state

OLD_FW = "32.41.1000"
NEW_FW = "32.43.1014"
BFB = "2.9.2-31_25.02"
RELEASE = "bf-bundle-%s_ubuntu-22.04_prod" % BFB
MST = "/dev/mst/mt41692_pciconf0"
NIC_PAIRS_OFF = ("sim09", "sim10")  # BFB-only pairs

# pair -> (fault argv for `dpusim fault set` on the DPU's root, or None; words the failure message must carry)
FAULTS = {
    "sim01": (["device_missing"], ["no BlueField or ConnectX card found"]),
    # 'read versions' reads the NV configuration and the reset levels too (the firmware role plans its reset from
    # that read): a tool that fails there fails before anything is changed
    "sim02": (["garbage_output", "--tool", "mlxconfig"],
              ["read versions", "parse mlxconfig", "run the playbook again", "host restriction unchanged"]),
    "sim03": (["interrupted_burn"], ["Burn the NIC firmware", "NIC firmware running %s" % OLD_FW]),
    "sim04": (["garbage_output", "--tool", "rdma"], ["Health gate", "NIC firmware running %s" % NEW_FW]),
    # the message says what changed: the flash holds the new image, only a power cycle activates it
    "sim06": (["power_cycle_required"], ["Reset NIC firmware", "flashed %s" % NEW_FW, "power cycle",
                                         "firmware_power_cycle_method", "dpusim power-cycle"]),
    "sim07": (["garbage_output", "--tool", "flint"], ["read versions", "bluefleet parse flint-query",
                                                      "host restriction unchanged"]),
    # a tool that stops answering: timeout, exit status 124
    "sim08": (["tool_hang", "--tool", "mlxfwreset", "--seconds", "1"],
              ["read versions", "exit status 124", "host restriction unchanged"]),
    # the plans do not try the rshim device nor check the image's CRC: these fail at the write, nothing written
    "sim09": (["rshim_busy"], ["Install the BFB", "another backend (the BMC) owns it",
                               "host restriction restored as before"]),
    "sim10": (["dpu_never_returns"], ["Install the BFB", "the DPU is down", "SW_RESET 1", "rshim0/misc",
                                      "host restriction NOT restored"]),
    "sim11": (None, ["Write the record", "bluefleet_state_dir=", "make it writable",
                     "host restriction restored as before"]),
    # the DPU reboots under the first read (the first step that reads the NV configuration)
    "sim13": (["host_reboot", "--tool", "mlxconfig"],
              ["read versions", "exit status 255", "is up and answers", "host restriction unchanged"]),
    "sim14": (None, ["Burn the NIC firmware", "Bad CRC", "the card still runs %s and its flash holds %s"
                     % (OLD_FW, OLD_FW), "host restriction restored as before"]),
    # upgrade.yml plans the burn from its read of the card (no check-mode nic_firmware run): the burn refuses the
    # image of another PSID before it writes, so the flash still holds the old firmware
    "sim15": (None, ["Burn the NIC firmware", "PSID mismatch", "flashed %s" % OLD_FW,
                     "host restriction restored as before"]),
}
HEALTHY = "sim05"
# pair -> fault that the upgrade rides out: an SSH session that drops under the read made once the DPU's Arm is back
# from its reset (the reset's own read, which also reads the links for the health gate): the reset's wait takes it
# as the node not back yet and tries again; the upgrade completes. (A drop under a step's own read fails that step
# with exit status 255 and the words to check the node: sim13.)
RETRIED = {"sim12": ["connection_drop", "--tool", "rdma"]}


def failures(run):
    out: dict[str, list[str]] = {}
    for e in run["events"]:
        if e.get("event") == "runner_on_failed" and not e["event_data"].get("ignore_errors"):
            out.setdefault(e["event_data"].get("host"), []).append(e["event_data"]["res"].get("msg", ""))
    return out


def tasks_run(run, host):
    """Names of the tasks that ran (not skipped) on ``host``."""
    return [e["event_data"].get("task", "") for e in run["events"]
            if e.get("event") in ("runner_on_ok", "runner_on_failed") and e["event_data"].get("host") == host]


def lock_dir(path, locked):
    """The state directory cannot be written: immutable for root (chmod does not stop root), read-only otherwise."""
    if os.geteuid():
        path.chmod(0o555 if locked else 0o755)
        return
    subprocess.run(["chattr", "+i" if locked else "-i", str(path)], check=True, timeout=30, capture_output=True)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faults")
    mp = pytest.MonkeyPatch()
    mp.setenv("DPUSIM_TIME_SCALE", "0")
    inventory = make_sim_inventory(tmp / "inventory", nodes=len(FAULTS) + len(RETRIED) + 1)
    images = {}
    for name, kind, version, *more in (("fw", "nic-fw", NEW_FW), ("fw-corrupt", "nic-fw", NEW_FW, "--corrupt"),
                                       ("fw-psid", "nic-fw", NEW_FW, "--psid", "MT_0000000999"),
                                       ("bfb", "bfb", BFB)):
        images[name] = tmp / ("%s.bin" % name)
        dpusim("make-image", "--kind", kind, "--profile", "bluefield3", "--version", version, *more,
               "-o", str(images[name]))
    locked = tmp / "records-locked"
    locked.mkdir()
    (inventory.parent / "group_vars").mkdir()
    (inventory.parent / "group_vars" / "all.yml").write_text(json.dumps({
        "firmware_nic_image": str(images["fw"]), "firmware_nic_version": NEW_FW,
        "bluefleet_state_dir": str(tmp / "records")}))
    host_vars = inventory.parent / "host_vars"
    host_vars.mkdir()
    per_host = {"sim09": {"firmware_nic_image": "", "firmware_bfb_image": str(images["bfb"]),
                          "firmware_bfb_version": RELEASE},
                "sim11": {"bluefleet_state_dir": str(locked)},
                "sim14": {"firmware_nic_image": str(images["fw-corrupt"])},
                "sim15": {"firmware_nic_image": str(images["fw-psid"])}}
    per_host["sim10"] = per_host["sim09"]
    for pair, values in per_host.items():
        (host_vars / ("%s-dpu.yml" % pair)).write_text(json.dumps(values))
    extra = tmp / "extra.json"
    extra.write_text(json.dumps({"upgrade_serial": 20}))
    roots = {pair: inventory.parent / "state" / ("%s-dpu" % pair) for pair in [*FAULTS, *RETRIED, HEALTHY]}
    for root in roots.values():
        subprocess.run([str(root / "bin" / "mlxprivhost"), "-d", MST, "r", "--disable_tracer"], check=True,
                       timeout=60, capture_output=True, env=dict(os.environ, DPUSIM_ROOT=str(root)))
    lock_dir(locked, True)
    yield {"inventory": inventory, "roots": roots, "extra": "@%s" % extra, "locked": locked,
           "host_vars": host_vars, "state": inventory.parent / "state"}
    lock_dir(locked, False)
    mp.undo()


def test_every_fault_fails_its_pair_only_with_a_clear_message_and_a_rerun_converges(fleet):
    roots = fleet["roots"]
    before = {pair: restriction(root) for pair, root in roots.items()}
    dpu_os = {pair: twin_state(roots[pair])["cards"][0]["dpu_os"] for pair in NIC_PAIRS_OFF}
    for pair, (argv, _words) in FAULTS.items():
        if argv:
            dpusim("--root", str(roots[pair]), "fault", "set", *argv)
    for pair, argv in RETRIED.items():
        dpusim("--root", str(roots[pair]), "fault", "set", *argv)
    run = run_playbook("playbooks/upgrade.yml", fleet["inventory"], "-e", fleet["extra"], check=False)
    assert run["rc"] != 0
    failed = failures(run)
    problems = []
    for pair, (argv, words) in FAULTS.items():
        host = "%s-dpu" % pair
        msgs = failed.get(host)
        if not msgs:
            problems.append("%s: no failure with fault %s" % (host, argv))
            continue
        msg = msgs[-1]
        missing = [w for w in words if w not in msg]
        if not msg.startswith("%s: upgrade failed at '" % host) or missing:
            problems.append("%s: %r missing in:\n%s" % (host, missing, msg))
    assert not problems, "\n\n".join(problems) + "\n" + run["stdout"][-3000:]
    assert HEALTHY + "-dpu" not in failed, failed.get(HEALTHY + "-dpu")
    for pair in RETRIED:
        host = "%s-dpu" % pair
        assert host not in failed, failed.get(host)
        assert twin_state(roots[pair])["cards"][0]["firmware"]["running"]["version"] == NEW_FW, pair
        assert "connection_drop" not in twin_state(roots[pair])["node"]["faults"], "%s: the drop never came" % pair
        reset = [e["event_data"]["res"] for e in run["events"] if e.get("event") == "runner_on_ok"
                 and e["event_data"].get("host") == host and e["event_data"].get("task") == "Reset NIC firmware"]
        assert [(r["restarted"], r["verified"]) for r in reset] == [(True, True)], reset
    dpusim("--root", str(roots["sim01"]), "fault", "clear")  # the card is back: its restriction can be read
    for pair, root in roots.items():
        if pair != "sim10":  # its DPU is down: the message says the restriction is NOT restored
            assert restriction(root) == before[pair], "%s: restriction changed by the failed run" % pair
    assert twin_state(roots[HEALTHY])["cards"][0]["firmware"]["running"]["version"] == NEW_FW
    assert twin_state(roots["sim09"])["cards"][0]["dpu_os"] == dpu_os["sim09"]
    assert twin_state(roots["sim10"])["cards"][0]["arm"]["state"] == "down"

    # A failure a re-run cannot fix is not retried: without a power cycle method the next run stops sim06 before
    # any lift or reset (the sim inventory sets one: host_vars takes it away); sim10's DPU is still down.
    pin = fleet["host_vars"] / "sim06-dpu.yml"
    pin.write_text(json.dumps({"firmware_power_cycle_method": "none"}))
    limited = run_playbook("playbooks/upgrade.yml", fleet["inventory"], "-e", fleet["extra"], "--limit",
                           "sim06-dpu,sim10-dpu", check=False)
    assert limited["rc"] != 0
    failed = failures(limited)
    msg = failed["sim06-dpu"][-1]
    assert msg.startswith("sim06-dpu: upgrade failed at 'A reset that needs a power cycle is not tried again"), msg
    for word in ("flashed %s" % NEW_FW, "still runs %s" % OLD_FW, "no reset was tried this time",
                 "dpusim power-cycle", "firmware_power_cycle_method"):
        assert word in msg, (word, msg)
    ran = tasks_run(limited, "sim06-dpu")
    assert not [t for t in ran if t.startswith(("Lift the host restriction", "Plan the reset", "Reset now",
                                                "Burn the NIC", "bluefleet firmware reset"))], ran
    msg = failed["sim10-dpu"][-1]
    for word in ("the DPU is down", "SW_RESET 1", "rshim0/misc", "once bfver answers"):
        assert word in msg, (word, msg)
    assert not [t for t in tasks_run(limited, "sim10-dpu") if t.startswith("Install the BFB")]
    assert restriction(roots["sim06"]) == before["sim06"]

    # With a power cycle method the next run power-cycles instead of repeating mlxfwreset (the fault still set).
    pin.unlink()
    cycled = run_playbook("playbooks/upgrade.yml", fleet["inventory"], "-e", fleet["extra"], "--limit", "sim06-dpu",
                          check=False)
    assert cycled["rc"] == 0, cycled["stdout"][-4000:]
    # the plan made from the read of the card (a set_fact of bluefleet.dpu.reset_plan), or by fw_reset
    plans = [e["event_data"]["res"].get("ansible_facts", {}).get("__firmware_plan", e["event_data"]["res"])
             for e in cycled["events"] if e.get("event") == "runner_on_ok"
             and e["event_data"].get("task", "").startswith("Plan the reset")]
    assert [(p["reset"], p["method"]) for p in plans] == [("power_cycle", "command")], plans
    assert twin_state(roots["sim06"])["cards"][0]["firmware"]["running"]["version"] == NEW_FW
    assert restriction(roots["sim06"]) == before["sim06"]

    # The operator's fixes: bring sim10's DPU back, unlock the state directory, give the right images; every twin
    # fault cleared.
    dpusim("--root", str(roots["sim10"]), "fault", "clear", "dpu_never_returns")
    dpusim("--root", str(fleet["state"] / "sim10"), "rshim", "write", "SW_RESET 1")
    lock_dir(fleet["locked"], False)
    for pair in ("sim14", "sim15"):
        (fleet["host_vars"] / ("%s-dpu.yml" % pair)).unlink()
    for pair in FAULTS:
        dpusim("--root", str(roots[pair]), "fault", "clear")
    again = run_playbook("playbooks/upgrade.yml", fleet["inventory"], "-e", fleet["extra"], check=False)
    assert again["rc"] == 0, again["stdout"][-4000:]
    assert not [t for t in tasks_run(again, "sim06-dpu") if t.startswith(("Reset now", "Lift the host"))]
    for pair, root in roots.items():
        card = twin_state(root)["cards"][0]
        if pair in NIC_PAIRS_OFF:
            assert card["dpu_os"]["release"] == RELEASE, pair
        else:
            assert card["firmware"]["running"]["version"] == NEW_FW, pair
        assert restriction(root) == before[pair], pair
