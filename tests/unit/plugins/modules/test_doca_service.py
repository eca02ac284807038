"""doca_service: the exact ordered argv against crictl answers, and the files it writes.

crictl answers are built in the layout of shared/corpus/crictl/bf-doca-hbn-crictl-ps-o-json-fixture.txt
(``ps -o json``) and the CRI ListPodSandboxResponse (``pods -o json``); ids and hashes are the test's.
"""

from __future__ import annotations

import json

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _doca
from ansible_collections.bluefleet.dpu.plugins.modules import doca_service
from test_fw_reset import FakeRunner, Script

IMAGE = "nvcr.io/nvidia/doca/doca_telemetry:1.16.5-doca2.6.0"
CONFIG = {"dts_config.ini": "prometheus=http://0.0.0.0:9100\n"}
DIGEST = _doca.config_hash(CONFIG)
MANIFEST = "/etc/kubelet.d/doca_telemetry_standalone.yaml"
CONFIG_PATH = "/opt/mellanox/doca/services/telemetry/config/dts_config.ini"
PODS = ["crictl", "pods", "--name", "^doca-telemetry-service-", "-o", "json"]
VERSION = (["crictl", "--version"], 0, "crictl version v1.28.0\n", "")


def pods_json(pod_id=None, digest=DIGEST):
    items = []
    if pod_id:
        items.append({"id": pod_id, "metadata": {"name": "doca-telemetry-service-dpu1", "uid": "u", "namespace":
                                                 "default", "attempt": 0},
                      "state": "SANDBOX_READY", "createdAt": "1700000000000000000", "labels": {},
                      "annotations": {"bluefleet.io/config-hash": digest}, "runtimeHandler": ""})
    return json.dumps({"items": items}, indent=2)


def ps_json(pod_id, state="CONTAINER_RUNNING", restarts=0):
    return json.dumps({"containers": [{
        "id": "c" + pod_id, "podSandboxId": pod_id,
        "metadata": {"name": "doca-telemetry-service", "attempt": restarts},
        "image": {"image": "sha256:" + "1" * 64, "annotations": {}}, "imageRef": "sha256:" + "1" * 64,
        "state": state, "createdAt": "1700000000000000001",
        "labels": {"io.kubernetes.pod.name": "doca-telemetry-service-dpu1"},
        "annotations": {"io.kubernetes.container.restartCount": str(restarts)}}]}, indent=2)


def ps(pod_id):
    return ["crictl", "ps", "-a", "--pod", pod_id, "-o", "json"]


def run_module(monkeypatch, capsys, args, steps, check_mode=False):
    script = Script(steps)
    monkeypatch.setattr(doca_service, "ToolRunner", lambda timeout, environ=None: FakeRunner(script, environ, timeout))
    monkeypatch.setattr(doca_service, "POLL_SECONDS", 0)
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    args = dict(args, _ansible_diff=True)  # the tests read the diff, as --diff shows it
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            doca_service.main()
    result = json.loads(capsys.readouterr().out)
    assert not script.steps, "commands not run: %r" % (script.steps,)
    return result


@pytest.fixture
def root(tmp_path):
    return tmp_path / "root"


def args(root, **extra):
    base = {"name": "telemetry", "version": "1.16.5-doca2.6.0", "config_files": CONFIG, "fs_root": str(root)}
    base.update(extra)
    return base


def on_disk(root, path):
    return (root / path.lstrip("/")).read_text()


def test_deploy_writes_config_then_manifest_and_waits_for_the_pod(monkeypatch, capsys, root):
    result = run_module(monkeypatch, capsys, args(root), [
        (PODS, 0, pods_json(), ""),
        (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""),
        VERSION,
    ])
    assert not result.get("failed"), result
    assert result["changed"] and not result["restarted"] and result["previous_pod_id"] is None
    assert result["changed_files"] == [CONFIG_PATH, MANIFEST]
    assert on_disk(root, CONFIG_PATH) == CONFIG["dts_config.ini"]
    manifest = yaml.safe_load(on_disk(root, MANIFEST))
    assert manifest["kind"] == "Pod" and manifest["metadata"]["name"] == "doca-telemetry-service"
    assert manifest["metadata"]["annotations"] == {"bluefleet.io/config-hash": DIGEST}
    assert manifest["spec"]["containers"][0]["image"] == IMAGE
    assert result["pod"]["id"] == "p1" and result["pod"]["containers"][0]["state"] == "CONTAINER_RUNNING"
    assert result["images"] == [IMAGE] and result["tool_version"] == "crictl version v1.28.0"
    assert result["cmd"] == [PODS, PODS, ps("p1"), ["crictl", "--version"]]


def deployed(monkeypatch, capsys, root):
    run_module(monkeypatch, capsys, args(root), [
        (PODS, 0, pods_json(), ""), (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""), VERSION])
    return {p: (root / p.lstrip("/")).stat().st_mtime_ns for p in (CONFIG_PATH, MANIFEST)}


def test_second_run_changes_and_restarts_nothing(monkeypatch, capsys, root):
    stamps = deployed(monkeypatch, capsys, root)
    result = run_module(monkeypatch, capsys, args(root), [
        (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""), VERSION])
    assert not result["changed"] and not result["restarted"] and result["changed_files"] == []
    assert {p: (root / p.lstrip("/")).stat().st_mtime_ns for p in stamps} == stamps


def test_check_mode_writes_nothing(monkeypatch, capsys, root):
    result = run_module(monkeypatch, capsys, args(root), [(PODS, 0, pods_json(), ""), VERSION], check_mode=True)
    assert result["changed"] and result["changed_files"] == [CONFIG_PATH, MANIFEST]
    assert not root.exists()
    assert result["diff"]["before"] == {} and set(result["diff"]["after"]) == {CONFIG_PATH, MANIFEST}


def test_config_change_restarts_the_pod(monkeypatch, capsys, root):
    deployed(monkeypatch, capsys, root)
    new = {"dts_config.ini": "prometheus=http://0.0.0.0:9200\n"}
    new_digest = _doca.config_hash(new)
    result = run_module(monkeypatch, capsys, args(root, config_files=new), [
        (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""),
        (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""),  # the kubelet has not seen it yet
        (PODS, 0, pods_json("p2", new_digest), ""), (ps("p2"), 0, ps_json("p2"), ""),
        VERSION,
    ])
    assert result["changed"] and result["restarted"]
    assert result["previous_pod_id"] == "p1" and result["pod"]["id"] == "p2"
    assert yaml.safe_load(on_disk(root, MANIFEST))["metadata"]["annotations"]["bluefleet.io/config-hash"] == new_digest


def test_remove(monkeypatch, capsys, root):
    deployed(monkeypatch, capsys, root)
    result = run_module(monkeypatch, capsys, {"name": "telemetry", "state": "absent", "fs_root": str(root)}, [
        (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""),
        (PODS, 0, pods_json(), ""), VERSION])
    assert result["changed"] and result["changed_files"] == [MANIFEST] and result["pod"] is None
    assert not (root / MANIFEST.lstrip("/")).exists()
    assert (root / CONFIG_PATH.lstrip("/")).exists()  # not named in config_files: kept


@pytest.mark.parametrize("extra, message", [
    ({"name": "dns"}, "unknown DOCA service 'dns'; known services: firefly, hbn, snap, telemetry"),
    ({"version": "latest"}, "tag 'latest' is not pinned"),
    ({"version": None, "image": "nvcr.io/nvidia/doca/doca_telemetry"}, "has no tag; pin it"),
    ({"version": None, "manifest": "kind: Pod\n  spec: [\n"}, "manifest does not parse as YAML"),
    ({"version": None, "manifest": "kind: DaemonSet\nmetadata: {name: x}\n"}, "is not a Pod"),
    ({"config_files": {"../x": "1"}}, "must be a plain file name"),
])
def test_bad_input_fails_before_anything_runs_or_is_written(monkeypatch, capsys, root, extra, message):
    given = args(root, **extra)
    given = {k: v for k, v in given.items() if v is not None}
    result = run_module(monkeypatch, capsys, given, [])
    assert result["failed"] and message in result["msg"], result["msg"]
    assert result["msg"].startswith("configure DOCA service")
    assert result["cmd"] == [] and not root.exists()


def test_crictl_failure_is_reported(monkeypatch, capsys, root):
    result = run_module(monkeypatch, capsys, args(root), [(PODS, 1, "", "FATA[0000] connect: no such file\n")])
    assert result["failed"] and result["msg"].startswith("list the pods of telemetry with crictl failed")
    assert result["stderr"].startswith("FATA")


def test_wait_gives_up_with_a_clear_message(monkeypatch, capsys, root):
    result = run_module(monkeypatch, capsys, args(root, wait_timeout=0), [
        (PODS, 0, pods_json(), ""), (PODS, 0, pods_json(), "")])
    assert result["failed"]
    assert "wait for the kubelet to run telemetry failed: not done after 0 s" in result["msg"]
    assert "crictl ps -a" in result["msg"]


# services: several services in one run - every one checked before any is written, one write phase, one wait.

PTP = {"ptp4l.conf": "[global]\ndomainNumber 0\n"}
PTP_DIGEST = _doca.config_hash(PTP)
FIREFLY_MANIFEST = "/etc/kubelet.d/doca_firefly.yaml"
PTP_PATH = "/etc/firefly/ptp4l.conf"
FIREFLY_PODS = ["crictl", "pods", "--name", "^doca-firefly-", "-o", "json"]
HBN_PODS = ["crictl", "pods", "--name", "^doca-hbn-service-", "-o", "json"]


def svc_pods_json(pod, pod_id=None, digest=DIGEST):
    """pods_json for any service's pod name."""
    return pods_json(pod_id, digest).replace("doca-telemetry-service-dpu1", pod + "-dpu1")


def two(root, **extra):
    base = {"services": [{"name": "telemetry", "version": "1.16.5-doca2.6.0", "config_files": CONFIG},
                         {"name": "firefly", "version": "1.5.0-doca2.9.0", "config_files": PTP}],
            "fs_root": str(root)}
    base.update(extra)
    return base


def deployed_two(monkeypatch, capsys, root):
    return run_module(monkeypatch, capsys, two(root), [
        (PODS, 0, pods_json(), ""), (FIREFLY_PODS, 0, svc_pods_json("doca-firefly"), ""),
        (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""),
        (FIREFLY_PODS, 0, svc_pods_json("doca-firefly", "f1", PTP_DIGEST), ""), (ps("f1"), 0, ps_json("f1"), ""),
        VERSION])


def test_services_read_all_write_all_then_wait_for_all(monkeypatch, capsys, root):
    result = deployed_two(monkeypatch, capsys, root)
    assert not result.get("failed"), result
    assert result["changed"] is True
    assert result["cmd"] == [PODS, FIREFLY_PODS, PODS, ps("p1"), FIREFLY_PODS, ps("f1"), ["crictl", "--version"]]
    assert result["changed_files"] == [CONFIG_PATH, MANIFEST, PTP_PATH, FIREFLY_MANIFEST]
    assert [(s["service"], s["state"], s["changed"], s["changed_files"], s["pod"]["id"], s["restarted"])
            for s in result["services"]] == [
        ("telemetry", "present", True, [CONFIG_PATH, MANIFEST], "p1", False),
        ("firefly", "present", True, [PTP_PATH, FIREFLY_MANIFEST], "f1", False)]
    assert result["services"][1]["images"] == ["nvcr.io/nvidia/doca/doca_firefly:1.5.0-doca2.9.0"]
    assert result["services"][1]["config_hash"] == PTP_DIGEST
    assert on_disk(root, PTP_PATH) == PTP["ptp4l.conf"] and on_disk(root, CONFIG_PATH) == CONFIG["dts_config.ini"]
    assert yaml.safe_load(on_disk(root, FIREFLY_MANIFEST))["metadata"]["annotations"] == {
        "bluefleet.io/config-hash": PTP_DIGEST}
    assert result["diff"]["before"] == {}
    assert set(result["diff"]["after"]) == {CONFIG_PATH, MANIFEST, PTP_PATH, FIREFLY_MANIFEST}
    assert "service" not in result and "pod" not in result, "the single-service keys are per service here"


def test_services_second_run_writes_and_restarts_nothing(monkeypatch, capsys, root):
    deployed_two(monkeypatch, capsys, root)
    paths = (CONFIG_PATH, MANIFEST, PTP_PATH, FIREFLY_MANIFEST)
    stamps = {p: (root / p.lstrip("/")).stat().st_mtime_ns for p in paths}
    result = run_module(monkeypatch, capsys, two(root), [
        (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""),
        (FIREFLY_PODS, 0, svc_pods_json("doca-firefly", "f1", PTP_DIGEST), ""), (ps("f1"), 0, ps_json("f1"), ""),
        VERSION])
    assert result["changed"] is False and result["changed_files"] == []
    assert [(s["changed"], s["restarted"]) for s in result["services"]] == [(False, False), (False, False)]
    assert {p: (root / p.lstrip("/")).stat().st_mtime_ns for p in paths} == stamps


def test_services_one_change_restarts_only_that_service(monkeypatch, capsys, root):
    deployed_two(monkeypatch, capsys, root)
    new = {"ptp4l.conf": "[global]\ndomainNumber 1\n"}
    new_digest = _doca.config_hash(new)
    given = two(root)
    given["services"][1]["config_files"] = new
    result = run_module(monkeypatch, capsys, given, [
        (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""),
        (FIREFLY_PODS, 0, svc_pods_json("doca-firefly", "f1", PTP_DIGEST), ""), (ps("f1"), 0, ps_json("f1"), ""),
        (FIREFLY_PODS, 0, svc_pods_json("doca-firefly", "f2", new_digest), ""), (ps("f2"), 0, ps_json("f2"), ""),
        VERSION])
    assert result["changed_files"] == [PTP_PATH, FIREFLY_MANIFEST]
    assert [(s["service"], s["changed"], s["restarted"]) for s in result["services"]] == [
        ("telemetry", False, False), ("firefly", True, True)]
    assert result["services"][1]["previous_pod_id"] == "f1" and result["services"][1]["pod"]["id"] == "f2"


def test_services_check_mode_reports_each_and_writes_nothing(monkeypatch, capsys, root):
    result = run_module(monkeypatch, capsys, two(root), [
        (PODS, 0, pods_json(), ""), (FIREFLY_PODS, 0, svc_pods_json("doca-firefly"), ""), VERSION], check_mode=True)
    assert result["changed"] is True and result["check_mode_prediction"] is False
    assert [(s["service"], s["changed"]) for s in result["services"]] == [("telemetry", True), ("firefly", True)]
    assert result["changed_files"] == [CONFIG_PATH, MANIFEST, PTP_PATH, FIREFLY_MANIFEST]
    assert not root.exists()


def test_services_deploy_and_remove_in_one_run(monkeypatch, capsys, root):
    deployed(monkeypatch, capsys, root)
    hbn = root / "etc/kubelet.d/doca_hbn.yaml"
    hbn.write_text("kind: Pod\n")
    given = {"services": [{"name": "telemetry", "version": "1.16.5-doca2.6.0", "config_files": CONFIG},
                          {"name": "hbn", "state": "absent"}], "fs_root": str(root)}
    result = run_module(monkeypatch, capsys, given, [
        (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""),
        (HBN_PODS, 0, svc_pods_json("doca-hbn-service", "h1"), ""), (ps("h1"), 0, ps_json("h1"), ""),
        (HBN_PODS, 0, svc_pods_json("doca-hbn-service"), ""),
        VERSION])
    assert result["changed"] is True and result["changed_files"] == ["/etc/kubelet.d/doca_hbn.yaml"]
    assert [(s["service"], s["state"], s["changed"], s["restarted"], s["pod"]) for s in result["services"]][1] == (
        "hbn", "absent", True, True, None)
    assert result["services"][0]["changed"] is False
    assert not hbn.exists() and (root / MANIFEST.lstrip("/")).exists()


@pytest.mark.parametrize("services, messages", [
    ([{"name": "telemetry", "version": "1.16.5-doca2.6.0"}, {"name": "firefly", "version": "latest"}],
     ["configure DOCA service firefly failed: ", "tag 'latest' is not pinned", "; nothing was written"]),
    ([{"name": "dns", "version": "1.0"}, {"name": "hbn", "version": "2.4.1-doca2.9.1", "config_files": {"../x": "1"}}],
     ["configure DOCA service dns failed: unknown DOCA service 'dns'", "; configure DOCA service hbn failed: ",
      "must be a plain file name"]),
    ([{"name": "hbn", "version": "2.4.1-doca2.9.1"}, {"name": "hbn", "state": "absent"}],
     ["hbn listed more than once in services"]),
    ([{"name": "telemetry", "version": "1.16.5-doca2.6.0", "config_files": {"a.conf": "1"}, "config_dir": "/etc/x"},
      {"name": "firefly", "version": "1.5.0-doca2.9.0", "config_files": {"a.conf": "2"}, "config_dir": "/etc/x"}],
     ["/etc/x/a.conf is a file of telemetry and firefly; give each service its own config_dir"]),
])
def test_services_bad_input_fails_before_anything_runs_or_is_written(monkeypatch, capsys, root, services, messages):
    result = run_module(monkeypatch, capsys, {"services": services, "fs_root": str(root)}, [])
    assert result["failed"]
    for message in messages:
        assert message in result["msg"], result["msg"]
    assert result["cmd"] == [] and not root.exists()


@pytest.mark.parametrize("given, message", [
    ({"services": [{"name": "hbn", "state": "absent"}], "name": "hbn"}, "mutually exclusive: name|services"),
    ({"services": [{"name": "hbn", "state": "absent"}], "version": "1.0"}, "mutually exclusive"),
    ({"services": [{"name": "hbn", "state": "absent"}], "config_files": {"a": "1"}}, "mutually exclusive"),
    ({"services": [{"name": "hbn"}]}, "state is present but any of the following are missing: version, image, "
                                      "manifest found in services"),
    ({}, "one of the following is required: name, services"),
    ({"services": []}, "services is empty"),
])
def test_services_option_relations(monkeypatch, capsys, root, given, message):
    result = run_module(monkeypatch, capsys, dict(given, fs_root=str(root)), [])
    assert result["failed"] and message in result["msg"], result["msg"]
    assert not root.exists()


def test_services_wait_gives_up_naming_what_is_not_done(monkeypatch, capsys, root):
    result = run_module(monkeypatch, capsys, two(root, wait_timeout=0), [
        (PODS, 0, pods_json(), ""), (FIREFLY_PODS, 0, svc_pods_json("doca-firefly"), ""),
        (PODS, 0, pods_json("p1"), ""), (ps("p1"), 0, ps_json("p1"), ""),
        (FIREFLY_PODS, 0, svc_pods_json("doca-firefly"), "")])
    assert result["failed"]
    assert result["msg"].startswith("wait for the kubelet failed: not done after 0 s: run firefly (pod: None) "
                                    "(done: telemetry)"), result["msg"]
    assert "crictl ps -a" in result["msg"]
