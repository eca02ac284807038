"""Stage 4 (playbooks/services.yml) against the twin: DOCA services as static pods of each DPU's kubelet.

Four runs (check, apply, apply, check); then one service's setting changes and only that service's pod is
recreated; a service is removed; bad input (unknown service, an image tag that is not pinned, a SNAP target
without an NQN, a service both run and removed) fails before anything is written. Pods are read with the twin's
crictl (JSON, read here with the json module only); the telemetry pod's Prometheus page (what the twin's stand-in
serves, `dpusim kubelet metrics`) with the collection's parser. Two services keep the runs short; the role treats
every service alike.

Speed (this file took 324 s on a loaded machine with two pairs and one playbook run per bad input): one pair
for the deploy/update/remove runs (the role's tasks run per DPU alike, a second DPU proved nothing more), and
the four bad inputs in ONE run over four DPUs, each with its own bad host_vars: each must fail with its own
message and leave its own twin untouched.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers import _prometheus
from conftest import BIN, changed_count, make_sim_inventory, run_playbook

PLAYBOOK = "playbooks/services.yml"
DPUS = ("sim01-dpu",)
SERVICES = [
    {"name": "telemetry", "version": "1.16.5-doca2.6.0", "settings": {"prometheus": "http://0.0.0.0:9100"}},
    {"name": "hbn", "version": "2.4.1-doca2.9.1", "settings": {}},
]


def _vars(tmp_path, name, **values):
    path = tmp_path / (name + ".json")
    path.write_text(json.dumps(values))
    return "-e @%s" % path


def _twin(root, *argv, check=True):
    env = dict(os.environ, DPUSIM_ROOT=str(root), PATH="%s%s%s" % (root / "bin", os.pathsep, BIN))
    return subprocess.run(list(argv), capture_output=True, text=True, env=env, timeout=60, check=check)


def _pods(root):
    proc = _twin(root, str(root / "bin" / "crictl"), "pods", "-o", "json")
    return {p["metadata"]["name"].rsplit("-sim", 1)[0]: p["id"] for p in json.loads(proc.stdout)["items"]}


def _metrics(root):
    """The telemetry pod's Prometheus page, parsed: {family: [sample values]}; {} when nothing answers."""
    proc = _twin(root, str(BIN / "dpusim"), "kubelet", "metrics", "doca-telemetry-service", check=False)
    if proc.returncode != 0:
        return {}
    return {name: [s["value"] for s in fam["samples"]] for name, fam in _prometheus.parse_metrics(proc.stdout).items()}


def _changed_items(run):
    """(host, service) of every service the deploy task reported changed (one module run per DPU for all the
    services: its per-service results)."""
    out = set()
    for event in run["events"]:
        data = event.get("event_data") or {}
        res = data.get("res") or {}
        if event.get("event") == "runner_on_ok" and data.get("task") == "Deploy, update and remove the services":
            out.update((data.get("host"), svc["service"]) for svc in res.get("services", []) if svc["changed"])
    return out


def _files(root):
    """Every file the role may write under the twin root, with its content."""
    out = {}
    for top in ("etc/kubelet.d", "opt", "var/lib/hbn", "etc/firefly", "etc/nvda_snap"):
        base = root / top
        for path in sorted(base.rglob("*")) if base.is_dir() else []:
            if path.is_file():
                out[str(path.relative_to(root))] = path.read_text()
    return out


def _fleet(directory, dpus=DPUS):
    inventory = make_sim_inventory(directory / "inventory", nodes=len(dpus))
    return inventory, {dpu: directory / "inventory" / "state" / dpu for dpu in dpus}


@pytest.fixture
def fleet(tmp_path, collection_link):
    return _fleet(tmp_path)


def test_four_runs_then_one_service_changes_then_one_goes(tmp_path, fleet):
    inventory, roots = fleet
    base = _vars(tmp_path, "base", doca_services_list=SERVICES)

    check = run_playbook(PLAYBOOK, inventory, base, "--check")
    assert changed_count(check) == len(DPUS)  # the deploy task, once per DPU (stats count tasks)
    assert _changed_items(check) == {(d, s["name"]) for d in DPUS for s in SERVICES}
    assert all(_pods(r) == {} and _files(r) == {} and _metrics(r) == {} for r in roots.values())

    first = run_playbook(PLAYBOOK, inventory, base)
    assert changed_count(first) == len(DPUS)
    assert _changed_items(first) == {(d, s["name"]) for d in DPUS for s in SERVICES}
    pods = {dpu: _pods(r) for dpu, r in roots.items()}
    assert all(set(p) == {"doca-telemetry-service", "doca-hbn-service"} for p in pods.values()), pods
    manifest = _files(roots["sim01-dpu"])["etc/kubelet.d/doca_telemetry_standalone.yaml"]
    assert "nvcr.io/nvidia/doca/doca_telemetry:1.16.5-doca2.6.0" in manifest
    assert "bluefleet.io/config-hash" in manifest
    for root in roots.values():  # telemetry answers: the card's port counters, one sample per RDMA port
        page = _metrics(root)
        assert page["port_rcv_data"] == [0.0, 0.0] and page["port_xmit_packets"] == [0.0, 0.0], page

    again = run_playbook(PLAYBOOK, inventory, base)
    assert changed_count(again) == 0
    assert {dpu: _pods(r) for dpu, r in roots.items()} == pods  # restarted nothing

    recheck = run_playbook(PLAYBOOK, inventory, base, "--check")
    assert changed_count(recheck) == 0

    changed = [dict(SERVICES[0], settings={"prometheus": "http://0.0.0.0:9200"}), SERVICES[1]]
    run = run_playbook(PLAYBOOK, inventory, _vars(tmp_path, "changed", doca_services_list=changed))
    assert changed_count(run) == len(DPUS)  # the deploy task on each DPU; which pod changed is checked below
    assert _changed_items(run) == {(d, "telemetry") for d in DPUS}
    for dpu, root in roots.items():
        now = _pods(root)
        assert now["doca-hbn-service"] == pods[dpu]["doca-hbn-service"], "%s: hbn was restarted" % dpu
        assert now["doca-telemetry-service"] != pods[dpu]["doca-telemetry-service"], "%s: telemetry kept" % dpu
        config = _files(root)["opt/mellanox/doca/services/telemetry/config/dts_config.ini"]
        assert "prometheus=http://0.0.0.0:9200" in config
        assert "port_rcv_data" in _metrics(root)

    gone = run_playbook(PLAYBOOK, inventory, _vars(tmp_path, "gone", doca_services_list=changed[:1],
                                                   doca_services_absent=["hbn"]))
    assert changed_count(gone) == len(DPUS)  # the deploy task (it removes too) on each DPU; telemetry unchanged
    assert _changed_items(gone) == {(d, "hbn") for d in DPUS}
    assert all(set(_pods(r)) == {"doca-telemetry-service"} for r in roots.values())


BAD = {
    "sim01-dpu": ({"doca_services_list": SERVICES + [{"name": "dns", "version": "1.0.0"}]}, "does not know: ['dns']"),
    "sim02-dpu": ({"doca_services_list": [SERVICES[0], dict(SERVICES[1], version="latest")]},
                  "tag 'latest' is not pinned"),
    "sim03-dpu": ({"doca_services_list": SERVICES + [{"name": "snap", "version": "4.5.0-doca2.9.0"}],
                   "doca_services_snap_targets": [{"name": "nvme0", "address": "192.0.2.10"}]},
                  "snap_settings: doca_services_snap_targets[0] (nvme0) has no nqn; fix doca_services_snap_targets"),
    "sim04-dpu": ({"doca_services_list": SERVICES, "doca_services_absent": ["hbn"]},
                  "doca_services_absent names services doca_services_list runs: hbn; remove each from one of the two "
                  "lists; nothing was deployed"),
}


def test_bad_input_deploys_nothing(tmp_path, collection_link):
    """One run, four DPUs, one bad input each (host_vars): each fails with its own message, nothing written."""
    inventory, roots = _fleet(tmp_path, dpus=tuple(BAD))
    (inventory.parent / "host_vars").mkdir()
    for dpu, (values, _message) in BAD.items():
        (inventory.parent / "host_vars" / (dpu + ".json")).write_text(json.dumps(values))
    run = run_playbook(PLAYBOOK, inventory, check=False)
    assert run["rc"] != 0
    failed = {}
    for event in run["events"]:
        data = event.get("event_data") or {}
        if event.get("event") in ("runner_on_failed", "runner_item_on_failed"):
            failed.setdefault(data.get("host"), []).append(json.dumps(data.get("res") or {}))
    for dpu, (_values, message) in BAD.items():
        text = " ".join(failed.get(dpu, []))
        assert message in text, "%s: %r not in its failure: %s" % (dpu, message, text[-2000:] or run["stdout"][-3000:])
        # the preflight asserts say so; the SNAP filter and the module (it checks every service before it writes
        # any) name the input to fix
        said = ("nothing was deployed", "configure DOCA service", "snap_settings:")
        assert any(w in text for w in said), text[-2000:]
        assert _files(roots[dpu]) == {} and _pods(roots[dpu]) == {}, dpu
