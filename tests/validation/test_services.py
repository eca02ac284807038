"""Conformance: the DOCA services of every DPU run as asked (stage 4, playbooks/services.yml).

For each service in the DPU's ``doca_services_list`` (the inventory's value, else the role default):
its static pod is Ready and every container runs; the image the kubelet runs is the pinned one
(``crictl images`` tags of the container's image id); the container has not restarted more than
``doca_services_max_restarts`` times (default 0: a restart is a crash until someone looks).
Services in ``doca_services_absent`` must have no pod.

crictl output is read with the collection's parsers (plugins/module_utils/_crictl.py; layouts in
shared/corpus/crictl and cri-tools' source).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.bluefleet.dpu.plugins.module_utils import _crictl, _doca

pytestmark = pytest.mark.stage("services")

DEFAULTS = Path(__file__).resolve().parents[2] / "roles" / "doca_services" / "defaults" / "main.yml"
FIX = "fix: doca_services_list / playbooks/services.yml"


def _wanted(dpu):
    defaults = yaml.safe_load(DEFAULTS.read_text(encoding="utf-8"))
    services = dpu.vars.get("doca_services_list", defaults["doca_services_list"])
    absent = dpu.vars.get("doca_services_absent", defaults["doca_services_absent"])
    return services, absent


def _json(dpu, command, parser):
    res = dpu.run(command)
    assert res.rc == 0, (f"{dpu.name}: `{command}` failed (rc={res.rc}): {(res.stderr or res.stdout).strip()[-300:]}; "
                         "fix: the DPU's kubelet/containerd (BlueField OS) must run")
    return parser(res.stdout)


def _pods(dpu):
    return _json(dpu, "crictl pods -o json", _crictl.parse_pods_json)


def _containers(dpu):
    return _json(dpu, "crictl ps -a -o json", _crictl.parse_ps_json)


def _pod_of(pods, name):
    entry = _doca.SERVICES.get(name)
    if entry is None:
        return None
    ready = [p for p in pods if p["name"].startswith(entry["pod"] + "-") and p["state"] == "SANDBOX_READY"]
    return max(ready, key=lambda p: p["created_ns"]) if ready else None


def _latest(containers, pod):
    latest = {}
    for ctr in sorted((c for c in containers if c["pod_id"] == pod["id"]), key=lambda c: c["created_ns"]):
        latest[ctr["name"]] = ctr
    return list(latest.values())


def test_services_run_at_their_pinned_version(dpu):
    services, _absent = _wanted(dpu)
    pods, containers = _pods(dpu), _containers(dpu)
    tags = _crictl.image_tags(_json(dpu, "crictl images -o json", _crictl.parse_images_json))
    problems = []
    for svc in services:
        name = svc.get("name")
        if name not in _doca.SERVICES:
            problems.append(f"{dpu.name}: service {name!r} is not a DOCA service this collection knows "
                            f"({', '.join(sorted(_doca.SERVICES))}); {FIX}")
            continue
        pod = _pod_of(pods, name)
        if pod is None:
            problems.append(f"{dpu.name}: DOCA service {name}: no Ready pod {_doca.SERVICES[name]['pod']}-* "
                            f"(crictl pods); expected it running; {FIX}")
            continue
        want = svc.get("image") or _doca.image_for(name, svc.get("version"))
        for ctr in _latest(containers, pod):
            if ctr["state"] != "CONTAINER_RUNNING":
                problems.append(f"{dpu.name}: DOCA service {name}: container {ctr['name']} is {ctr['state']} "
                                f"(attempt {ctr['attempt']}), expected CONTAINER_RUNNING; see `crictl logs "
                                f"{ctr['id'][:13]}` on the DPU; fix the cause (its settings in doca_services_list) "
                                "and re-run playbooks/services.yml (a settings change recreates the pod)")
            running = tags.get(ctr["image_id"], [])
            if "@" not in want and want not in running:
                problems.append(f"{dpu.name}: DOCA service {name}: container {ctr['name']} runs image "
                                f"{running or ctr['image_id']}, expected {want}; {FIX}")
    assert not problems, "\n".join(problems)


def test_services_have_not_restarted(dpu):
    services, _absent = _wanted(dpu)
    limit = int(dpu.vars.get("doca_services_max_restarts", 0))
    pods, containers = _pods(dpu), _containers(dpu)
    problems = []
    for svc in services:
        pod = _pod_of(pods, svc.get("name"))
        for ctr in _latest(containers, pod) if pod else []:
            count = ctr["restart_count"] if ctr["restart_count"] is not None else ctr["attempt"]
            if count > limit:
                problems.append(f"{dpu.name}: DOCA service {svc['name']}: container {ctr['name']} restarted "
                                f"{count} times (limit doca_services_max_restarts={limit}): it crashed; read "
                                f"`crictl logs {ctr['id'][:13]}` and `crictl ps -a --name {ctr['name']}` on the "
                                "DPU, fix the cause (the service's settings in doca_services_list) and re-run "
                                "playbooks/services.yml; the count starts again when the pod is recreated")
    assert not problems, "\n".join(problems)


def test_removed_services_are_gone(dpu):
    _services, absent = _wanted(dpu)
    pods = _pods(dpu)
    left = [name for name in absent if _pod_of(pods, name) is not None]
    assert not left, (f"{dpu.name}: DOCA services {left} are in doca_services_absent but still have a pod; "
                      "fix: run playbooks/services.yml (it removes their manifests from /etc/kubelet.d)")
