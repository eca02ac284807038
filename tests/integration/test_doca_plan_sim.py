"""The services stage answers doca_service's check from preflight's read of each DPU (dpu_info's section
doca_services: the sha256 of every service's manifest and configuration files, each service's pod from one crictl pods
and one crictl ps -a; filter bluefleet.dpu.doca_service_plan): a DPU that runs every service as asked runs no
doca_service - the role ends after its plan, and doca_services_results is the plan's answer - and a configuration
file changed by hand on one DPU brings back exactly that module on exactly that DPU, which puts the file back
(without restarting a pod: the manifest and its config hash did not change).

Two services keep the runs short (the role treats every service alike), as test_services_sim does.
"""

from __future__ import annotations

import json

from conftest import make_sim_inventory, run_playbook, twin_tool

DPUS = ["sim01-dpu", "sim02-dpu"]
PLAN = "Compare the services with preflight's read of the DPU (the module runs only where something differs)"
DEPLOY = "Deploy, update and remove the services"
CONFIG = "opt/mellanox/doca/services/telemetry/config/dts_config.ini"
SERVICES = [
    {"name": "telemetry", "version": "1.16.5-doca2.6.0", "settings": {"prometheus": "http://0.0.0.0:9100"}},
    {"name": "hbn", "version": "2.4.1-doca2.9.1", "settings": {}},
]


def events(run, task, kinds=("runner_on_ok", "runner_on_failed")):
    return [e for e in run["events"] if e.get("event") in kinds and e["event_data"].get("task") == task]


def ran(run, task):
    """Hosts on which ``task`` ran (not skipped), and those where it changed something."""
    found = events(run, task)
    return (sorted(e["event_data"]["host"] for e in found),
            sorted(e["event_data"]["host"] for e in found if e["event_data"]["res"].get("changed")))


def passed(run, task):
    """Hosts that passed through ``task`` at all (ran, failed or skipped; a role ended before it: none)."""
    return sorted(e["event_data"]["host"] for e in events(run, task, ("runner_on_ok", "runner_on_failed",
                                                                      "runner_on_skipped")))


def plans(run):
    return {e["event_data"]["host"]: e["event_data"]["res"]["ansible_facts"]["doca_services_results"]
            for e in events(run, PLAN)}


def pods(root):
    out = twin_tool(root, "crictl", "pods", "-o", "json")
    assert out.returncode == 0, out.stderr
    return {p["metadata"]["name"]: p["id"] for p in json.loads(out.stdout)["items"]}


def test_services_run_doca_service_only_where_the_read_differs(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=2)
    state = inventory.parent / "state"
    values = tmp_path / "services.json"
    values.write_text(json.dumps({"doca_services_list": SERVICES}))
    args = ("--tags", "preflight,services", "-e", "bluefleet_validate=false", "-e", "@%s" % values)

    first = run_playbook("site.yml", inventory, *args)
    assert ran(first, DEPLOY) == (DPUS, DPUS)
    assert all(not plan["in_state"] and plan["answered"] for plan in plans(first).values()), plans(first)
    before = {dpu: pods(state / dpu) for dpu in DPUS}
    assert all(len(p) == 2 for p in before.values()), before

    # A no-op: the read answers on both DPUs; the role ends after the plan (the module is not even skipped), and
    # doca_services_results is the plan's answer, with the module's per-service keys.
    second = run_playbook("site.yml", inventory, *args)
    assert passed(second, DEPLOY) == [], "doca_service ran (or was skipped) with nothing to do"
    assert not (second["stats"].get("changed") or {}), second["stdout"][-3000:]
    for dpu, plan in plans(second).items():
        assert plan["in_state"] and plan["changes"] == [] and not plan["changed"], (dpu, plan)
        assert [(s["service"], s["changed"], s["pod"]["id"]) for s in plan["services"]] == [
            ("telemetry", False, before[dpu]["doca-telemetry-service-" + dpu]),
            ("hbn", False, before[dpu]["doca-hbn-service-" + dpu])]
    assert sorted(plans(second)) == DPUS

    # The telemetry configuration changed by hand on one DPU: the read says so there; doca_service runs on that DPU
    # alone, writes the file back and restarts nothing (the manifest, and so its config hash, is unchanged).
    config = state / "sim02-dpu" / CONFIG
    text = config.read_text()
    config.write_text(text.replace("9100", "9200"))
    third = run_playbook("site.yml", inventory, *args)
    assert ran(third, DEPLOY) == (["sim02-dpu"], ["sim02-dpu"]) and passed(third, DEPLOY) == ["sim02-dpu"]
    assert plans(third)["sim02-dpu"]["changes"] == ["/" + CONFIG] and plans(third)["sim01-dpu"]["in_state"]
    result = events(third, DEPLOY)[0]["event_data"]["res"]
    assert result["changed_files"] == ["/" + CONFIG] and not any(s["restarted"] for s in result["services"])
    assert config.read_text() == text
    assert {dpu: pods(state / dpu) for dpu in DPUS} == before
