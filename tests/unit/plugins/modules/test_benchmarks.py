"""ib_write_bw and nccl_allreduce modules: exact argv, thresholds, failures, against recorded outputs.

Tool outputs: the parser fixtures (verbatim corpus samples) ib-write-bw/ib_write_bw-cuda-client-rdma_cm-16qp
(181.46 Gb/s) and -server-complete, ibdev2netdev/public-raw-12-ports-bond (raw ``ibdev2netdev`` lines),
nccl-all-reduce/all_reduce_perf-2node-H200-g8 (largest message 92.33 GB/s busbw); the MR error lines of a real
perftest run (public issue report raids-lab/crater #339).
"""

from __future__ import annotations

import time

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.modules import ib_write_bw, nccl_allreduce
from fake_tools import FakeRunner, fixture_text

CLIENT = fixture_text("ib-write-bw", "ib_write_bw-cuda-client-rdma_cm-16qp")
SERVER = fixture_text("ib-write-bw", "ib_write_bw-cuda-server-complete")
WAITING = fixture_text("ib-write-bw", "ib_write_bw-cuda-server-waiting")
LINKS = fixture_text("ibdev2netdev", "public-raw-12-ports-bond")
H200 = fixture_text("nccl-all-reduce", "all_reduce_perf-2node-H200-g8")
MR_ERROR = "Couldn't allocate MR\nfailed to create mr\nFailed to create MR\n Couldn't create IB resources\n"

BASE = {"device": "mlx5_1", "gid_index": 3, "tos": 41}
ARGV = ["ib_write_bw", "-d", "mlx5_1", "-i", "1", "-x", "3", "-R", "-T", "41", "-s", "65536", "-q", "4", "-D", "10",
        "-F", "--report_gbits", "-p", "18515"]
VERSION = ("ib_write_bw", "--version")


def _runner(extra):
    answers = {("ibdev2netdev",): (0, LINKS, ""), VERSION: (0, "Version: 6.22\n", "")}
    answers.update(extra)
    return FakeRunner(answers)


def test_client_measures_and_passes(run_module):
    argv = ARGV + ["--use_cuda=0", "192.168.2.1"]
    runner = _runner({tuple(argv): (0, CLIENT, "")})
    failed, res = run_module(ib_write_bw, dict(BASE, server="192.168.2.1", use_cuda=0, min_bw_gbps=180), runner)
    assert not failed, res
    assert res["cmd"] == [["ibdev2netdev"], argv, list(VERSION)]
    assert res["role"] == "client" and res["passed"] and not res["changed"]
    assert res["result"]["bw_avg_gbps"] == 181.46 and res["result"]["gpu_direct"] is True
    assert res["result"]["bw_peak_gbps"] is None  # -D: perftest does not measure the peak
    assert res["tool_version"] == "Version: 6.22"


def test_client_below_threshold_fails_with_the_hint(run_module):
    argv = ARGV + ["192.168.2.1"]
    failed, res = run_module(ib_write_bw, dict(BASE, server="192.168.2.1", min_bw_gbps=190),
                             _runner({tuple(argv): (0, CLIENT, "")}))
    assert failed
    assert "average 181.46 Gb/s to 192.168.2.1 is below min_bw_gbps 190" in res["msg"]
    assert "PFC on the priority of the DSCP" in res["msg"] and res["passed"] is False


def test_server_side(run_module):
    failed, res = run_module(ib_write_bw, dict(BASE), _runner({tuple(ARGV): (0, SERVER, "")}))
    assert not failed and res["role"] == "server" and res["result"]["bw_avg_gbps"] == 181.46


def test_server_without_report_fails(run_module):
    failed, res = run_module(ib_write_bw, dict(BASE), _runner({tuple(ARGV): (0, WAITING, "")}))
    assert failed and "printed no bandwidth report" in res["msg"]


def test_unknown_device_fails_before_running(run_module):
    runner = _runner({})
    failed, res = run_module(ib_write_bw, dict(BASE, device="mlx5_99", server="10.0.0.1"), runner)
    assert failed
    assert "mlx5_99 is not an RDMA device of this host (found: mlx5_0, mlx5_1" in res["msg"]
    assert runner.cmd == [["ibdev2netdev"]]


def test_gpu_buffer_without_peermem(run_module):
    argv = ARGV + ["--use_cuda=0", "10.0.0.1"]
    failed, res = run_module(ib_write_bw, dict(BASE, server="10.0.0.1", use_cuda=0),
                             _runner({tuple(argv): (1, "initializing CUDA\n", MR_ERROR)}))
    assert failed and "Couldn't allocate MR" in res["msg"] and "load nvidia_peermem" in res["msg"]


NO_SERVER = ("Couldn't connect to 10.0.0.1:18515\nUnable to open file descriptor for socket connection\n"
             " Unable to init the socket connection\n")


class _SequenceRunner(FakeRunner):
    """The client's argv answers from ``sequence`` in turn (the server starts listening after a while)."""

    def __init__(self, answers, argv, sequence):
        super().__init__(answers)
        self.argv, self.sequence = tuple(argv), list(sequence)

    def run(self, argv, timeout=None):
        if tuple(argv) == self.argv:
            self.answers[self.argv] = self.sequence.pop(0) if len(self.sequence) > 1 else self.sequence[0]
        return super().run(argv, timeout)


def test_client_tries_again_until_the_server_listens(run_module, monkeypatch):
    """ib_write_bw's client connects once (perftest ethernet_client_connect): a server started in the background is
    not listening yet for a moment, so the module runs the client again once a second within connect_wait."""
    sleeps = []
    monkeypatch.setattr(time, "sleep", sleeps.append)
    argv = ARGV + ["10.0.0.1"]
    runner = _SequenceRunner(_runner({}).answers, argv, [(1, "", NO_SERVER), (1, "", NO_SERVER), (0, CLIENT, "")])
    failed, res = run_module(ib_write_bw, dict(BASE, server="10.0.0.1"), runner)
    assert not failed, res
    assert runner.cmd.count(argv) == 3 and sleeps == [1, 1]
    assert res["result"]["bw_avg_gbps"] == 181.46


def test_client_without_a_server_fails_naming_the_port(run_module, monkeypatch):
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(time, "sleep", lambda _s: None)
    argv = ARGV + ["10.0.0.1"]
    runner = _runner({tuple(argv): (1, "", NO_SERVER)})
    failed, res = run_module(ib_write_bw, dict(BASE, server="10.0.0.1", connect_wait=30), runner)
    assert failed and 2 <= runner.cmd.count(argv) <= 4
    assert "Unable to init the socket connection" in res["msg"]
    assert "no ib_write_bw server listened on 10.0.0.1 TCP port 18515 within connect_wait 30 s" in res["msg"]
    runner = _runner({tuple(argv): (1, "", NO_SERVER)})
    failed, res = run_module(ib_write_bw, dict(BASE, server="10.0.0.1", connect_wait=0), runner)
    assert failed and runner.cmd.count(argv) == 1


@pytest.mark.parametrize("args, message", [
    (dict(BASE, tos=256), "tos must be 0..255, got 256"),
    (dict(BASE, min_bw_gbps=10), "min_bw_gbps is checked on the client"),
    (dict(BASE, qps=0), "qps must be 1..16384"),
    (dict(BASE, server="10.0.0.1", connect_wait=-1), "connect_wait must be 0..3600, got -1"),
])
def test_bad_parameters(run_module, args, message):
    runner = _runner({})
    failed, res = run_module(ib_write_bw, args, runner)
    assert failed and message in res["msg"] and runner.cmd == []


NCCL_ARGV = ["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "8"]


def test_allreduce_passes_with_env(run_module):
    env = {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_IB_TC": "104"}
    argv = ["env", "NCCL_IB_HCA==mlx5_0:1", "NCCL_IB_TC=104", "mpirun", "-np", "16"] + NCCL_ARGV
    runner = FakeRunner({tuple(argv): (0, H200, "")})
    failed, res = run_module(nccl_allreduce, {"gpus": 8, "max_bytes": "16G", "nccl_env": env,
                                              "launcher": ["mpirun", "-np", "16"], "min_busbw": 90}, runner)
    assert not failed, res
    assert res["cmd"] == [argv]
    assert res["busbw"] == 92.33 and res["avg_busbw"] == 36.2205 and res["passed"]
    assert res["result"]["nranks"] == 16 and res["result"]["nccl_version"] == "2.27.3+cuda12.9"


def test_allreduce_below_threshold(run_module):
    runner = FakeRunner({tuple(NCCL_ARGV): (0, H200, "")})
    failed, res = run_module(nccl_allreduce, {"gpus": 8, "max_bytes": "16G", "min_busbw": 100}, runner)
    assert failed and "bus bandwidth 92.33 GB/s at 17179869184 bytes is below min_busbw 100" in res["msg"]
    assert "NCCL_IB_HCA" in res["msg"]


def test_allreduce_nccl_failure(run_module):
    text = H200.split("#       size")[0] + " test.cu:123 NCCL failure common.cu 'unhandled system error'\n"
    failed, res = run_module(nccl_allreduce, {"gpus": 8, "max_bytes": "16G"},
                             FakeRunner({tuple(NCCL_ARGV): (0, text, "")}))
    assert failed and "NCCL failure" in res["msg"]


@pytest.mark.parametrize("args, message", [
    ({"max_bytes": "1T"}, "max_bytes must be bytes"),
    ({"nccl_env": {"PATH": "/x"}}, "nccl_env names must be NCCL_*, got PATH"),
    ({"factor": 1}, "factor >= 2"),
])
def test_allreduce_bad_parameters(run_module, args, message):
    runner = FakeRunner({})
    failed, res = run_module(nccl_allreduce, args, runner)
    assert failed and message in res["msg"] and runner.cmd == []


def test_allreduce_tool_missing(run_module):
    runner = FakeRunner({}, missing=("all_reduce_perf",))
    failed, res = run_module(nccl_allreduce, {}, runner)
    assert failed and res["msg"].startswith("measure NCCL all-reduce bandwidth with all_reduce_perf failed:")


@pytest.mark.parametrize("module, args", [
    (ib_write_bw, dict(BASE, server="192.168.2.1")),
    (nccl_allreduce, {"gpus": 8, "max_bytes": "16G"}),
])
def test_check_mode_runs_no_traffic(run_module, monkeypatch, module, args):
    def no_runner(*_args, **_kwargs):
        raise AssertionError("check mode built a runner: it would run traffic")

    monkeypatch.setattr(module, "ToolRunner", no_runner)
    results = []

    def fake_exit(_self, **kw):
        results.append(kw)
        raise SystemExit(0)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", fake_exit)
    with patch_module_args(dict(args, _ansible_check_mode=True)), pytest.raises(SystemExit):
        module.main()
    (res,) = results
    assert res["changed"] is False and res["skipped"] is True and res["cmd"] == []
    assert res["msg"].startswith("skipped in check mode")
