"""The twin's standalone kubelet and crictl: static pods from etc/kubelet.d, restarts, crashes, layouts.

Layout references: shared/corpus/crictl/bf-doca-hbn-crictl-ps-o-json-fixture.txt (ps -o json) and cri-tools
cmd/crictl/container.go / sandbox.go (tables). The JSON is read here with the standard json module and
compared with the corpus sample's structure: the twin does not use the project's parsers, nor these tests.
"""

from __future__ import annotations

import json
import re

import pytest

from dpusim import kubelet
from dpusim.tools import crictl

MANIFEST = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations:
    bluefleet.io/config-hash: "{digest}"
spec:
  hostNetwork: true
  containers:
    - name: {ctr}
      image: nvcr.io/nvidia/doca/{ctr}:1.0.0-doca2.9.0
"""


def _write(t, fname, name="doca-hbn-service", ctr="doca-hbn", digest="1"):
    folder = t.root / "etc" / "kubelet.d"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / fname).write_text(MANIFEST.format(name=name, ctr=ctr, digest=digest))


def _ps(t, *args):
    rc, out, err = t.run("crictl", "ps", *args, "-o", "json")
    assert rc == 0, err
    return json.loads(out)["containers"]


def _pods(t):
    rc, out, err = t.run("crictl", "pods", "-o", "json")
    assert rc == 0, err
    return {p["metadata"]["name"]: p for p in json.loads(out)["items"]}


def _keys(value):
    """The key structure (names and order) of a JSON value."""
    if isinstance(value, dict):
        return [(k, _keys(v)) for k, v in value.items()]
    return type(value).__name__


def test_no_folder_no_pods_and_empty_layout(twin):
    t = twin(role="dpu", name="dpu1")
    rc, out, _err = t.run("crictl", "ps", "-o", "json")
    assert rc == 0 and out == '{\n  "containers": [\n  ]\n}\n'
    rc, out, _err = t.run("crictl", "ps")
    assert out.split() == ["CONTAINER", "IMAGE", "CREATED", "STATE", "NAME", "ATTEMPT", "POD", "ID", "POD",
                           "NAMESPACE"]


def test_ps_json_has_the_corpus_layout(twin, corpus_sample):
    t = twin(role="dpu", name="dpu1")
    _write(t, "doca_hbn.yaml")
    rc, out, _err = t.run("crictl", "ps", "-o", "json")
    body, _conf = corpus_sample("crictl/bf-doca-hbn-crictl-ps-o-json-fixture.txt")
    real = json.loads(body)["containers"][0]
    mine = json.loads(out)["containers"][0]
    assert _keys(mine) == _keys(real)
    # the empty image.annotations object is printed on two lines, as in the capture
    assert re.search(r'"annotations": \{\n {8}\}', out)
    assert mine["metadata"] == {"name": "doca-hbn", "attempt": 0}
    assert mine["labels"]["io.kubernetes.pod.name"] == "doca-hbn-service-dpu1"
    assert mine["image"]["image"].startswith("sha256:") and len(mine["image"]["image"]) == 71


def test_changed_manifest_recreates_only_that_pod(twin):
    t = twin(role="dpu", name="dpu1")
    _write(t, "doca_hbn.yaml")
    _write(t, "doca_telemetry_standalone.yaml", name="doca-telemetry-service", ctr="doca-telemetry-service")
    before = _pods(t)
    assert _pods(t) == before  # a read changes nothing
    _write(t, "doca_hbn.yaml", digest="2")
    after = _pods(t)
    assert after["doca-telemetry-service-dpu1"] == before["doca-telemetry-service-dpu1"]
    assert after["doca-hbn-service-dpu1"]["id"] != before["doca-hbn-service-dpu1"]["id"]
    assert after["doca-hbn-service-dpu1"]["annotations"]["bluefleet.io/config-hash"] == "2"
    (t.root / "etc" / "kubelet.d" / "doca_hbn.yaml").unlink()
    assert list(_pods(t)) == ["doca-telemetry-service-dpu1"]
    assert [c["metadata"]["name"] for c in _ps(t, "-a")] == ["doca-telemetry-service"]


def test_manifest_that_is_not_a_pod_starts_nothing(twin):
    t = twin(role="dpu", name="dpu1")
    folder = t.root / "etc" / "kubelet.d"
    folder.mkdir(parents=True)
    (folder / "broken.yaml").write_text("kind: Pod\n  spec: [\n")
    (folder / "deploy.yaml").write_text("kind: Deployment\nmetadata: {name: x}\n")
    assert _pods(t) == {}
    errors = t.node().runtime["kubelet"]["errors"]
    assert set(errors) == {"broken.yaml", "deploy.yaml"}
    assert "not a Pod manifest" in errors["deploy.yaml"]


def test_crash_restarts_the_container_and_counts_it(twin):
    t = twin(role="dpu", name="dpu1")
    _write(t, "doca_hbn.yaml")
    (first,) = _ps(t)
    with t.edit() as node:
        kubelet.crash(node, "doca-hbn")
    everything = _ps(t, "-a")
    running = [c for c in everything if c["state"] == "CONTAINER_RUNNING"]
    exited = [c for c in everything if c["state"] == "CONTAINER_EXITED"]
    assert [c["id"] for c in exited] == [first["id"]]
    assert running[0]["metadata"]["attempt"] == 1
    assert running[0]["annotations"]["io.kubernetes.container.restartCount"] == "1"
    assert running[0]["podSandboxId"] == first["podSandboxId"]


def test_crash_loop_keeps_it_down(twin):
    t = twin(role="dpu", name="dpu1")
    _write(t, "doca_hbn.yaml")
    rc, _out, err = t.cli("kubelet", "crash", "doca-hbn", "--stay-down")
    assert rc == 0, err
    assert _ps(t) == []
    assert [c["state"] for c in _ps(t, "-a")] == ["CONTAINER_EXITED"]
    rc, _out, err = t.cli("kubelet", "crash", "nothing-like-it")
    assert rc == 1 and "no container or pod named 'nothing-like-it'" in err


def test_reboot_recreates_every_pod(twin):
    t = twin(role="dpu", name="dpu1")
    _write(t, "doca_hbn.yaml")
    before = _pods(t)["doca-hbn-service-dpu1"]["id"]
    assert t.cli("reboot")[0] == 0
    assert _pods(t)["doca-hbn-service-dpu1"]["id"] != before


def test_tables_follow_tabwriter(twin):
    t = twin(role="dpu", name="dpu1")
    _write(t, "doca_hbn.yaml")
    _rc, out, _err = t.run("crictl", "pods")
    head, row = out.splitlines()
    cells = re.split(r" {3,}", row)
    # POD ID padded to the minimum width 20; CREATED to the longer of 20 and its cell + 3
    created = max(20, len(cells[1]) + 3)
    assert head.startswith("POD ID" + " " * 14 + "CREATED".ljust(created) + "STATE" + " " * 15 + "NAME")
    assert head.endswith("ATTEMPT" + " " * 13 + "RUNTIME")
    assert len(cells[0]) == 13 and cells[2:] == ["Ready", "doca-hbn-service-dpu1", "default", "0", "(default)"]
    _rc, out, _err = t.run("crictl", "ps")
    cells = re.split(r" {3,}", out.splitlines()[1])
    assert cells[3:6] == ["Running", "doca-hbn", "0"] and len(cells[1]) == 13


def test_filters_and_errors(twin):
    t = twin(role="dpu", name="dpu1")
    _write(t, "doca_hbn.yaml")
    _write(t, "doca_snap.yaml", name="doca-snap", ctr="doca-snap")
    assert [c["metadata"]["name"] for c in _ps(t, "--name", "^doca-snap$")] == ["doca-snap"]
    rc, _out, err = t.run("crictl", "ps", "-o", "xml")
    assert rc == 1 and 'unsupported output format "xml"' in err
    host = twin(role="host", name="host1")
    rc, _out, err = host.run("crictl", "ps")
    assert rc == 1 and "containerd.sock" in err


@pytest.mark.parametrize("seconds, text", [
    (0.5, "Less than a second"), (1, "1 second"), (59, "59 seconds"), (60, "About a minute"),
    (3599, "59 minutes"), (3600, "About an hour"), (7200, "2 hours"), (3 * 86400, "3 days"),
])
def test_human_duration(seconds, text):
    assert crictl.human_duration(seconds) == text


def test_exec_runs_the_program_of_the_running_container(twin):
    """`crictl exec [-i] [-t] CONTAINER-ID COMMAND [ARG...]` (cri-tools exec.go): vtysh answers inside doca-hbn
    (the same routes as the twin's FRR), by full id or a unique prefix; the command keeps its own flags."""
    t = twin(role="dpu", name="dpu1")
    _write(t, "doca_hbn.yaml")
    (ctr,) = _ps(t)
    rc, out, err = t.run("crictl", "exec", ctr["id"][:13], "vtysh", "-c", "show ip route json")
    assert rc == 0 and out.startswith("{") and out.endswith("}\n"), err
    rc, out2, _err = t.run("crictl", "exec", "-i", "-t", ctr["id"], "vtysh", "-c", "show ip route json")
    assert rc == 0 and out2 == out


def test_exec_errors_as_crictl_and_containerd_print_them(twin):
    t = twin(role="dpu", name="dpu1")
    _write(t, "doca_hbn.yaml")
    (ctr,) = _ps(t)
    rc, out, _err = t.run("crictl", "exec", ctr["id"])
    assert rc == 0 and "crictl exec [command options] [CONTAINER-ID] COMMAND [ARG...]" in out  # the help
    rc, _out, err = t.run("crictl", "exec", "0123456789ab", "vtysh")
    assert rc == 1 and err.startswith("FATA[0000] execing command in container 0123456789ab: rpc error: code = "
                                      "NotFound desc = failed to find container in store: not found")
    rc, _out, err = t.run("crictl", "exec", ctr["id"], "pmc", "-u", "-b", "0", "GET PORT_DATA_SET")
    assert rc == 1 and 'exec: "pmc": executable file not found in $PATH' in err  # pmc is Firefly's, not HBN's
    rc, _out, err = t.run("crictl", "exec", ctr["id"], "vtysh", "-c", "show version")
    assert rc == 1 and err.endswith("command terminated with exit code 1\n")
    rc, _out, err = t.run("crictl", "exec", "--bogus", ctr["id"], "vtysh")
    assert rc == 1 and "flag provided but not defined: --bogus" in err
    with t.edit() as node:
        kubelet.crash(node, "doca-hbn", stay_down=True)
    rc, _out, err = t.run("crictl", "exec", ctr["id"], "vtysh", "-c", "show ip route json")
    assert rc == 1 and err.endswith("container is in CONTAINER_EXITED state\n"), err
