"""Conformance: the DOCA services of every DPU run as asked (stage 4, playbooks/services.yml).

For each service in the DPU's ``doca_services_list`` (the inventory's value, else the role default):
its static pod Ready and every container runs; the image the kubelet runs is the pinned one
(``crictl images`` tags of the container's image id; for an image pinned by digest, ``repoDigests`` of the image
the container runs must hold that digest); the container has not restarted more than
``doca_services_max_restarts`` times (default 0: a restart is a crash until someone looks).
Services in ``doca_services_absent`` must have no pod.

crictl output is read with the collection's parsers (plugins/module_utils/parsers/_crictl.py; layouts in
shared/corpus/crictl and cri-tools' source).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _doca
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers import _crictl, _frr, _nvme, _pmc, _prometheus

pytestmark = pytest.mark.stage("services")

DEFAULTS = Path(__file__).resolve().parents[2] / "roles" / "doca_services" / "defaults" / "main.yml"
FIX = "fix: doca_services_list / playbooks/services.yml"


def _wanted(dpu):
    defaults = yaml.safe_load(DEFAULTS.read_text(encoding="utf-8"))
    services = dpu.vars.get("doca_services_list", defaults["doca_services_list"])
    absent = dpu.vars.get("doca_services_absent", defaults["doca_services_absent"])
    return services, absent


def _json(dpu, command, parser):
    res = dpu.read(command)
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
    images = _json(dpu, "crictl images -o json", _crictl.parse_images_json)
    tags = _crictl.image_tags(images)
    digests = {img["id"]: img["repo_digests"] for img in images}
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
            if "@" in want:  # pinned by digest: the digest the running container's image has must be that one
                running = digests.get(ctr["image_id"], [])
                if want not in running:
                    have = ", ".join(d.rsplit("@", 1)[-1] for d in running) or ctr["image_id"]
                    problems.append(f"{dpu.name}: DOCA service {name}: container {ctr['name']} runs image digest "
                                    f"{have}, expected the pinned {want.rsplit('@', 1)[-1]} ({want}); the manifest "
                                    f"or the image store was changed outside bluefleet; {FIX} (re-renders the "
                                    "manifest with the pinned image, which recreates the pod)")
                continue
            running = tags.get(ctr["image_id"], [])
            if want not in running:
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


# ---- health by the service's own signal ---------------------------------------------------------------------

# Counter names every RDMA port of a card has (Linux sysfs-class-infiniband ABI, ports/<n>/counters): the
# telemetry page must carry them as numbers. A real DTS names its metrics its own way; see src/dpusim/telemetry.py.
TELEMETRY_COUNTERS = ("port_rcv_data", "port_xmit_data", "port_rcv_packets", "port_xmit_packets")
TELEMETRY_FIX = ("fix: the telemetry entry of doca_services_list (settings.prometheus: http://0.0.0.0:9100) / "
                 "playbooks/services.yml")
_SCRAPE = ("python3 -c \"import sys, time, urllib.request as u\n"
           "for i in range(5):\n"
           "    try:\n"
           "        r = u.urlopen('http://127.0.0.1:{port}/metrics', timeout=5)\n"
           "    except OSError as e:\n"
           "        err = e; time.sleep(1); continue\n"
           "    print(r.headers.get('Content-Type')); sys.stdout.write(r.read().decode()); sys.exit(0)\n"
           "sys.exit('GET http://127.0.0.1:{port}/metrics: %s' % err)\"")


def _prometheus_port(svc):
    url = str((svc.get("settings") or {}).get("prometheus", ""))
    port = url.rsplit(":", 1)[-1].strip("/") if url.count(":") >= 2 else ""
    return int(port) if port.isdigit() else None


def _telemetry(dpu) -> tuple[dict, int]:
    services, _absent = _wanted(dpu)
    svc = next((s for s in services if s.get("name") == "telemetry"), None)
    if svc is None:
        pytest.skip(f"not applicable: {dpu.name} does not ask for DOCA telemetry (doca_services_list)")
    port = _prometheus_port(svc)
    assert port is not None, (f"{dpu.name}: DOCA service telemetry: settings.prometheus is "
                              f"{(svc.get('settings') or {}).get('prometheus')!r}, expected http://ADDRESS:PORT "
                              f"(the Prometheus endpoint is off); {TELEMETRY_FIX}")
    return svc, port


def _judge_metrics_page(dpu, body: str) -> None:
    try:
        families = _prometheus.parse_metrics(body)
    except _prometheus.PrometheusError as exc:
        raise AssertionError(f"{dpu.name}: DOCA service telemetry: the metrics page does not parse as Prometheus "
                             f"text format 0.0.4: {exc}; {TELEMETRY_FIX}") from None
    problems = []
    for name in TELEMETRY_COUNTERS:
        samples = families.get(name, {}).get("samples", [])
        if not samples:
            problems.append(f"{dpu.name}: DOCA service telemetry: counter {name} missing from the metrics page "
                            f"({len(families)} families found); expected one sample per RDMA port; {TELEMETRY_FIX}")
        bad = [s for s in samples if not s["value"] >= 0]
        if bad:
            problems.append(f"{dpu.name}: DOCA service telemetry: counter {name} has values "
                            f"{[s['value'] for s in bad]}, expected non-negative numbers; {TELEMETRY_FIX}")
    assert not problems, "\n".join(problems)


def _metrics_failed(dpu, port, res) -> str:
    return (f"{dpu.name}: DOCA service telemetry: metrics endpoint on port {port} does not answer "
            f"(rc={res.rc}): {(res.stderr or res.stdout).strip()[-300:]}; expected a Prometheus page; "
            f"see `crictl ps -a --name doca-telemetry` on the DPU; {TELEMETRY_FIX}")


@pytest.mark.links
def test_telemetry_metrics_answer(dpu):
    """DTS is healthy when its Prometheus endpoint answers a page that parses, with the card's port counters as
    numbers: an HTTP GET on the DPU itself (lab containers and real DPUs: the node's own network namespace)."""
    _svc, port = _telemetry(dpu)
    res = dpu.run(_SCRAPE.format(port=port))
    assert res.rc == 0, _metrics_failed(dpu, port, res)
    ctype, _sep, body = res.stdout.partition("\n")
    assert ctype.startswith("text/plain") and "version=0.0.4" in ctype, (
        f"{dpu.name}: DOCA service telemetry: port {port} answers Content-Type {ctype!r}, expected "
        f"text/plain; version=0.0.4 (Prometheus text format); {TELEMETRY_FIX}")
    _judge_metrics_page(dpu, body)


@pytest.mark.twin
def test_telemetry_twin_metrics_page(dpu):
    """The same judgement on the page the twin's DTS stand-in serves (`dpusim kubelet metrics`), refused the same
    way when the pod does not run: for twins on the local connection, which run no daemon to GET from."""
    _svc, port = _telemetry(dpu)
    res = dpu.run(f"dpusim kubelet metrics {_doca.SERVICES['telemetry']['pod']}")
    assert res.rc == 0, _metrics_failed(dpu, port, res)
    _judge_metrics_page(dpu, res.stdout)


SNAP_FIX = ("fix: doca_services_snap_targets / doca_services_snap_namespaces / doca_services_snap_controllers "
            "(the snap entry of doca_services_list) / playbooks/services.yml")


def test_snap_namespace_visible(pair):
    """SNAP is healthy when the paired GPU host sees every namespace the inventory declares: `nvme list` on the
    host (parsed with plugins/module_utils/parsers/_nvme.py) has a namespace with that NSID, and, where the namespace
    entry gives ``size_bytes``, that size. The DPU's SNAP pod must be Ready first (`crictl pods`)."""
    dpu, host = pair.dpu, pair.host
    services, _absent = _wanted(dpu)
    if not any(s.get("name") == "snap" for s in services):
        pytest.skip(f"not applicable: {dpu.name} does not ask for DOCA SNAP (doca_services_list)")
    defaults = yaml.safe_load(DEFAULTS.read_text(encoding="utf-8"))
    namespaces = dpu.vars.get("doca_services_snap_namespaces", defaults["doca_services_snap_namespaces"])
    nqn = dpu.vars.get("doca_services_snap_subsystem_nqn", defaults["doca_services_snap_subsystem_nqn"])
    target_list = dpu.vars.get("doca_services_snap_targets", defaults["doca_services_snap_targets"])
    controllers = dpu.vars.get("doca_services_snap_controllers", defaults["doca_services_snap_controllers"])
    try:
        _doca.check_snap(target_list, controllers, namespaces)
    except _doca.DocaError as exc:
        raise AssertionError(f"{dpu.name}: DOCA service snap: the inventory's SNAP settings are wrong: {exc}") from None
    targets = {t.get("name"): t for t in target_list}
    pod = _pod_of(_pods(dpu), "snap")
    assert pod is not None, (f"{dpu.name}: DOCA service snap: no Ready pod {_doca.SERVICES['snap']['pod']}-* "
                             f"(crictl pods), so {host.name} sees none of subsystem {nqn}'s namespaces; {SNAP_FIX}")
    res = host.run("nvme list")
    assert res.rc == 0, (f"{host.name}: `nvme list` failed (rc={res.rc}): {(res.stderr or res.stdout).strip()[-300:]}; "
                         "fix: install nvme-cli on the GPU host")
    try:
        seen = _nvme.parse_list(res.stdout)
    except _nvme.ParseError as exc:
        raise AssertionError(f"{host.name}: `nvme list` output does not parse: {exc}") from None
    problems = []
    for ns in namespaces:
        nsid = int(ns.get("nsid", 0))
        bdev = str(ns.get("bdev", ""))
        target = targets.get(re.sub(r"n[0-9]+$", "", bdev), {})
        where = (f"SNAP namespace {nsid} (bdev {bdev}, target {target.get('nqn', '?')} at "
                 f"{target.get('address', '?')}, subsystem {nqn}, controller {ns.get('controller')})")
        rows = [r for r in seen if r["nsid"] == nsid]
        if not rows:
            found = ", ".join(f"{r['node']} ns {r['nsid']} {r['model']}" for r in seen) or "no NVMe namespaces"
            problems.append(f"{host.name}: DOCA service snap on {dpu.name}: {where} not visible (`nvme list` shows "
                            f"{found}); expected it; check the SNAP container runs (`crictl ps -a --name doca-snap` "
                            "on the DPU), the target answers and the controller is resumed; "
                            f"{SNAP_FIX}")
            continue
        want = ns.get("size_bytes")
        if want is not None and not any(_nvme.same_size(r["size_bytes"], int(want)) for r in rows):
            problems.append(f"{host.name}: DOCA service snap on {dpu.name}: {where} is "
                            f"{[r['size_bytes'] for r in rows]} bytes ({rows[0]['model']}), expected {want}; "
                            f"{SNAP_FIX}")
    assert not problems, "\n".join(problems)


# ---- HBN: routes present; Firefly: PTP port state (issue #8, "healthy by its own signal") ----------------------
# On a BlueField both programs live inside the service's container, not on the Arm OS: the checks run them with
# `crictl exec <container id> vtysh ...` / `... pmc ...` (cri-tools syntax); the twin answers crictl exec the same
# way (src/dpusim/tools/crictl.py: vtysh in doca-hbn, pmc in doca-firefly).
HBN_FIX = "fix: the hbn entry of doca_services_list (settings = NVUE startup.yaml) / playbooks/services.yml"
PTP_FIX = "fix: the firefly entry of doca_services_list (settings = ptp4l [global]) / playbooks/services.yml"
PTP_STATES_DEFAULT = ["MASTER", "SLAVE", "PASSIVE"]


def _merge(into, tree):
    for key, value in tree.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _nvue_tree(settings):
    """NVUE settings as the role renders them into startup.yaml: a list of ``set:`` documents or the tree."""
    docs = settings if isinstance(settings, list) else [settings]
    tree = {}
    for item in docs:
        if isinstance(item, dict):
            part = item.get("set") if isinstance(item.get("set"), dict) else item
            _merge(tree, part)
    return tree


def _hbn_expected_routes(settings):
    """(prefix, protocol) pairs the HBN configuration declares: static routes of VRF default, networks of the
    interfaces' IPv4 addresses (connected)."""
    import ipaddress

    tree = _nvue_tree(settings)
    want = set()
    for conf in (tree.get("interface") or {}).values():
        for cidr in ((conf or {}).get("ip") or {}).get("address") or {}:
            net = ipaddress.ip_interface(str(cidr)).network
            if net.version == 4:
                want.add((str(net), "connected"))
    static = ((((tree.get("vrf") or {}).get("default") or {}).get("router") or {}).get("static")) or {}
    for prefix in static:
        net = ipaddress.ip_network(str(prefix), strict=False)
        if net.version == 4:
            want.add((str(net), "static"))
    return sorted(want)


def _exec_in(dpu, service: str, command: str, fix: str):
    """Run ``command`` inside the running container of ``service`` (``crictl exec <id> ...``); the result."""
    name = _doca.SERVICES[service]["container"]
    pod = _pod_of(_pods(dpu), service)
    running = [c for c in (_latest(_containers(dpu), pod) if pod else [])
               if c["name"] == name and c["state"] == "CONTAINER_RUNNING"]
    assert running, (f"{dpu.name}: DOCA service {service}: no running container {name} (crictl ps -a --name {name}), "
                     f"so `{command}` has nowhere to run; {fix}")
    return dpu.run(f"crictl exec {running[0]['id']} {command}")


def test_hbn_routes_present(dpu):
    """HBN is healthy when its FRR answers `show ip route json` and every route its configuration declares is
    selected and installed (parsed with plugins/module_utils/parsers/_frr.py)."""
    services, _absent = _wanted(dpu)
    svc = next((s for s in services if s.get("name") == "hbn"), None)
    if svc is None:
        pytest.skip(f"not applicable: {dpu.name} does not ask for DOCA HBN (doca_services_list)")
    res = _exec_in(dpu, "hbn", "vtysh -c 'show ip route json'", HBN_FIX)
    assert res.rc == 0, (f"{dpu.name}: DOCA service hbn: routes: `vtysh -c 'show ip route json'` in doca-hbn failed "
                         f"(rc={res.rc}): {(res.stderr or res.stdout).strip()[-300:]}; expected FRR to answer; "
                         f"see `crictl ps -a --name doca-hbn` on the DPU; {HBN_FIX}")
    try:
        routes = _frr.parse_ip_route_json(res.stdout)
    except _frr.ParseError as exc:
        raise AssertionError(f"{dpu.name}: DOCA service hbn: routes: output does not parse: {exc}") from None
    problems = []
    for prefix, protocol in _hbn_expected_routes(svc.get("settings") or {}):
        if prefix not in _frr.selected_prefixes(routes, protocol):
            found = ", ".join(f"{r['prefix']} ({r['protocol']})" for r in routes) or "no routes"
            problems.append(f"{dpu.name}: DOCA service hbn: route {prefix} ({protocol}) not selected/installed; "
                            f"FRR has {found}; expected it from the HBN configuration; {HBN_FIX}")
    assert not problems, "\n".join(problems)


def test_firefly_ptp_state(dpu):
    """Firefly is healthy when its ptp4l answers `pmc -u -b 0 'GET PORT_DATA_SET'` and every port's portState is in
    ``doca_services_ptp_states`` (default MASTER, SLAVE, PASSIVE; parsed with plugins/module_utils/parsers/_pmc.py)."""
    services, _absent = _wanted(dpu)
    if not any(s.get("name") == "firefly" for s in services):
        pytest.skip(f"not applicable: {dpu.name} does not ask for DOCA Firefly (doca_services_list)")
    allowed = [str(s).upper() for s in dpu.vars.get("doca_services_ptp_states", PTP_STATES_DEFAULT)]
    res = _exec_in(dpu, "firefly", "pmc -u -b 0 'GET PORT_DATA_SET'", PTP_FIX)
    assert res.rc == 0, (f"{dpu.name}: DOCA service firefly: PTP state: `pmc -u -b 0 'GET PORT_DATA_SET'` in "
                         f"doca-firefly failed "
                         f"(rc={res.rc}): {(res.stderr or res.stdout).strip()[-300:]}; {PTP_FIX}")
    try:
        ports = _pmc.parse_port_data_set(res.stdout)
    except _pmc.ParseError as exc:
        raise AssertionError(f"{dpu.name}: DOCA service firefly: PTP state: pmc output does not parse: {exc}") from None
    assert ports, (f"{dpu.name}: DOCA service firefly: PTP state: no ptp4l port answered GET PORT_DATA_SET, expected "
                   f"one in {allowed}; see `crictl ps -a --name doca-firefly` on the DPU; {PTP_FIX}")
    bad = [f"{p['port_identity']} is {p['port_state']}" for p in ports if p["port_state"] not in allowed]
    assert not bad, (f"{dpu.name}: DOCA service firefly: PTP portState {'; '.join(bad)}, expected one of {allowed} "
                     f"(doca_services_ptp_states); check the grandmaster is reachable and ptp4l's settings; {PTP_FIX}")
