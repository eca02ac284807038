"""playbooks/zero_trust.yml against the device twin: secure-boot report, host restriction, the four-times rule.

Twin state is read with ``dpusim state`` (``twin_state``), never through the project's parsers. In the twin's
card state ``privhost.level`` is the level, ``privhost.pending`` a flag stored but waiting for its reset.
"""

from __future__ import annotations

from conftest import changed_count, make_sim_inventory, run_playbook, twin_state

PLAYBOOK = "playbooks/zero_trust.yml"
DPUS = ("sim01-dpu", "sim02-dpu")


def fleet(tmp_path, variables, nodes=2, roots=False):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=nodes)
    extra = tmp_path / "vars.yml"
    extra.write_text(variables)
    if roots:
        run_playbook(PLAYBOOK, inventory, "--list-hosts")  # creates the twin roots before the first run
    return inventory, "-e @%s" % extra


def states(inventory):
    root = inventory.parent / "state"
    return {path.name: twin_state(path) for path in sorted(root.iterdir()) if (path / "node.json").exists()}


def privhost(inventory, host):
    return twin_state(inventory.parent / "state" / host)["cards"][0]["privhost"]


def results(run, module):
    """``{host: result}`` of the tasks that ran ``module`` (from the runner events)."""
    out = {}
    for event in run["events"]:
        data = event.get("event_data", {})
        if event.get("event") in ("runner_on_ok", "runner_on_failed") and data.get("resolved_action") == module:
            out[data["host"]] = data["res"]
    return out


def messages(run, task):
    """``{host: msg}`` of the debug tasks whose name contains ``task``."""
    return {e["event_data"]["host"]: e["event_data"]["res"].get("msg") for e in run["events"]
            if e.get("event") == "runner_on_ok" and task in e["event_data"].get("task", "")}


def failures(run):
    return {e["event_data"]["host"]: e["event_data"]["res"].get("msg", "") for e in run["events"]
            if e.get("event") == "runner_on_failed"}


def test_four_times_rule_restricts_and_reports_the_rshim_power_cycle(tmp_path, collection_link):
    inventory, extra = fleet(tmp_path, "zero_trust_disable_rshim: true\nzero_trust_disable_port_owner: true\n",
                             roots=True)
    before = states(inventory)
    assert all(privhost(inventory, h)["level"] == "PRIVILEGED" for h in DPUS)

    check = run_playbook(PLAYBOOK, inventory, extra, "--check", "--diff")
    assert set(check["stats"].get("changed") or {}) == set(DPUS)
    for host, res in results(check, "bluefleet.dpu.host_restriction").items():
        assert res["diff"]["before"]["level"] == "PRIVILEGED" and res["diff"]["after"]["level"] == "RESTRICTED"
        assert res["diff"]["after"]["disable_rshim"] is True and res["reset_required"] == "power_cycle", host
    assert "would be stored on the card and need a power_cycle" in messages(check, "Report the reset")["sim01-dpu"]
    assert states(inventory) == before, "check mode must leave the twin untouched"

    apply = run_playbook(PLAYBOOK, inventory, extra)
    assert set(apply["stats"].get("changed") or {}) == set(DPUS)
    for host, res in results(apply, "bluefleet.dpu.host_restriction").items():
        assert res["level"] == "RESTRICTED" and res["previous_level"] == "PRIVILEGED"
        assert res["reset_required"] == "power_cycle"
        assert res["reset_required_by"] == {"disable_rshim": "power_cycle", "disable_port_owner": "none"}, host
    for host in DPUS:
        priv = privhost(inventory, host)
        assert priv["level"] == "RESTRICTED"
        assert priv["current"]["disable_port_owner"] is True, "port owner needs no reset"
        assert priv["current"]["disable_rshim"] is False and priv["pending"] == {"disable_rshim": True}, \
            "the stage applies no reset: rshim stays until a power cycle"
    for host in DPUS:
        assert "are stored on the card and need a power_cycle to be active (disable_rshim, disable_port_owner)" \
            in messages(apply, "Report the reset")[host]
        assert messages(apply, "Report the secure-boot")[host] == \
            "%s: secure-boot lifecycle GA Secured (secured: True); expected: any (report only)" % host
    # the stage alone reads the lifecycle itself (site.yml takes preflight's read: test_site_sim.py)
    assert sorted(h for h, res in results(apply, "bluefleet.dpu.dpu_info").items() if "secure_boot" in res) == \
        sorted(DPUS)

    again = run_playbook(PLAYBOOK, inventory, extra)
    assert changed_count(again) == 0, again["stdout"][-4000:]
    assert messages(again, "Report the reset") == {}, "no flag changed: no reset to report"
    settled = states(inventory)
    check_again = run_playbook(PLAYBOOK, inventory, extra, "--check", "--diff")
    assert changed_count(check_again) == 0, check_again["stdout"][-4000:]
    assert states(inventory) == settled


def test_unexpected_secure_boot_lifecycle_stops_before_restricting(tmp_path, collection_link):
    inventory, extra = fleet(tmp_path, "zero_trust_secure_boot_expected: ['Secured (development)']\n", nodes=1)
    run = run_playbook(PLAYBOOK, inventory, extra, check=False)
    assert run["rc"] != 0
    msg = failures(run)["sim01-dpu"]
    assert msg.startswith("sim01-dpu: secure-boot lifecycle is GA Secured, expected Secured (development).")
    assert "change zero_trust_secure_boot_expected" in msg
    assert privhost(inventory, "sim01-dpu")["level"] == "PRIVILEGED"


def test_lift_clears_the_flags_and_flags_with_privileged_are_refused(tmp_path, collection_link):
    inventory, extra = fleet(tmp_path, "zero_trust_disable_tracer: true\n", nodes=1)
    run_playbook(PLAYBOOK, inventory, extra)
    assert privhost(inventory, "sim01-dpu")["pending"] == {"disable_tracer": True}

    bad = run_playbook(PLAYBOOK, inventory, extra, "-e", "zero_trust_host_level=privileged", check=False)
    assert bad["rc"] != 0
    assert "disable_tracer apply only with state=restricted" in failures(bad)["sim01-dpu"]
    assert privhost(inventory, "sim01-dpu")["level"] == "RESTRICTED", "refused before anything changed"

    lift = run_playbook(PLAYBOOK, inventory, "-e", "zero_trust_host_level=privileged")
    res = results(lift, "bluefleet.dpu.host_restriction")["sim01-dpu"]
    assert res["level"] == "PRIVILEGED" and res["reset_required_by"] == {"disable_tracer": "firmware_reset"}
    priv = privhost(inventory, "sim01-dpu")
    assert priv["level"] == "PRIVILEGED" and priv["pending"] == {}


def test_the_gpu_host_side_is_refused_with_the_fix(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    play = tmp_path / "host_side.yml"
    play.write_text("- name: Restrict from the wrong side\n  hosts: gpu_hosts\n  gather_facts: false\n"
                    "  environment: '{{ bluefleet_environment }}'\n  tasks:\n"
                    "    - name: Restrict\n      bluefleet.dpu.host_restriction:\n        state: restricted\n")
    run = run_playbook(str(play), inventory, check=False)
    msg = failures(run)["sim01"]
    assert "There is only a single host, it cannot restrict itself" in msg
    assert msg.endswith("run this task on the DPU (inventory group dpus), not on the GPU host")
    assert privhost(inventory, "sim01-dpu")["level"] == "PRIVILEGED"
