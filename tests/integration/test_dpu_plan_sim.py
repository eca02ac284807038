"""The zero-trust and switchdev stages answer their modules' checks from preflight's read of each DPU (dpu_info's
sections privilege, eswitch with its devlink ports, and ipsec_offload; filters bluefleet.dpu.restriction_plan,
bluefleet.dpu.eswitch_plan and bluefleet.dpu.ipsec_offload_plan): a DPU that holds everything runs neither
host_restriction, nor eswitch, nor ipsec_offload - the switchdev role ends there, passing through none of its later
tasks - and one thing broken by hand on one DPU brings back exactly that module on exactly that DPU, which puts it
right. A netdev the read does not place still stops the run at the eswitch check, before mlnx-bf.conf or the driver is
touched.
"""

from __future__ import annotations

import json

from conftest import make_sim_inventory, run_playbook, twin_tool

DPUS = ["sim01-dpu", "sim02-dpu"]
NO_VALIDATE = ("-e", "bluefleet_validate=false")
CARD = "/dev/mst/mt41692_pciconf0"

RESTRICTION_PLAN = ("Compare the host restriction with preflight's read of the card (the module runs only where it "
                    "differs)")
RESTRICT = "Set the host privilege level and flags (mlxprivhost)"
KEEP = "Keep the reset the flags need as zero_trust_reset_required"
REPORT = "Report the reset the changed flags need (this stage applies none)"

ESWITCH_PLAN = ("Compare the eswitch of each uplink's device with preflight's read of the node (the check runs where "
                "it cannot)")
CHECK = "Check that each uplink's device has an eswitch"
SET = "Set the eswitch mode of each uplink's device"
IPSEC = "Set IPSEC_FULL_OFFLOAD in mlnx-bf.conf"
RESTART = "Restart mlx5 driver"
# the switchdev role's tasks after its plans (an end_role leaves them out where everything is in state)
SWITCHDEV_LATER = (CHECK, IPSEC, "Restart the driver now if the setting changed", SET)


def events(run, task):
    return [e for e in run["events"] if e.get("event") in ("runner_on_ok", "runner_on_failed")
            and e["event_data"].get("task") == task]


def ran(run, task):
    """Hosts on which ``task`` ran (not skipped), and those where it changed something."""
    found = events(run, task)
    return (sorted(e["event_data"]["host"] for e in found),
            sorted(e["event_data"]["host"] for e in found if e["event_data"]["res"].get("changed")))


def seen(run, task):
    """Hosts that went through ``task`` at all (ran, skipped or failed)."""
    return sorted(e["event_data"]["host"] for e in run["events"]
                  if e.get("event") in ("runner_on_ok", "runner_on_skipped", "runner_on_failed")
                  and e["event_data"].get("task") == task)


def driver_mode(root):
    return {uplink: (root / "sys/class/net" / uplink / "compat/devlink/ipsec_mode").read_text().strip()
            for uplink in ("p0", "p1")}


def passed(run, task):
    """Hosts that passed through ``task``: it ran, failed or was skipped there (a role ended before it: none)."""
    return sorted(e["event_data"]["host"] for e in run["events"]
                  if e.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped")
                  and e["event_data"].get("task") == task)


def level(root):
    out = twin_tool(root, "mlxprivhost", "-d", CARD, "q")
    assert out.returncode == 0, out.stderr
    return next(line.split(":", 1)[1].strip() for line in out.stdout.splitlines() if line.startswith("level"))


def modes(root):
    out = twin_tool(root, "devlink", "-j", "dev", "eswitch", "show")
    assert out.returncode == 0, out.stderr
    return {handle: attrs["mode"] for handle, attrs in json.loads(out.stdout)["dev"].items()}


def test_zero_trust_runs_host_restriction_only_where_the_read_differs(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=2)
    state = inventory.parent / "state"
    args = ("--tags", "preflight,zero_trust", "-e", "zero_trust_disable_port_owner=true") + NO_VALIDATE
    first = run_playbook("site.yml", inventory, *args)
    assert ran(first, RESTRICT) == (DPUS, DPUS)

    # A no-op: the read answers on both DPUs; the facts come from the plan, and the role ends there (the module,
    # the facts from its result and the report are not even skipped).
    second = run_playbook("site.yml", inventory, *args)
    assert ran(second, RESTRICTION_PLAN)[0] == DPUS
    assert not (second["stats"].get("changed") or {}), second["stdout"][-3000:]
    for event in events(second, RESTRICTION_PLAN):
        facts = event["event_data"]["res"]["ansible_facts"]
        assert facts["zero_trust_host_restriction"] == "RESTRICTED" and facts["zero_trust_reset_required"] == "none"
        assert facts["zero_trust_reset_required_by"] == {}
    for task in (RESTRICT, KEEP, REPORT):
        assert passed(second, task) == [], "%s: the role went on with nothing to do" % task

    # The host privileged again by hand on one DPU: host_restriction runs there alone and restricts it again.
    dpu = state / "sim02-dpu"
    assert twin_tool(dpu, "mlxprivhost", "-d", CARD, "p").returncode == 0
    assert level(dpu) == "PRIVILEGED"
    third = run_playbook("site.yml", inventory, *args)
    assert ran(third, RESTRICT) == (["sim02-dpu"], ["sim02-dpu"])
    assert passed(third, RESTRICT) == passed(third, KEEP) == ["sim02-dpu"]
    plan_facts = {e["event_data"]["host"]: e["event_data"]["res"]["ansible_facts"]
                  for e in events(third, RESTRICTION_PLAN)}
    assert "zero_trust_host_restriction" in plan_facts["sim01-dpu"]
    assert "zero_trust_host_restriction" not in plan_facts["sim02-dpu"], "set from the module's result there"
    assert level(dpu) == "RESTRICTED" and level(state / "sim01-dpu") == "RESTRICTED"

    # A flag asked that the cards do not have: the read says so on both, the module runs on both, and the report
    # (from the module's result) names the reset it needs.
    tracer = run_playbook("site.yml", inventory, *args, "-e", "zero_trust_disable_tracer=true")
    assert ran(tracer, RESTRICT) == (DPUS, DPUS)
    assert ran(tracer, REPORT)[0] == DPUS


def test_switchdev_checks_and_sets_the_eswitch_only_where_the_read_differs(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=2)
    state = inventory.parent / "state"
    args = ("--tags", "preflight,switchdev") + NO_VALIDATE
    first = run_playbook("site.yml", inventory, *args)
    assert ran(first, IPSEC)[1] == DPUS, "the first run switches IPsec full offload on (a driver restart)"
    assert ran(first, CHECK) == ([], []), "the read placed every uplink: no check module"
    assert ran(first, SET)[0] == DPUS, "the driver restart resets the eswitch: the set runs"

    # A no-op: the read answers both checks on both DPUs; the role ends after its plans: no check, no ipsec_offload,
    # no set, not even skipped.
    second = run_playbook("site.yml", inventory, *args)
    assert ran(second, ESWITCH_PLAN)[0] == DPUS
    for task in SWITCHDEV_LATER:
        assert seen(second, task) == [], task
    assert not (second["stats"].get("changed") or {}), second["stdout"][-3000:]

    # One device put in legacy mode by hand: the read says so; the set runs on that DPU alone and puts it back.
    # ipsec_offload is answered there too (in state): skipped.
    dpu = state / "sim01-dpu"
    assert twin_tool(dpu, "devlink", "dev", "eswitch", "set", "pci/0000:03:00.1", "mode", "legacy").returncode == 0
    third = run_playbook("site.yml", inventory, *args)
    assert ran(third, CHECK) == ([], []) and ran(third, SET) == (["sim01-dpu"], ["sim01-dpu"])
    assert ran(third, IPSEC) == ([], []) and seen(third, IPSEC) == ["sim01-dpu"]
    assert set(modes(dpu).values()) == {"switchdev"}

    # IPSEC_FULL_OFFLOAD switched off by hand in one DPU's mlnx-bf.conf: ipsec_offload runs there alone, writes it
    # back and restarts the driver, which resets the eswitch: the set follows on that DPU.
    other = state / "sim02-dpu"
    conf = other / "etc" / "mellanox" / "mlnx-bf.conf"
    conf.write_text(conf.read_text().replace('IPSEC_FULL_OFFLOAD="yes"', 'IPSEC_FULL_OFFLOAD="no"'))
    fourth = run_playbook("site.yml", inventory, *args)
    assert ran(fourth, IPSEC) == (["sim02-dpu"], ["sim02-dpu"]) and ran(fourth, RESTART)[0] == ["sim02-dpu"]
    assert ran(fourth, SET)[0] == ["sim02-dpu"]
    assert 'IPSEC_FULL_OFFLOAD="yes"' in conf.read_text()
    assert seen(fourth, ESWITCH_PLAN) == DPUS and all(seen(fourth, task) == ["sim02-dpu"] for task in (IPSEC, SET))

    # The file right but the driver running without IPsec full offload (restarted by hand while the file said no):
    # the read says the driver differs (restart_required); ipsec_offload runs on that DPU alone and the driver restart
    # puts the mode right.
    conf = dpu / "etc" / "mellanox" / "mlnx-bf.conf"
    text = conf.read_text()
    conf.write_text(text.replace('IPSEC_FULL_OFFLOAD="yes"', 'IPSEC_FULL_OFFLOAD="no"'))
    assert twin_tool(dpu, "openibd", "restart").returncode == 0
    conf.write_text(text)
    assert driver_mode(dpu) == {"p0": "none", "p1": "none"}
    fifth = run_playbook("site.yml", inventory, *args)
    assert ran(fifth, IPSEC) == (["sim01-dpu"], ["sim01-dpu"]) and ran(fifth, RESTART)[0] == ["sim01-dpu"]
    assert driver_mode(dpu) == {"p0": "full", "p1": "full"} and conf.read_text() == text

    # A netdev that is no uplink: the read does not place it, the check module runs and stops the run there.
    conf = (state / "sim02-dpu" / "etc" / "mellanox" / "mlnx-bf.conf").read_text()
    extra = tmp_path / "netdevs.yml"
    extra.write_text("switchdev_netdevs: [p0, ens9]\n")
    bad = run_playbook("site.yml", inventory, *args, "-e", "@%s" % extra, check=False)
    assert bad["rc"] != 0, bad["stdout"][-3000:]
    failed = events(bad, CHECK)
    assert sorted(e["event_data"]["host"] for e in failed if e["event"] == "runner_on_failed") == DPUS, \
        bad["stdout"][-3000:]
    assert all("netdev 'ens9' is not a port of any devlink device" in e["event_data"]["res"]["msg"] for e in failed)
    assert ran(bad, IPSEC) == ([], []) and ran(bad, SET) == ([], [])
    assert (state / "sim02-dpu" / "etc" / "mellanox" / "mlnx-bf.conf").read_text() == conf
