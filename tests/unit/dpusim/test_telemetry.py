"""The twin's DOCA Telemetry Service stand-in: the Prometheus page (one-shot and served), and the kubelet daemon
(`dpusim kubelet serve`) running, restarting and stopping a real process per telemetry container.

The page is read here with a small regular expression on the text format's sample lines (the twin's tests do not
use the collection's parsers).
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from dpusim import kubelet, kubelet_serve, state, telemetry

MANIFEST = """apiVersion: v1
kind: Pod
metadata:
  name: doca-telemetry-service
spec:
  hostNetwork: true
  containers:
    - name: doca-telemetry-service
      image: nvcr.io/nvidia/doca/doca_telemetry:1.16.5-doca2.6.0
"""
SAMPLE = re.compile(r'^(?P<name>[a-z_]+)\{device="(?P<dev>[^"]+)",port="(?P<port>\d+)"\} (?P<value>\d+)$', re.M)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _deploy(t, port=9100, prometheus=True):
    (t.root / "etc" / "kubelet.d").mkdir(parents=True, exist_ok=True)
    (t.root / "etc" / "kubelet.d" / "doca_telemetry_standalone.yaml").write_text(MANIFEST)
    cfg = t.root / telemetry.CONFIG_REL
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("# DTS\n" + ("prometheus=http://0.0.0.0:%d\n" % port if prometheus else "") + "update=1000\n")


def _samples(text):
    return {(m["name"], m["dev"], m["port"]): int(m["value"]) for m in SAMPLE.finditer(text)}


def _ps(t):
    rc, out, err = t.run("crictl", "ps", "-a", "-o", "json")
    assert rc == 0, err
    return json.loads(out)["containers"]


def test_metrics_one_shot_renders_the_card_counters(twin):
    t = twin(role="dpu", name="dpu1")
    _deploy(t)
    with t.edit() as node:
        telemetry.add_traffic(node.cards[0], 0, port_rcv_data=250, port_rcv_packets=3)
        telemetry.add_traffic(node.cards[0], 1, port_xmit_data=7)
    rc, out, err = t.cli("kubelet", "metrics", "doca-telemetry-service")
    assert rc == 0, err
    samples = _samples(out)
    assert samples[("port_rcv_data", "mlx5_0", "1")] == 250
    assert samples[("port_rcv_packets", "mlx5_0", "1")] == 3
    assert samples[("port_xmit_data", "mlx5_1", "1")] == 7
    assert samples[("port_xmit_data", "mlx5_0", "1")] == 0
    assert {n for n, _d, _p in samples} == set(telemetry.NAMES)
    assert "# TYPE port_rcv_data counter\n" in out
    # every non-comment line is a sample
    assert all(line.startswith("#") or SAMPLE.match(line) for line in out.splitlines())


def test_counters_are_the_cards_seen_from_both_sides(twin, tmp_path):
    card_dir = tmp_path / "card"
    host = twin(role="host", name="host1", card_dir=card_dir)
    dpu = twin(role="dpu", name="dpu1", card_dir=card_dir)
    _deploy(dpu)
    with host.edit() as node:
        telemetry.add_traffic(node.cards[0], 0, np_cnp_sent=5)
    rc, out, err = dpu.cli("kubelet", "metrics", "doca-telemetry-service")
    assert rc == 0, err
    assert _samples(out)[("np_cnp_sent", "mlx5_0", "1")] == 5


def test_unknown_counter_is_refused(twin):
    t = twin(role="dpu")
    with t.edit() as node, pytest.raises(ValueError, match="unknown counter.*bogus"):
        telemetry.add_traffic(node.cards[0], 0, bogus=1)


@pytest.mark.parametrize("case, message", [
    ("no_pod", "no running container or pod named"),
    ("no_prometheus", "no prometheus= line"),
    ("crashed", "CONTAINER_EXITED: nothing listens"),
    ("not_telemetry", "has no metrics endpoint"),
])
def test_metrics_one_shot_refuses_like_a_closed_port(twin, case, message):
    t = twin(role="dpu", name="dpu1")
    if case != "no_pod":
        _deploy(t, prometheus=case != "no_prometheus")
    if case == "crashed":
        rc, _out, err = t.cli("kubelet", "crash", "doca-telemetry-service", "--stay-down")
        assert rc == 0, err
    if case == "not_telemetry":
        (t.root / "etc" / "kubelet.d" / "doca_telemetry_standalone.yaml").write_text(
            MANIFEST.replace("doca_telemetry:", "doca_hbn:"))
    rc, out, err = t.cli("kubelet", "metrics", "doca-telemetry-service")
    assert rc == 1 and out == ""
    assert message in err


def test_bad_prometheus_url_is_named(twin):
    t = twin(role="dpu")
    _deploy(t)
    (t.root / telemetry.CONFIG_REL).write_text("prometheus=0.0.0.0\n")
    with pytest.raises(telemetry.TelemetryError, match="prometheus=0.0.0.0 is not an http://ADDRESS:PORT URL"):
        telemetry.prometheus_port(t.root)


def test_stand_in_serves_the_counters_at_scrape_time(twin):
    t = twin(role="dpu", name="dpu1")
    port = _free_port()
    _deploy(t, port=port)
    server = kubelet_serve.server_for(t.node(), str(t.root))
    assert server.server_address[1] == port
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        url = "http://127.0.0.1:%d/metrics" % port
        with urllib.request.urlopen(url, timeout=5) as resp:
            assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            first = _samples(resp.read().decode())
        with t.edit() as node:
            telemetry.add_traffic(node.cards[0], 0, port_xmit_packets=42)
        with urllib.request.urlopen(url, timeout=5) as resp:
            second = _samples(resp.read().decode())
        key = ("port_xmit_packets", "mlx5_0", "1")
        assert second[key] == first[key] + 42
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5)
    finally:
        server.shutdown()
        server.server_close()


def _get(port, tries=40):
    for _i in range(tries):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2) as resp:
                return resp.read().decode()
        except OSError:
            time.sleep(0.25)
    raise AssertionError("nothing answers on port %d" % port)


def _refused(port, tries=40):
    for _i in range(tries):
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2).close()
        except OSError:
            return True
        time.sleep(0.25)
    return False


def test_serve_runs_restarts_and_stops_a_real_process(twin):
    t = twin(role="dpu", name="dpu1")
    t._env()
    port = _free_port()
    _deploy(t, port=port)
    procs = {}
    try:
        kubelet_serve.reconcile(procs, str(t.root))
        assert len(procs) == 1
        first_id, proc = next(iter(procs.items()))
        assert "port_rcv_data" in _get(port)

        # the process dies (a crash): the next pass counts a restart and starts a new one
        proc.kill()
        proc.wait()
        kubelet_serve.reconcile(procs, str(t.root))
        (second_id, second), = procs.items()
        assert second_id != first_id and second.poll() is None
        (ctr,) = [c for c in _ps(t) if c["state"] == "CONTAINER_RUNNING"]
        assert ctr["id"] == second_id
        assert ctr["annotations"]["io.kubernetes.container.restartCount"] == "1"
        assert "port_rcv_data" in _get(port)

        # `dpusim kubelet crash` (the record, not the process): its process is stopped, a new one runs
        rc, _out, err = t.cli("kubelet", "crash", "doca-telemetry-service")
        assert rc == 0, err
        kubelet_serve.reconcile(procs, str(t.root))
        assert second.poll() is not None
        (third_id, _third), = procs.items()
        assert third_id not in (first_id, second_id)
        assert "port_rcv_data" in _get(port)

        # the manifest is removed: the process is stopped, nothing listens
        (t.root / "etc" / "kubelet.d" / "doca_telemetry_standalone.yaml").unlink()
        kubelet_serve.reconcile(procs, str(t.root))
        assert procs == {}
        assert _refused(port)
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


def test_serve_notes_a_stand_in_that_cannot_start(twin):
    t = twin(role="dpu", name="dpu1")
    t._env()
    _deploy(t, prometheus=False)
    procs = {}
    try:
        kubelet_serve.reconcile(procs, str(t.root))
        (proc,) = procs.values()
        assert proc.wait(timeout=30) == 1
        kubelet_serve.reconcile(procs, str(t.root))
        with state.open_node(t.root) as node:
            kub = kubelet.sync(node)
            (ctr,) = kubelet.all_containers(kub, include_dead=False)
            (dead,) = kubelet.all_containers(kub, include_dead=True)[1:]
        assert ctr["restart_count"] == 1
        assert dead["exit_code"] == 1
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


def test_serve_moves_the_endpoint_when_the_pod_is_recreated(twin):
    """A settings change rewrites dts_config.ini and the manifest (its config hash): the kubelet replaces the pod,
    the old process stops and the new one listens on the new port."""
    t = twin(role="dpu", name="dpu1")
    t._env()
    old, new = _free_port(), _free_port()
    _deploy(t, port=old)
    procs = {}
    try:
        kubelet_serve.reconcile(procs, str(t.root))
        assert "port_rcv_data" in _get(old)
        _deploy(t, port=new)
        manifest = t.root / "etc" / "kubelet.d" / "doca_telemetry_standalone.yaml"
        manifest.write_text(MANIFEST.replace("spec:", "  annotations:\n    bluefleet.io/config-hash: \"2\"\nspec:"))
        kubelet_serve.reconcile(procs, str(t.root))
        assert len(procs) == 1
        assert "port_rcv_data" in _get(new)
        assert _refused(old)
    finally:
        for p in procs.values():
            p.kill()
            p.wait()
