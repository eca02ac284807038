"""offload_dividend: the twin's "not measurable", the CPU source it picks, the figures, failures, check mode.

The host is a folder standing for ``/`` (``fs_root``) holding the real files the lab's GPU-host container shows:
``/proc/1/cgroup`` (proc-cgroup/docker-cgroup-v1), ``/proc/stat`` and the container's ``cpuacct.usage`` before and
after a 50 MiB iperf3 loopback transfer, whose real ``iperf3 --json`` report the fake runner answers.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import offload_dividend
from fake_tools import FakeRunner, fixture_text

CGROUP = fixture_text("proc-cgroup", "docker-cgroup-v1")
GROUP = "docker/f1adb65699e5a4c07d56b6f90fb376d95d6b3adf8431ba97376dc18e4f96683f"
REPORT = fixture_text("iperf3-json", "iperf-3.18-tcp-50M")
REFUSED = fixture_text("iperf3-json", "iperf-3.18-connection-refused")
CLIENT = ["iperf3", "--json", "-p", "5201", "-c", "10.10.0.2", "-n", "256M", "--connect-timeout", "30000"]
VERSION = ("iperf3", "--version")


def host(tmp_path, container=True):
    (tmp_path / "proc/1").mkdir(parents=True)
    (tmp_path / "proc/stat").write_text(fixture_text("proc-stat", "vm-2cpu-kernel-6.18"))
    (tmp_path / "proc/1/cgroup").write_text(CGROUP if container else "0::/init.scope\n")
    usage = tmp_path / "sys/fs/cgroup/cpuacct" / GROUP / "cpuacct.usage"
    usage.parent.mkdir(parents=True)
    usage.write_text(fixture_text("cpuacct-usage", "docker-container"))
    return tmp_path


class Transfer(FakeRunner):
    """Answers like FakeRunner; the transfer itself moves the host's counters to the 'after' samples."""

    def __init__(self, answers, root):
        super().__init__(answers)
        self.root = root

    def run(self, argv, timeout=None):
        if argv[0] == "iperf3" and "--version" not in argv:
            (self.root / "proc/stat").write_text(fixture_text("proc-stat", "vm-2cpu-kernel-6.18-after-50M"))
            (self.root / "sys/fs/cgroup/cpuacct" / GROUP / "cpuacct.usage").write_text(
                fixture_text("cpuacct-usage", "docker-container-after-50M"))
        return super().run(argv, timeout)


def test_twin_is_not_measurable_and_runs_nothing(run_module, tmp_path):
    runner = FakeRunner({})
    failed, res = run_module(offload_dividend, {"server": "10.10.0.2", "fs_root": str(tmp_path)}, runner)
    assert not failed, res
    assert res["measurable"] is False and res["cpu_s_per_gb"] is None and res["transfer"] is None
    assert "not measurable on a twin" in res["reason"] and str(tmp_path / "proc/stat") in res["reason"]
    assert res["cmd"] == [] and not res["changed"]


def test_container_host_counts_its_cgroup(run_module, tmp_path):
    root = host(tmp_path)
    runner = Transfer({tuple(CLIENT): (0, REPORT, ""), VERSION: (0, "iperf 3.18 (cJSON 1.7.15)\n", "")}, root)
    failed, res = run_module(offload_dividend, {"server": "10.10.0.2", "fs_root": str(root), "pair": "a->b"}, runner)
    assert not failed, res
    assert res["cmd"] == [CLIENT, list(VERSION)]
    assert res["measurable"] and res["role"] == "client" and res["path"] == "dpu" and res["pair"] == "a->b"
    cpu = res["cpu"]
    assert cpu["source"] == "cgroup-v1" and cpu["cgroup"] == "/" + GROUP
    assert cpu["host_cpu_s"] == cpu["cgroup_cpu_s"] == pytest.approx(0.1992, abs=1e-4)
    assert cpu["proc_stat"]["busy"] == pytest.approx(3.11)  # the whole VM: reported, not counted
    assert res["transfer"]["bytes"] == 52428800 and res["transfer"]["retransmits"] == 2
    assert res["cpu_s_per_gb"] == pytest.approx(0.199186 / 0.0524288, abs=1e-3)
    assert res["tool_version"] == "iperf 3.18 (cJSON 1.7.15)"


def test_machine_host_counts_proc_stat(run_module, tmp_path):
    root = host(tmp_path, container=False)
    runner = Transfer({tuple(CLIENT): (0, REPORT, ""), VERSION: (0, "iperf 3.18\n", "")}, root)
    failed, res = run_module(offload_dividend, {"server": "10.10.0.2", "fs_root": str(root)}, runner)
    assert not failed, res
    assert res["cpu"]["source"] == "proc-stat" and res["cpu"]["cgroup"] is None
    assert res["cpu"]["host_cpu_s"] == pytest.approx(3.11)


def receive(run_module, tmp_path, monkeypatch, **params):
    """Run the receiving end on a container host under ``tmp_path/host``, its PID files in ``tmp_path``; returns
    the module's result and the iperf3 argv it was to run."""
    root = host(tmp_path / "host")
    monkeypatch.setattr(offload_dividend, "RUN_DIR", str(tmp_path))
    server = ["iperf3", "--json", "-p", "5201", "-s", "-1", "--idle-timeout", "120", "-I",
              str(tmp_path / "bluefleet-dividend-iperf3-5201.pid")]
    if params.get("bind"):
        server += ["-B", params["bind"]]
    runner = Transfer({tuple(server): (0, REPORT, ""), VERSION: (0, "iperf 3.18\n", "")}, root)
    failed, res = run_module(offload_dividend, dict(params, fs_root=str(root)), runner)
    assert not failed, res
    return res, server


def test_receiving_end_argv(run_module, tmp_path, monkeypatch):
    res, server = receive(run_module, tmp_path, monkeypatch, bind="169.254.22.2", route="host")
    assert res["role"] == "server" and res["path"] == "host" and res["cmd"][0] == server
    assert res["stopped_leftover"] is None and not res["changed"]


def _leftover_receiver(tmp_path, port):
    """A process whose command line is an iperf3 server's on ``port`` (a script named iperf3), as a killed run
    leaves its receiver: listening until its idle timeout; its PID file where the module writes it."""
    script = tmp_path / "bin" / "iperf3"
    script.parent.mkdir()
    script.write_text("import time\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, str(script), "--json", "-p", str(port), "-s", "-1",
                             "--idle-timeout", "300", "-B", "169.254.22.2"])
    # Popen returns once the child is in execve, but its command line shows only when the exec has set up its new
    # memory: a real iperf3 writes its PID file long after that, so this waits for what a real leftover shows
    deadline = time.monotonic() + 30
    while b"iperf3" not in Path("/proc/%d/cmdline" % proc.pid).read_bytes():
        assert time.monotonic() < deadline and proc.poll() is None, "the stand-in receiver did not start"
        time.sleep(0.01)
    (tmp_path / ("bluefleet-dividend-iperf3-%d.pid" % port)).write_text("%d\n" % proc.pid)
    return proc


def test_a_receiver_a_killed_run_left_is_stopped_first(run_module, tmp_path, monkeypatch):
    """Found in the container lab: a run killed while its host-path receiver listened (-B, the tunnel's address)
    left it running; the next run's receiver could not listen on the port (Address already in use) and its
    sending end waited connect_wait for nothing."""
    left = _leftover_receiver(tmp_path, 5201)
    try:
        res, server = receive(run_module, tmp_path, monkeypatch)
        assert res["stopped_leftover"] == left.pid and res["changed"]
        assert left.wait(timeout=10) == -signal.SIGTERM
        assert res["cmd"][0] == server
    finally:
        left.kill()
        left.wait()


def test_a_stale_pidfile_or_another_port_stops_nothing(run_module, tmp_path, monkeypatch):
    other = _leftover_receiver(tmp_path, 5202)  # another measurement's receiver, on its own port
    (tmp_path / "bluefleet-dividend-iperf3-5201.pid").write_text("%d\n" % other.pid)  # a PID reused since
    try:
        res, _server = receive(run_module, tmp_path, monkeypatch)
        assert res["stopped_leftover"] is None and not res["changed"]
        assert other.poll() is None, "a receiver on another port was stopped"
        assert not (tmp_path / "bluefleet-dividend-iperf3-5201.pid").exists()  # the stale file is gone
    finally:
        other.kill()
        other.wait()


def fake_clock(monkeypatch):
    """time.monotonic advanced only by time.sleep: the module's tries counted in seconds, not run in them."""
    now = [1000.0]
    monkeypatch.setattr(offload_dividend.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(offload_dividend.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))


def test_transfer_failure_names_the_error(run_module, tmp_path, monkeypatch):
    fake_clock(monkeypatch)
    root = host(tmp_path)
    failed, res = run_module(offload_dividend, {"server": "10.10.0.2", "fs_root": str(root), "connect_wait": 2},
                             Transfer({tuple(CLIENT): (1, REFUSED, "")}, root))
    assert failed
    assert "Connection refused" in res["msg"] and "iperf3 to 10.10.0.2" in res["msg"]
    assert "no iperf3 server listened on 10.10.0.2 port 5201 within connect_wait 2 s" in res["msg"]
    assert res["cmd"] == [CLIENT] * 3  # the receiving end may still be starting: tried at 0, 1 and 2 s


def test_a_late_receiving_end_is_waited_for_up_to_connect_wait(run_module, tmp_path, monkeypatch):
    """A receiving end that listens only after 40 s (a busy host starting its background job): refused 40 times,
    then measured, within the default connect_wait of the playbook (60) but not the module's 30."""
    fake_clock(monkeypatch)
    root = host(tmp_path)

    class Late(Transfer):
        """Refused for the first 40 tries (one a second), then the transfer."""

        def run(self, argv, timeout=None):
            if list(argv) == CLIENT and self.cmd.count(CLIENT) < 40:
                self.cmd.append(list(argv))
                return CommandResult(argv, 1, REFUSED, "")
            return super().run(argv, timeout)

    answers = {tuple(CLIENT): (0, REPORT, ""), VERSION: (0, "iperf 3.18\n", "")}
    failed, res = run_module(offload_dividend, {"server": "10.10.0.2", "fs_root": str(root), "connect_wait": 60},
                             Late(answers, root))
    assert not failed, res
    assert res["cmd"].count(CLIENT) == 41 and res["transfer"]
    failed, res = run_module(offload_dividend, {"server": "10.10.0.2", "fs_root": str(host(tmp_path / "b"))},
                             Late(answers, tmp_path / "b"))
    assert failed and "within connect_wait 30 s" in res["msg"], res
    assert res["cmd"].count(CLIENT) == 31  # tried at 0, 1, ... 30 s


def test_counters_reset_during_the_transfer_fail(run_module, tmp_path):
    root = host(tmp_path)
    usage = root / "sys/fs/cgroup/cpuacct" / GROUP / "cpuacct.usage"
    usage.write_text(fixture_text("cpuacct-usage", "docker-container-after-50M"))

    class Reset(Transfer):
        def run(self, argv, timeout=None):
            result = super().run(argv, timeout)
            usage.write_text(fixture_text("cpuacct-usage", "docker-container"))
            return result

    failed, res = run_module(offload_dividend, {"server": "10.10.0.2", "fs_root": str(root)},
                             Reset({tuple(CLIENT): (0, REPORT, "")}, root))
    assert failed and "went backwards" in res["msg"]


def test_bad_port_fails_before_anything_runs(run_module, tmp_path):
    failed, res = run_module(offload_dividend, {"server": "x", "port": 0, "fs_root": str(host(tmp_path))},
                             FakeRunner({}))
    assert failed and "port must be 1..65535" in res["msg"] and res["cmd"] == []


def test_check_mode_skips(monkeypatch, tmp_path):
    seen = {}

    def _exit_json(self, **kwargs):
        seen.update(json.loads(json.dumps(kwargs)))
        raise SystemExit(0)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(offload_dividend, "ToolRunner", lambda **kw: pytest.fail("a runner was built"))
    with patch_module_args({"server": "10.10.0.2", "_ansible_check_mode": True}), pytest.raises(SystemExit):
        offload_dividend.main()
    assert seen.get("skipped") is True


def test_a_leftover_that_ends_while_being_stopped_is_stopped(tmp_path, monkeypatch):
    """The leftover one-off receiver can end by itself (its client gone) between the look at it and the signal."""
    monkeypatch.setattr(offload_dividend, "RUN_DIR", str(tmp_path))
    (tmp_path / "bluefleet-dividend-iperf3-5201.pid").write_text("4242\n")
    alive = iter([True, False])
    monkeypatch.setattr(offload_dividend, "_iperf3_server_on", lambda pid, port: next(alive))

    def gone(pid, sig):
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(offload_dividend.os, "kill", gone)
    assert offload_dividend.stop_leftover_receiver(5201) == 4242
    assert not (tmp_path / "bluefleet-dividend-iperf3-5201.pid").exists()
