"""Preflight's read answers doca_service's check: dpu_info's section doca_services with the filter
bluefleet.dpu.doca_service_plan (the doca_services role's one module run per DPU).

The filter must agree with the module: on the same machine (the files under tmp_path, crictl's answers built from
one set of pods and containers) the plan is in state exactly when doca_service in check mode changes nothing and
would wait for no pod, and gives the same per-service results (the pod the read picks from every pod and container
is the one the module finds with ``--name`` and ``--pod``). A read that cannot answer (stale, another root or folder,
no pods, a service with its own config_dir, services the module refuses) answers nothing, so the module runs.

crictl's answers: ``ps -o json`` in the layout of shared/corpus/crictl/bf-doca-hbn-crictl-ps-o-json-fixture.txt (its
container, renamed per service), ``pods -o json`` in the CRI ListPodSandboxResponse layout test_doca_service uses (no
capture exists); ids, times and hashes are the test's.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from ansible_collections.bluefleet.dpu.plugins.filter.doca_service_plan import doca_service_plan
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _doca
from ansible_collections.bluefleet.dpu.plugins.modules import doca_service, dpu_info
from fake_tools import FakeRunner, fixture_text

MST = ("mst", "status", "-v")
MST_ANSWER = (0, fixture_text("mst-status", "bf3-arm-mst-status-v"), "")
VERSION = ("crictl", "--version")
TELEMETRY = {"name": "telemetry", "version": "1.16.5-doca2.6.0",
             "config_files": {"dts_config.ini": "prometheus=http://0.0.0.0:9100\n"}}
HBN = {"name": "hbn", "version": "2.4.1-doca2.9.1", "config_files": {"startup.yaml": "- set: {}\n"}}
FIREFLY = {"name": "firefly", "state": "absent"}
SERVICES = [TELEMETRY, HBN, FIREFLY]
CTR_TEMPLATE = json.loads(fixture_text("crictl-ps-json", "bf-doca-hbn-crictl-ps-o-json-fixture"))["containers"][0]


def spec(svc):
    """A service as the module validates it (every option, defaults filled in)."""
    out = dict.fromkeys(_doca.SERVICE_OPTIONS)
    out.update(state="present", config_files={}, env={}, args=[])
    out.update(svc)
    return out


def digest(svc):
    return _doca.config_hash(svc.get("config_files") or {})


def in_place(root, services=None):
    """The files the module writes for ``services`` (default SERVICES), written by hand (and those of removed services
    left out)."""
    services = SERVICES if services is None else services
    for svc in services:
        wanted = _doca.want(spec(svc), _doca.MANIFEST_DIR)
        for path, content in wanted["targets"]:
            if wanted["present"]:
                dest = root / path.lstrip("/")
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(content)


def pod(service, pod_id, config_hash, created, state="SANDBOX_READY"):
    name = _doca.SERVICES[service]["pod"] + "-dpu1"
    return {"id": pod_id, "metadata": {"name": name, "uid": "u" + pod_id, "namespace": "default", "attempt": 0},
            "state": state, "createdAt": str(created), "labels": {"io.kubernetes.pod.name": name},
            "annotations": {_doca.CONFIG_HASH_ANNOTATION: config_hash, "kubernetes.io/config.source": "file"},
            "runtimeHandler": ""}


def container(service, pod_id, ctr_id, created, state="CONTAINER_RUNNING", attempt=0):
    """The corpus fixture's container, as the container of ``service`` in pod ``pod_id``."""
    item = copy.deepcopy(CTR_TEMPLATE)
    name = _doca.SERVICES[service]["container"]
    item.update(id=ctr_id, podSandboxId=pod_id, state=state, createdAt=str(created))
    item["metadata"] = {"name": name, "attempt": attempt}
    item["labels"].update({"io.kubernetes.container.name": name,
                           "io.kubernetes.pod.name": _doca.SERVICES[service]["pod"] + "-dpu1"})
    item["annotations"]["io.kubernetes.container.restartCount"] = str(attempt)
    return item


def running(services=(TELEMETRY, HBN)):
    """Each service's pod ready with its config hash and its container running, an older pod of telemetry that
    is not ready, and an exited earlier attempt of hbn's container."""
    pods, ctrs = [], []
    for index, svc in enumerate(services):
        pid = "%02d" % index * 32
        pods.append(pod(svc["name"], pid, digest(svc), 1700000000000000000 + index))
        ctrs.append(container(svc["name"], pid, "c" + pid[1:], 1700000000000000100 + index))
    pods.append(pod("telemetry", "ee" * 32, "0" * 16, 1600000000000000000, state="SANDBOX_NOTREADY"))
    if any(svc["name"] == "hbn" for svc in services):
        ctrs.append(container("hbn", "01" * 32, "d" * 64, 1600000000000000000, state="CONTAINER_EXITED"))
    return pods, ctrs


def crictl_answers(pods, ctrs):
    """What crictl prints for every command the module and dpu_info run, from one list of pods and containers:
    ``--name`` a regular expression (re.search) on the pod name, ``--pod`` the pod's id; newest first."""
    pods = sorted(pods, key=lambda p: -int(p["createdAt"]))
    ctrs = sorted(ctrs, key=lambda c: -int(c["createdAt"]))
    out = {("crictl", "pods", "-o", "json"): (0, json.dumps({"items": pods}, indent=2), ""),
           ("crictl", "ps", "-a", "-o", "json"): (0, json.dumps({"containers": ctrs}, indent=2), ""),
           VERSION: (0, "crictl version v1.28.0\n", "")}
    for entry in _doca.SERVICES.values():
        pattern = "^%s-" % entry["pod"]
        chosen = [p for p in pods if re.search(pattern, p["metadata"]["name"])]
        out[("crictl", "pods", "--name", pattern, "-o", "json")] = (0, json.dumps({"items": chosen}, indent=2), "")
    for item in pods:
        mine = [c for c in ctrs if c["podSandboxId"] == item["id"]]
        out[("crictl", "ps", "-a", "--pod", item["id"], "-o", "json")] = (
            0, json.dumps({"containers": mine}, indent=2), "")
    return out


def read(root, pods, ctrs, missing=(), **options):
    """dpu_info's read of the DPU (the BlueField-3 Arm side's mst status) with the section doca_services."""
    answers = crictl_answers(pods, ctrs)
    answers[MST] = MST_ANSWER
    runner = FakeRunner(answers, missing=missing)
    return dpu_info.DpuInfo(runner, ["doca_services"], files_root=str(root), **options).gather()


def check(run_module, root, pods, ctrs, services=None):
    """doca_service's check-mode result for ``services`` (default SERVICES) on the same machine."""
    services = SERVICES if services is None else services
    failed, result = run_module(doca_service, {"services": services, "fs_root": str(root)},
                                FakeRunner(crictl_answers(pods, ctrs)), check_mode=True)
    return failed, result


def module_in_state(result):
    """The module changes nothing and would wait for no pod (its wait rule, from its own result keys)."""
    def settled(res):
        pod_ = res["pod"]
        if res["state"] == "absent":
            return pod_ is None
        return (pod_ is not None and pod_["config_hash"] == res["config_hash"] and bool(pod_["containers"])
                and all(c["state"] == "CONTAINER_RUNNING" for c in pod_["containers"]))
    return not result["changed"] and all(settled(res) for res in result["services"])


def agree(run_module, root, pods, ctrs, services=None):
    services = SERVICES if services is None else services
    plan = doca_service_plan(read(root, pods, ctrs), services, "/etc/kubelet.d", str(root))
    failed, module = check(run_module, root, pods, ctrs, services)
    assert not failed, module
    assert plan["answered"] is True and plan["why"] == "", plan
    assert plan["in_state"] is module_in_state(module)
    assert plan["services"] == module["services"]
    assert plan["changed"] == module["changed"] and plan["changed_files"] == module["changed_files"]
    return plan, module


def test_in_state(run_module, tmp_path):
    in_place(tmp_path)
    plan, _module = agree(run_module, tmp_path, *running())
    assert plan["in_state"] and plan["changes"] == []
    assert [res["pod"]["id"] for res in plan["services"][:2]] == ["00" * 32, "01" * 32]
    assert plan["services"][1]["pod"]["containers"][0]["state"] == "CONTAINER_RUNNING"  # not the exited attempt


def test_a_config_file_changed_by_hand(run_module, tmp_path):
    in_place(tmp_path)
    (tmp_path / "var/lib/hbn/etc/nvue.d/startup.yaml").write_text("- set: {changed: by hand}\n")
    plan, _module = agree(run_module, tmp_path, *running())
    assert not plan["in_state"] and plan["changes"] == ["/var/lib/hbn/etc/nvue.d/startup.yaml"]


def test_a_config_file_missing_and_an_extra_file_in_the_folder(run_module, tmp_path):
    in_place(tmp_path)
    (tmp_path / "var/lib/hbn/etc/nvue.d/startup.yaml").unlink()
    (tmp_path / "var/lib/hbn/etc/nvue.d/other.yaml").write_text("x\n")
    plan, _module = agree(run_module, tmp_path, *running())
    assert plan["changes"] == ["/var/lib/hbn/etc/nvue.d/startup.yaml"]


def test_another_version_changes_the_manifest(run_module, tmp_path):
    in_place(tmp_path)
    services = [dict(TELEMETRY, version="1.17.0-doca2.7.0"), HBN, FIREFLY]
    plan, _module = agree(run_module, tmp_path, *running(), services=services)
    assert plan["changes"] == ["/etc/kubelet.d/doca_telemetry_standalone.yaml"]


def test_a_manifest_edited_by_hand(run_module, tmp_path):
    in_place(tmp_path)
    path = tmp_path / "etc/kubelet.d/doca_hbn.yaml"
    path.write_text(path.read_text() + "# edited\n")
    plan, _module = agree(run_module, tmp_path, *running())
    assert plan["changes"] == ["/etc/kubelet.d/doca_hbn.yaml"]


@pytest.mark.parametrize("state", ["CONTAINER_EXITED", "CONTAINER_CREATED"])
def test_a_container_that_does_not_run(run_module, tmp_path, state):
    in_place(tmp_path)
    pods, ctrs = running()
    ctrs[0]["state"] = state
    plan, _module = agree(run_module, tmp_path, pods, ctrs)
    assert not plan["in_state"] and plan["changes"] == ["pod of telemetry"] and not plan["changed"]


def test_a_pod_of_an_older_config(run_module, tmp_path):
    in_place(tmp_path)
    pods, ctrs = running()
    pods[1]["annotations"][_doca.CONFIG_HASH_ANNOTATION] = "0" * 16
    plan, _module = agree(run_module, tmp_path, pods, ctrs)
    assert plan["changes"] == ["pod of hbn"]


def test_no_pod_yet(run_module, tmp_path):
    in_place(tmp_path)
    pods, ctrs = running(services=(TELEMETRY,))
    plan, _module = agree(run_module, tmp_path, pods, ctrs)
    assert plan["changes"] == ["pod of hbn"] and plan["services"][1]["pod"] is None


def test_a_removed_service_whose_manifest_is_there(run_module, tmp_path):
    in_place(tmp_path, SERVICES + [{"name": "firefly", "version": "1.5.0-doca2.9.0"}])
    plan, _module = agree(run_module, tmp_path, *running())
    assert plan["changes"] == ["/etc/kubelet.d/doca_firefly.yaml"]


def test_a_removed_service_whose_files_are_named(run_module, tmp_path):
    in_place(tmp_path, [{"name": "firefly", "version": "1.5.0-doca2.9.0", "config_files": {"ptp4l.conf": "x\n"}}])
    in_place(tmp_path)
    services = [TELEMETRY, HBN, dict(FIREFLY, config_files={"ptp4l.conf": "x\n"})]
    (tmp_path / "etc/kubelet.d/doca_firefly.yaml").unlink()
    plan, _module = agree(run_module, tmp_path, *running(), services=services)
    assert plan["changes"] == ["/etc/firefly/ptp4l.conf"]


def test_a_removed_service_whose_pod_still_runs(run_module, tmp_path):
    in_place(tmp_path)
    firefly = {"name": "firefly", "config_files": {}}
    plan, _module = agree(run_module, tmp_path, *running(services=(TELEMETRY, HBN, firefly)))
    assert plan["changes"] == ["pod of firefly"] and plan["services"][2]["pod"]["name"] == "doca-firefly-dpu1"


def test_nothing_deployed_yet(run_module, tmp_path):
    plan, _module = agree(run_module, tmp_path, [], [])
    assert plan["changes"][:3] == ["/opt/mellanox/doca/services/telemetry/config/dts_config.ini",
                                   "/etc/kubelet.d/doca_telemetry_standalone.yaml",
                                   "/var/lib/hbn/etc/nvue.d/startup.yaml"]


def test_a_file_with_crlf_is_not_called_in_state(run_module, tmp_path):
    """The module reads text with universal newlines: a CR LF file equals its LF text for it, not for the sha256.
    The plan then says "changes" and the module runs (and changes nothing) - never the other way round."""
    in_place(tmp_path)
    path = tmp_path / "opt/mellanox/doca/services/telemetry/config/dts_config.ini"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    pods, ctrs = running()
    plan = doca_service_plan(read(tmp_path, pods, ctrs), SERVICES, "/etc/kubelet.d", str(tmp_path))
    _failed, module = check(run_module, tmp_path, pods, ctrs)
    assert module_in_state(module) and not plan["in_state"]


# ---- the read cannot answer: the module runs ---------------------------------------------------------------------

def test_crictl_missing_leaves_the_pods_unavailable_and_the_plan_unanswered(tmp_path):
    in_place(tmp_path)
    got = read(tmp_path, *running(), missing=("crictl",))
    section = got["doca_services"]
    assert section["pods"] == {"available": False, "reason": "crictl not found on PATH"}
    assert section["services"]["telemetry"]["manifest"]["file"] and "crictl" in got["tools_missing"]
    plan = doca_service_plan(got, SERVICES, "/etc/kubelet.d", str(tmp_path))
    assert plan == {"answered": False, "in_state": False,
                    "why": "the read has no pods: crictl not found on PATH"}


def test_crictl_failing_leaves_the_pods_unavailable(tmp_path):
    answers = crictl_answers(*running())
    answers[MST] = MST_ANSWER
    answers[("crictl", "pods", "-o", "json")] = (1, "", 'FATA[0000] connect: connect endpoint '
                                                 '"unix:///run/containerd/containerd.sock": no such file\n')
    got = dpu_info.DpuInfo(FakeRunner(answers), ["doca_services"], files_root=str(tmp_path)).gather()
    pods = got["doca_services"]["pods"]
    assert pods["available"] is False and pods["reason"].startswith("list the pods with crictl failed")
    assert not doca_service_plan(got, SERVICES, "/etc/kubelet.d", str(tmp_path))["answered"]


@pytest.mark.parametrize("changed_at, reset, why", [
    (1e12, False, "a bluefleet module changed the node after the read"),
    (None, True, "the card or its driver was reset in this run after the read"),
])
def test_a_stale_read_does_not_answer(tmp_path, changed_at, reset, why):
    in_place(tmp_path)
    plan = doca_service_plan(read(tmp_path, *running()), SERVICES, "/etc/kubelet.d", str(tmp_path),
                             changed_at=changed_at, reset=reset)
    assert not plan["answered"] and not plan["in_state"] and plan["why"].startswith(why)


def test_no_read_or_no_section_does_not_answer(tmp_path):
    assert not doca_service_plan({}, SERVICES, "/etc/kubelet.d", "/")["answered"]
    got = read(tmp_path, *running())
    del got["doca_services"]
    assert doca_service_plan(got, SERVICES, "/etc/kubelet.d", "/")["why"] == "the read has no doca_services section"


def test_another_root_or_folder_does_not_answer(tmp_path):
    in_place(tmp_path)
    got = read(tmp_path, *running())
    assert "read under" in doca_service_plan(got, SERVICES, "/etc/kubelet.d", "/")["why"]
    assert doca_service_plan(got, SERVICES, "/etc/kubelet.d", str(tmp_path) + "/")["in_state"], "the same root"
    why = doca_service_plan(got, SERVICES, "/etc/static-pods", str(tmp_path))["why"]
    assert why == "the manifests were read in /etc/kubelet.d, not /etc/static-pods"
    other = read(tmp_path, *running(), doca_manifest_dir="/etc/static-pods")
    assert other["doca_services"]["services"]["hbn"]["manifest_path"] == "/etc/static-pods/doca_hbn.yaml"
    assert doca_service_plan(other, SERVICES, "/etc/static-pods", str(tmp_path))["changes"] == [
        "/etc/static-pods/doca_telemetry_standalone.yaml", "/etc/static-pods/doca_hbn.yaml"]


def test_a_service_with_its_own_config_dir_does_not_answer(tmp_path):
    in_place(tmp_path)
    services = [dict(TELEMETRY, config_dir="/srv/telemetry"), HBN]
    why = doca_service_plan(read(tmp_path, *running()), services, "/etc/kubelet.d", str(tmp_path))["why"]
    assert why == "service telemetry sets config_dir; the read has the catalogue's folders only"


@pytest.mark.parametrize("services, message", [
    ([dict(TELEMETRY, version="latest"), HBN], "configure DOCA service telemetry failed: image of telemetry "),
    ([TELEMETRY, TELEMETRY], "telemetry listed more than once in services"),
    ([{"name": "dns", "version": "1.0.0"}], "unknown DOCA service 'dns'"),
    ([{"name": "telemetry"}], "state is present but any of the following are missing: version, image, manifest"),
    ([], "services is empty"),
])
def test_services_the_module_refuses_do_not_answer(run_module, tmp_path, services, message):
    """The plan leaves them to the module, which fails with its own message."""
    in_place(tmp_path)
    pods, ctrs = running()
    plan = doca_service_plan(read(tmp_path, pods, ctrs), services, "/etc/kubelet.d", str(tmp_path))
    assert not plan["answered"] and plan["why"].startswith("doca_service refuses the options: ")
    assert message in plan["why"], plan["why"]
    failed, module = check(run_module, tmp_path, pods, ctrs, services)
    assert failed and message in module["msg"], module["msg"]


# ---- the section -------------------------------------------------------------------------------------------------

def test_the_section_is_asked_for_by_name_and_runs_crictl_twice(tmp_path):
    in_place(tmp_path)
    assert "doca_services" not in dpu_info.DEFAULT_SECTIONS and "doca_services" in dpu_info.SECTIONS
    got = read(tmp_path, *running())
    assert [argv for argv in got["cmd"] if argv[0] == "crictl"] == [["crictl", "pods", "-o", "json"],
                                                                    ["crictl", "ps", "-a", "-o", "json"]]
    section = got["doca_services"]
    assert section["available"] and section["root"] == str(tmp_path) and section["manifest_dir"] == "/etc/kubelet.d"
    assert set(section["services"]) == set(_doca.SERVICES)
    hbn = section["services"]["hbn"]
    assert hbn["config_dir"] == "/var/lib/hbn/etc/nvue.d" and set(hbn["config_files"]) == {"startup.yaml"}
    assert hbn["config_files"]["startup.yaml"]["file"] and hbn["manifest"]["mode"] == "0644"
    assert section["services"]["firefly"] == {"manifest_path": "/etc/kubelet.d/doca_firefly.yaml", "manifest": None,
                                              "config_dir": "/etc/firefly", "config_files": {}}
    pods = section["pods"]["services"]
    assert pods["firefly"] is None and pods["snap"] is None
    assert pods["telemetry"] == {"id": "00" * 32, "name": "doca-telemetry-service-dpu1", "state": "SANDBOX_READY",
                                 "config_hash": digest(TELEMETRY),
                                 "containers": [{"name": "doca-telemetry-service", "id": "c" + "0" * 63,
                                                 "state": "CONTAINER_RUNNING", "attempt": 0, "restart_count": 0,
                                                 "image_id": CTR_TEMPLATE["image"]["image"]}]}


def test_no_ready_pod_runs_no_crictl_ps(tmp_path):
    got = read(tmp_path, [pod("hbn", "ab" * 32, "0" * 16, 1, state="SANDBOX_NOTREADY")], [])
    assert [argv for argv in got["cmd"] if argv[0] == "crictl"] == [["crictl", "pods", "-o", "json"]]
    assert got["doca_services"]["pods"] == {"available": True, "services": dict.fromkeys(_doca.SERVICES)}


def test_a_folder_that_cannot_be_listed_is_said_and_does_not_answer(tmp_path):
    in_place(tmp_path)
    folder = tmp_path / "var/lib/hbn/etc/nvue.d"
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.write_text("a file where the folder should be\n")
    got = read(tmp_path, *running())
    assert got["doca_services"]["services"]["hbn"]["config_error"].startswith("list %s failed" % folder)
    plan = doca_service_plan(got, SERVICES, "/etc/kubelet.d", str(tmp_path))
    assert not plan["answered"] and plan["why"].startswith("the read of /var/lib/hbn/etc/nvue.d failed")


def test_dpu_info_imports_the_section_code_only_when_it_reads_it(tmp_path):
    from test_module_imports import BASE, _imported

    code = ("from fake_tools import FakeRunner, fixture_text\n"
            "runner = FakeRunner({('mst', 'status', '-v'): (0, fixture_text('mst-status', 'bf3-arm-mst-status-v'), "
            "'')}, missing=('crictl',))\n"
            "assert module.DpuInfo(runner, %r, files_root=%r).gather()['doca_services']['available']\n")
    got = _imported("dpu_info", code % (["doca_services"], str(tmp_path)))
    assert sorted(set(got) - set(BASE["dpu_info"])) == ["domain._doca", "parsers._crictl", "plumbing._files"]
