"""playbooks/firmware.yml against the device twin: the four-times rule, Next Boot vs Current, faults.

Every run goes through ansible-runner on a temporary sim fleet (local connection, one twin root per
inventory host). Twin state is read with ``dpusim state`` (``twin_state``), never through the
project's parsers.
"""

from __future__ import annotations

import os
import subprocess

from conftest import FIRMWARE_AFTER_THE_PLANS as AFTER_THE_PLANS
from conftest import ROOT, changed_count, make_sim_inventory, run_playbook, twin_state, twin_tool

PLAYBOOK = "playbooks/firmware.yml"
SIM_POWER_CYCLE = "firmware_power_cycle_method: command\nfirmware_power_cycle_command: [dpusim, power-cycle]\n"
CARD = "/dev/mst/mt41692_pciconf0"
PLANNED = ("Plan the reset from the read of the card where it answers (fails here, before any write, when the reset "
           "needed is not available)")


def fleet(tmp_path, nodes, variables):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=nodes)
    extra = tmp_path / "vars.yml"
    extra.write_text(variables)
    return inventory, "-e @%s" % extra


def states(inventory):
    """Twin state of every inventory host (run the inventory once first so the roots exist)."""
    root = inventory.parent / "state"
    return {path.name: twin_state(path) for path in sorted(root.iterdir()) if (path / "node.json").exists()}


def failures(run):
    """``{host: msg}`` of the failed tasks (from the runner events: stdout wraps long lines)."""
    out = {}
    for event in run["events"]:
        if event.get("event") == "runner_on_failed":
            data = event["event_data"]
            out[data["host"]] = data["res"].get("msg", "")
    return out


def card(inventory, host):
    return twin_state(inventory.parent / "state" / host)["cards"][0]


def passed(run, task):
    """Hosts that passed through ``task``: it ran, failed or was skipped there (a role ended before it: none)."""
    return sorted(e["event_data"]["host"] for e in run["events"]
                  if e.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped")
                  and e["event_data"].get("task") == task)


def changed_on(run, task):
    return sorted(e["event_data"]["host"] for e in run["events"]
                  if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == task
                  and e["event_data"]["res"].get("changed"))


def test_four_times_rule_and_one_reset_per_node(tmp_path, collection_link):
    inventory, extra = fleet(tmp_path, 2, "firmware_nvconfig: {NUM_OF_VFS: 8, SRIOV_EN: true}\n" + SIM_POWER_CYCLE)
    run_playbook(PLAYBOOK, inventory, "--list-hosts")  # creates the twin roots
    before = states(inventory)

    check = run_playbook(PLAYBOOK, inventory, extra, "--check", "--diff")
    assert changed_count(check) > 0
    assert set(check["stats"].get("changed") or {}) == {"sim01-dpu", "sim02-dpu"}
    assert "NUM_OF_VFS: 16 -> 8 (needs firmware_reset:" in check["stdout"]
    assert "expected disruption: firmware reset" in check["stdout"]
    assert states(inventory) == before, "check mode must leave the twin untouched"

    apply = run_playbook(PLAYBOOK, inventory, extra)
    assert changed_count(apply) > 0
    for host in ("sim01-dpu", "sim02-dpu"):
        cfg = card(inventory, host)
        assert cfg["mlxconfig"]["next"]["NUM_OF_VFS"] == 8
        assert cfg["mlxconfig"]["current"]["NUM_OF_VFS"] == 8, "the firmware reset activated Next Boot"
        assert cfg["power_cycles"] == 0, "a firmware reset was enough: no power cycle"
        assert cfg["arm_boot_id"] == before[host]["cards"][0]["arm_boot_id"] + 1, "exactly one reset"
    assert apply["stdout"].count("RUNNING HANDLER [bluefleet.dpu.firmware : Reset NIC firmware]") == 2

    again = run_playbook(PLAYBOOK, inventory, extra)
    assert changed_count(again) == 0, again["stdout"][-4000:]
    settled = states(inventory)
    check_again = run_playbook(PLAYBOOK, inventory, extra, "--check", "--diff")
    assert changed_count(check_again) == 0, check_again["stdout"][-4000:]
    assert states(inventory) == settled
    # Nothing to write or reset: the role ends after its plans on both DPUs, in check mode too (the plan is shown
    # where the reset is requested, after the plans: not on a node that ends).
    for run in (again, check_again):
        assert passed(run, PLANNED) == ["sim01-dpu", "sim02-dpu"]
        for task in AFTER_THE_PLANS:
            assert passed(run, task) == [], "%s: the role went on with nothing to do" % task

    # Next Boot changed by hand on one DPU: the role goes on there alone, writes it back and checks it.
    assert twin_tool(inventory.parent / "state" / "sim02-dpu", "mlxconfig", "-d", CARD, "-y", "set",
                     "NUM_OF_VFS=16").returncode == 0
    fixed = run_playbook(PLAYBOOK, inventory, extra)
    assert changed_on(fixed, "Write the NV configuration (Next Boot)") == ["sim02-dpu"]
    assert passed(fixed, "Nothing is pending and Next Boot holds what was asked") == ["sim02-dpu"]
    assert all(passed(fixed, task) in ([], ["sim02-dpu"]) for task in AFTER_THE_PLANS)
    assert card(inventory, "sim02-dpu")["mlxconfig"]["next"]["NUM_OF_VFS"] == 8
    assert states(inventory)["sim01-dpu"] == settled["sim01-dpu"]


def test_next_boot_first_current_only_after_the_reset(tmp_path, collection_link):
    inventory, extra = fleet(tmp_path, 1, "firmware_nvconfig: {NUM_OF_VFS: 4}\n" + SIM_POWER_CYCLE)
    run_playbook(PLAYBOOK, inventory, extra, "--tags", "firmware_configure")
    cfg = card(inventory, "sim01-dpu")
    assert cfg["mlxconfig"]["next"]["NUM_OF_VFS"] == 4
    assert cfg["mlxconfig"]["current"]["NUM_OF_VFS"] == 16, "mlxconfig writes Next Boot only"

    run_playbook(PLAYBOOK, inventory, extra)
    cfg = card(inventory, "sim01-dpu")
    assert cfg["mlxconfig"]["current"]["NUM_OF_VFS"] == 4


def test_mode_change_needs_power_cycle_and_fails_cleanly_without_one(tmp_path, collection_link):
    inventory = fleet(tmp_path, 1, "")[0]
    none = tmp_path / "none.yml"
    # The sim inventory gives every host the twin's power-cycle command; take it away.
    none.write_text("firmware_mode: nic\nfirmware_nvconfig: {NUM_OF_VFS: 8}\nfirmware_power_cycle_method: none\n")
    run_playbook(PLAYBOOK, inventory, "--list-hosts")
    before = states(inventory)

    failed = run_playbook(PLAYBOOK, inventory, "-e @%s" % none, check=False)
    assert failed["rc"] != 0
    assert failures(failed) == {"sim01-dpu": (
        "reset the card failed: a power cycle of the server is needed to activate INTERNAL_CPU_OFFLOAD_ENGINE: "
        "ENABLED(0) -> DISABLED(1), NUM_OF_VFS: 16 -> 8, and power_cycle_method is none; set power_cycle_method "
        "(ipmitool, redfish, command or pause) or power-cycle the server by hand and run again")}
    assert states(inventory) == before, "planning failed before anything was written"

    cycle = tmp_path / "cycle.yml"
    cycle.write_text("firmware_mode: nic\nfirmware_nvconfig: {NUM_OF_VFS: 8}\n" + SIM_POWER_CYCLE)
    run = run_playbook(PLAYBOOK, inventory, "-e @%s" % cycle)
    # the node's own power cycle by command returns before the node goes down: the card is read once it is back
    resets = [e["event_data"]["res"] for e in run["events"] if e.get("event") == "runner_on_ok"
              and e["event_data"].get("task") == "Reset NIC firmware"]
    assert [(r["reset"], r["method"], r["restarted"], r["verified"]) for r in resets] == [
        ("power_cycle", "command", True, True)], resets
    cfg = card(inventory, "sim01-dpu")
    assert cfg["mlxconfig"]["current"]["INTERNAL_CPU_OFFLOAD_ENGINE"] == 1, "NIC mode after the power cycle"
    assert cfg["mlxconfig"]["current"]["NUM_OF_VFS"] == 8
    assert cfg["power_cycles"] == 1, "one power cycle activated both changes"


def test_restricted_host_cannot_write(tmp_path, collection_link):
    inventory, extra = fleet(tmp_path, 1, "firmware_run_on: always\nfirmware_nvconfig: {NUM_OF_VFS: 8}\n"
                             + SIM_POWER_CYCLE)
    run_playbook(PLAYBOOK, inventory, "--list-hosts")
    dpu_root = inventory.parent / "state" / "sim01-dpu"
    env = dict(os.environ, DPUSIM_ROOT=str(dpu_root))
    subprocess.run([str(dpu_root / "bin" / "mlxprivhost"), "-d", "/dev/mst/mt41692_pciconf0", "r"], env=env,
                   check=True, capture_output=True, timeout=60)
    assert card(inventory, "sim01-dpu")["privhost"]["level"] == "RESTRICTED"
    before = states(inventory)

    failed = run_playbook(PLAYBOOK, inventory, extra, "--limit", "sim01", check=False)
    assert failed["rc"] != 0
    msg = failures(failed)["sim01"]
    assert msg.startswith("set NV configuration of /dev/mst/mt41692_pciconf0 failed: -E- Failed to set configuration")
    assert msg.endswith("a restricted host (zero trust) cannot write: configure from the DPU Arm side")
    assert states(inventory) == before, "a refused write leaves every node as it was"


def test_role_argument_specs_equal_the_defaults_and_follow_the_modules():
    import yaml
    from ansible_collections.bluefleet.dpu.plugins.modules import fw_reset

    role = ROOT / "roles" / "firmware"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    options = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert sorted(options) == sorted(defaults)
    for name, spec in options.items():
        assert spec["default"] == defaults[name], name
        assert name.startswith("firmware_"), name
    methods = fw_reset.argument_spec()["power_cycle_method"]["choices"]
    assert options["firmware_power_cycle_method"]["choices"] == methods
