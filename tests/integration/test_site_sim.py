"""site.yml against the simulated fleet: no Docker, the twin on the local connection."""

from __future__ import annotations

import json
import subprocess

from conftest import ROOT, ansible_env, changed_count, make_sim_inventory, run_playbook

# Ansible's default strategy, what a user runs first, even when BLUEFLEET_TEST_STRATEGY picks Mitogen's
ANSIBLE_STRATEGY = "linear"


def _plain(value):
    """ansible-inventory marks values from inventory plugins as unsafe: unwrap them."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_sim_inventory_pairs_every_gpu_host_with_its_dpu(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path, nodes=3)
    proc = subprocess.run([str(ROOT / ".venv/bin/ansible-inventory"), "-i", str(inventory), "--list"],
                          capture_output=True, text=True, env=ansible_env(), check=True, timeout=120)
    data = _plain(json.loads(proc.stdout))
    assert sorted(data["gpu_hosts"]["hosts"]) == ["sim01", "sim02", "sim03"]
    assert sorted(data["dpus"]["hosts"]) == ["sim01-dpu", "sim02-dpu", "sim03-dpu"]
    hostvars = data["_meta"]["hostvars"]
    assert hostvars["sim02"]["bluefleet_dpus"] == ["sim02-dpu"]
    assert hostvars["sim02-dpu"]["bluefleet_host"] == "sim02"
    roots = {hostvars[h]["bluefleet_environment"]["DPUSIM_ROOT"] for h in hostvars}
    assert len(roots) == 6, "every inventory host has its own twin root"
    for host, hv in hostvars.items():
        assert hv["ansible_connection"] == "local", host
        assert hv["bluefleet_environment"]["PATH"].startswith(hv["bluefleet_environment"]["DPUSIM_ROOT"] + "/bin:")


def test_sim_inventory_read_writes_nothing_and_names_the_fix(tmp_path, collection_link):
    """An inventory parse creates no twin root: it fails naming `bluefleet sim init`, which creates them (once)."""
    inventory = tmp_path / "fleet.sim.yml"
    inventory.write_text("plugin: bluefleet.dpu.sim\nnodes: 1\nstate_dir: state\n")
    listing = [str(ROOT / ".venv/bin/ansible-inventory"), "-i", str(inventory), "--list"]
    proc = subprocess.run(listing, capture_output=True, text=True, env=ansible_env(), check=False, timeout=120)
    assert proc.returncode != 0 and "bluefleet sim init -i %s" % inventory in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.sim.yml"], "the inventory read wrote something"
    init = [str(ROOT / ".venv/bin/bluefleet"), "sim", "init", "-i", str(inventory)]
    first = subprocess.run(init, capture_output=True, text=True, env=ansible_env(), check=True, timeout=300)
    assert "2 twin root(s) created" in first.stdout
    again = subprocess.run(init, capture_output=True, text=True, env=ansible_env(), check=True, timeout=300)
    assert "0 twin root(s) created" in again.stdout
    assert subprocess.run(listing, capture_output=True, text=True, env=ansible_env(), check=False,
                          timeout=120).returncode == 0


def test_sim_inventory_rejects_bad_size(tmp_path, collection_link):
    inventory = tmp_path / "fleet.sim.yml"
    inventory.write_text("plugin: bluefleet.dpu.sim\nnodes: 0\n")
    proc = subprocess.run([str(ROOT / ".venv/bin/ansible-inventory"), "-i", str(inventory), "--list"],
                          capture_output=True, text=True, env=ansible_env(), check=False, timeout=120)
    assert "nodes must be a positive integer" in proc.stderr


def ran(run, task):
    """Hosts on which ``task`` ran (not skipped), from the runner events."""
    return sorted(e["event_data"]["host"] for e in run["events"]
                  if e.get("event") in ("runner_on_ok", "runner_on_failed") and e["event_data"].get("task") == task)


# Reads whose answer this run already has: preflight read the cards (what they run, their links, their reset
# levels), the fused secure-boot lifecycle and the GPU-NIC topology moments before, and with no image asked nothing
# touched the card before the health gate (a stage run alone reads for itself, and the gate reads again where something
# touched the card: test_zero_trust_sim, test_gpudirect_sim, test_upgrade_sim, test_upgrade_failsafe_sim,
# test_fault_matrix_sim).
KNOWN_READS = {"Read what the node runs (step 'read versions')":
               "Sum up the node before the upgrade, and whether it differs from the target",
               "Read the secure-boot lifecycle (mlxbf-bootctl)": "Report the secure-boot lifecycle",
               "Read the GPU-NIC topology": "Set the closest NIC of each GPU",
               # preflight's read of the cards ran nft --version (section tools)
               "Look for nft": "Write the ruleset (checked with nft -c first)",
               # preflight read the reset levels where the node configures its card: the reset is planned from it
               "Plan the reset (fails here, before any write, when the reset needed is not available)":
               "Plan the reset from the read of the card where it answers (fails here, before any write, when the "
               "reset needed is not available)"}
# The health gate takes that read too: where it passes there and no restriction is to be restored, the node ends at
# this meta task (no event for a host it ends; a host it does not end is skipped there), before the gate's own read
# and assert.
GATE_END = "End a node whose health gate passes in the read it has, with no host restriction to restore"
GATE_READ = "Health gate, read the links and what the node runs, in one run (step 'health gate')"
GATE = "Health gate, the node runs the target and its links are up (step 'health gate')"


NO_OP_SKIPS = ("Apply the lossless RoCE settings on every RoCE netdev (runtime only, lost on reboot)",
               "Write the boot-time unit, its settings and the script that applies them",
               "Load nvidia_peermem and check its registration",
               "Turn PCIe ACS off on the GPU and NIC bridges",
               "Write the NCCL configuration file and the shell profile that exports the settings",
               "Write the ruleset (checked with nft -c first)",
               "Include the ruleset in nftables.conf (loaded at boot)",
               "Set IPSEC_FULL_OFFLOAD in mlnx-bf.conf",
               "Check that each uplink's device has an eswitch",
               "Set the eswitch mode of each uplink's device",
               "Set the host privilege level and flags (mlxprivhost)",
               # the firmware and zero_trust roles end after their plans
               "Show the reset plan and request the reset that activates what is pending",
               "Nothing is pending and Next Boot holds what was asked",
               "Keep the reset the flags need as zero_trust_reset_required")


def test_site_converges_and_second_run_changes_nothing(sim_inventory, collection_link):
    # The first run ends with stage 7 (the conformance suite from the controller, on localhost): it fails the
    # run unless every check passes on the converged fleet. The repeats leave the suite out.
    first = run_playbook("site.yml", sim_inventory)
    assert set(first["stats"]["ok"]) == {"sim01", "sim01-dpu", "sim02", "sim02-dpu", "localhost"}
    assert "Run the conformance suite against the inventory of this run" in first["stdout"]
    for read, user in KNOWN_READS.items():
        assert ran(first, read) == [], "%s: read again although this run had the answer" % read
        assert ran(first, user), "%s: nothing used the answer" % user
    assert ran(first, GATE_READ) == [] and ran(first, GATE) == [], "the gate read or asserted again"
    assert any(e.get("event") == "playbook_on_task_start" and e["event_data"].get("task") == GATE_END
               for e in first["events"])
    assert not [e for e in first["events"] if e.get("event") == "runner_on_skipped"
                and e["event_data"].get("task") == GATE_END], "a DPU did not end at the gate's end"
    second = run_playbook("site.yml", sim_inventory, "-e", "bluefleet_validate=false")
    assert changed_count(second) == 0, second["stdout"][-4000:]
    # Nothing touched a node after preflight's read in this run: it answers the RoCE QoS, boot files and firewall
    # ruleset checks, the eswitch check and the host restriction (test_fabric_plan_sim, test_firewall_sim and
    # test_dpu_plan_sim break one thing by hand).
    for task in NO_OP_SKIPS:
        assert ran(second, task) == [], "%s ran on a node whose read answered it" % task
    check = run_playbook("site.yml", sim_inventory, "--check", "--diff", "-e", "bluefleet_validate=false")
    assert changed_count(check) == 0


def test_preflight_stops_on_broken_pairing(tmp_path, collection_link):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n"
        "  vars: {ansible_connection: local}\n"
        "  children:\n"
        "    gpu_hosts:\n"
        "      hosts:\n"
        "        h1: {bluefleet_dpus: [h1-dpu]}\n"
        "    dpus:\n"
        "      hosts:\n"
        "        h1-dpu: {bluefleet_host: h2, bluefleet_rshim: rshim0}\n"
    )
    run = run_playbook("playbooks/preflight.yml", inventory, "--tags", "pairing", check=False)
    assert run["rc"] != 0
    assert "h1-dpu: a DPU must set bluefleet_host to a member of gpu_hosts" in run["stdout"]
