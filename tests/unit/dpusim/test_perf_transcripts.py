"""Twin ib_write_bw and all_reduce_perf: transcripts against the corpus, and the model's behaviour.

Covered samples (file -> test):
- perftest/ib_write_bw-cuda-client-rdma_cm-16qp ........ test_ib_write_bw_client_transcript (exact, TABs kept)
- perftest/ib_write_bw-cuda-server-complete ............. test_ib_write_bw_server_transcript (exact)
- perftest/ib_write_bw-cuda-server-waiting .............. test_ib_write_bw_server_waiting (exact)
- nccl-tests/all_reduce_perf-2node-H200-g8, -L40S-g2 .... test_all_reduce_transcript (exact but the launcher's
  ssh warning and the average's last digits: the sample averages unrounded numbers)
The scenario data (QPNs, PSNs, GIDs, numbers, ranks) are read from the sample; the layout is the twin's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from dpusim import linux_state as ls
from dpusim import state
from dpusim.tools import nccl_tests, perftest

ADDR_RE = re.compile(r"^ (local|remote) address: LID 0000 QPN 0x([0-9a-f]+) PSN 0x([0-9a-f]+)$")
ROW_RE = re.compile(r"^ (\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")


def _body(corpus_dir, rel):
    text = (corpus_dir / rel).read_text()
    return text.split("# ---\n", 1)[1]


def _hex_gid(decimal: str) -> str:
    raw = "".join("%02x" % int(b) for b in decimal.split(":"))
    return ":".join(raw[i:i + 4] for i in range(0, 32, 4))


def _scenario(text: str, server: bool) -> dict:
    lines = text.splitlines()
    sides = {"local": [], "remote": []}
    for i, line in enumerate(lines):
        m = ADDR_RE.match(line)
        if m:
            gid = lines[i + 1].split("GID: ", 1)[1]
            sides[m.group(1)].append((int(m.group(2), 16), int(m.group(3), 16), _hex_gid(gid)))
    row = next(ROW_RE.match(line) for line in lines if ROW_RE.match(line))
    pid = int(re.search(r"\[pid = (\d+)", text).group(1))
    address = int(re.search(r"allocated GPU buffer address at ([0-9a-f]+)", text).group(1), 16)
    pcie = re.search(r"PCIe address is (\S+)", text).group(1)
    return {"duration": 60, "server": server, "device": "mlx5_1", "qps": 16, "mtu": 1024, "gid_index": 3, "tos": 41,
            "mtu_reduced_to": 3, "local": sides["local"], "remote": sides["remote"],
            "row": (int(row.group(1)), int(row.group(2)), float(row.group(3)), float(row.group(4)),
                    float(row.group(5))),
            "cuda": {"devices": [pcie], "index": 0, "pid": pid, "name": "NVIDIA A40", "address": address}}


def test_ib_write_bw_client_transcript(corpus_dir):
    sample = _body(corpus_dir, "perftest/ib_write_bw-cuda-client-rdma_cm-16qp.txt")
    r = _scenario(sample, server=False)
    assert perftest.render_head(r) + perftest.render_cuda(r) + perftest.render_report(r) == sample


def test_ib_write_bw_server_transcript(corpus_dir):
    sample = _body(corpus_dir, "perftest/ib_write_bw-cuda-server-complete.txt")
    r = _scenario(sample, server=True)
    assert perftest.render_head(r) + perftest.render_cuda(r) + perftest.render_report(r) == sample


def test_ib_write_bw_server_waiting(corpus_dir):
    sample = _body(corpus_dir, "perftest/ib_write_bw-cuda-server-waiting.txt")
    assert perftest.render_head({"duration": 60, "server": True, "cuda": {"x": 1}}) == sample


RANK_RE = re.compile(r"^#  Rank +(\d+) Group  0 Pid +(\d+) on +(\S+) device +(\d+) \[(\S+)\] (.+)$")


@pytest.mark.parametrize("rel", ["nccl-tests/all_reduce_perf-2node-H200-g8.txt",
                                 "nccl-tests/all_reduce_perf-2node-L40S-g2.txt"])
def test_all_reduce_transcript(corpus_dir, rel):
    sample = _body(corpus_dir, rel)
    lines = [line for line in sample.splitlines(keepends=True) if not line.startswith("Warning: Permanently")]
    if any(line.startswith("# Reducing maxBytes") for line in lines):  # printed only when memory is short
        i = next(i for i, line in enumerate(lines) if line.startswith("# Reducing maxBytes"))
        del lines[i - 1:i + 1]
    head = re.search(r"nGpus (\d+) minBytes (\d+) maxBytes (\d+) step: (\d+)", lines[0])
    ranks = [{"rank": int(m.group(1)), "pid": int(m.group(2)), "host": m.group(3), "device": int(m.group(4)),
              "bus": m.group(5), "name": m.group(6)} for m in (RANK_RE.match(line) for line in lines) if m]
    rows = []
    for line in lines:
        cells = line.split()
        if cells and cells[0].isdigit():
            rows.append({"size": int(cells[0]), "out": tuple(map(float, cells[5:8])),
                         "in": tuple(map(float, cells[9:12]))})
    version = next(line.split()[2] for line in lines if line.startswith("NCCL version"))
    run = {"ngpus": int(head.group(1)), "min": int(head.group(2)), "max": int(head.group(3)),
           "factor": int(head.group(4)), "warmup": 5, "iters": 20, "check": 1, "ranks": ranks, "rows": rows,
           "version": version}
    rendered = nccl_tests.render(run).splitlines(keepends=True)
    avg = [i for i, line in enumerate(lines) if line.startswith("# Avg bus bandwidth")][0]
    assert rendered[:avg] == lines[:avg]
    assert rendered[avg + 1:] == lines[avg + 1:]
    got = float(rendered[avg].split(":")[1])
    want = float(lines[avg].split(":")[1])
    assert got == pytest.approx(want, abs=0.01)
    assert rendered[avg].endswith(" \n")


# ----------------------------------------------------------------------------------------------- behaviour

def _qos(t, pfc_prio, *extra):
    """The QoS as an operator sets it: mlnx_qos (trust dscp fills the default dscp2prio table, DSCP >> 3)."""
    pfc = ",".join("1" if i == pfc_prio else "0" for i in range(8))
    rc, _out, err = t.run("mlnx_qos", "-i", "ens1f0np0", "--trust", "dscp", "--pfc", pfc)
    assert rc == 0, err
    for dscp2prio in extra:
        rc, _out, err = t.run("mlnx_qos", "-i", "ens1f0np0", "--dscp2prio", dscp2prio)
        assert rc == 0, err


CLIENT = ["-d", "mlx5_0", "-x", "1", "-R", "-T", "104", "-s", "65536", "-q", "4", "-D", "10", "--report_gbits",
          "-F", "192.168.1.2"]


@pytest.fixture(autouse=True)
def a_server_listens(tmp_path, monkeypatch):
    """The clients of these tests reach a listening server: a ``PORT.wait`` naming a live process (this one) in a
    rendezvous folder of the test's own; the test that needs no server removes it."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    wait = tmp_path / "dpusim-perftest" / ("%d.wait" % perftest.DEFAULT_PORT)
    wait.parent.mkdir()
    wait.write_text(str(os.getpid()))
    return wait


def _avg(out: str) -> float:
    row = [line for line in out.splitlines() if ROW_RE.match(line)][0]
    return float(row.split()[3])


def test_lossless_beats_lossy(twin):
    t = twin("bluefield3")
    rc, lossy, err = t.run("ib_write_bw", *CLIENT)
    assert rc == 0, err
    _qos(t, 3)  # DSCP 26 (ToS 104) -> priority 3 in the default table
    rc, lossless, err = t.run("ib_write_bw", *CLIENT)
    assert rc == 0, err
    assert _avg(lossless) > 150 > _avg(lossy) > 50
    _qos(t, 5)  # PFC on another priority: lossy again
    assert _avg(t.run("ib_write_bw", *CLIENT)[1]) == _avg(lossy)


def test_the_configured_dscp2prio_decides_the_priority(twin):
    """DSCP 26 remapped to priority 5 (mlnx_qos --dscp2prio set,26,5): PFC on 3 no longer covers it (lossy), PFC on
    5 does; the twin follows the configured table, not DSCP >> 3."""
    t = twin("bluefield3")
    lossy = _avg(t.run("ib_write_bw", *CLIENT)[1])
    _qos(t, 3, "del,26,3", "set,26,5")
    assert _avg(t.run("ib_write_bw", *CLIENT)[1]) == lossy
    _qos(t, 5)
    rc, out, err = t.run("mlnx_qos", "-i", "ens1f0np0", "--dscp2prio", "del,26,3", "--dscp2prio", "set,26,5")
    assert rc == 0, err
    assert _avg(t.run("ib_write_bw", *CLIENT)[1]) > 150
    rc, _out, err = t.run("mlnx_qos", "-i", "ens1f0np0", "--trust", "pcp")  # pcp: untagged RoCE on priority 0
    assert rc == 0, err
    assert _avg(t.run("ib_write_bw", *CLIENT)[1]) == lossy


def test_use_cuda_needs_peermem(twin):
    t = twin("bluefield3")
    rc, out, err = t.run("ib_write_bw", *CLIENT, "--use_cuda=0")
    assert rc == 1 and "Couldn't allocate MR" in err and "initializing CUDA" in out
    with t.edit() as node:
        ls.load_peermem(node)
    rc, out, err = t.run("ib_write_bw", *CLIENT, "--use_cuda=0")
    assert rc == 0, err
    assert "device name = [NVIDIA H100 80GB HBM3]" in out and "deallocating GPU buffer" in out


def test_unknown_device_and_form(twin):
    t = twin("bluefield3")
    rc, _out, err = t.run("ib_write_bw", *[("mlx5_9" if a == "mlx5_0" else a) for a in CLIENT])
    assert rc == 1 and "IB device mlx5_9 not found" in err
    rc, _out, err = t.run("ib_write_bw", "-d", "mlx5_0", "192.168.1.2")
    assert rc == 1 and "the twin answers" in err
    rc, _out, err = t.run("ib_write_bw", *[("7" if a == "1" else a) for a in CLIENT])
    assert rc == 1 and "GID index 7 of mlx5_0 port 1 is empty" in err


@pytest.mark.parametrize("layout, after", [
    ("2024", "Unable to open file descriptor for socket connection Unable to init the socket connection\n"),
    ("2025", "Unable to open file descriptor for socket connection\n Unable to init the socket connection\n"),
])
def test_client_without_a_server_is_refused(twin, a_server_listens, monkeypatch, layout, after):
    """perftest's client connects once (ethernet_client_connect): no server on the port (none started, or one that
    ended and left its file behind) is rc 1 with its messages, as the real one prints them for the release."""
    monkeypatch.setenv("DPUSIM_PERFTEST_LAYOUT", layout)
    t = twin("bluefield3")
    a_server_listens.unlink()
    rc, out, err = t.run("ib_write_bw", *CLIENT)
    assert rc == 1 and "local address" not in out
    assert err == "Couldn't connect to 192.168.1.2:18515\n" + after
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    a_server_listens.write_text(dead)  # the server was killed: its file names no process
    assert t.run("ib_write_bw", *CLIENT)[0] == 1
    a_server_listens.write_text(str(os.getpid()))
    assert t.run("ib_write_bw", *CLIENT)[0] == 0


def test_server_reports_the_clients_numbers(twin, tmp_path):
    t = twin("bluefield3")
    server_args = [a for a in CLIENT if a != "192.168.1.2"] + ["-p", "23457"]
    env = dict(os.environ, DPUSIM_ROOT=str(t.root), DPUSIM_PERFTEST_WAIT="60", TMPDIR=str(tmp_path))
    code = "import sys; from dpusim import tool; sys.exit(tool.run('ib_write_bw', sys.argv[1:]))"
    server = subprocess.Popen([sys.executable, "-c", code, *server_args], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        wait = tmp_path / "dpusim-perftest" / "23457.wait"
        for _i in range(300):
            if wait.exists():
                break
            __import__("time").sleep(0.1)
        assert wait.exists(), "the server did not start listening"
        client = subprocess.run([sys.executable, "-c", code, *CLIENT, "-p", "23457"], env=env, capture_output=True,
                                text=True, timeout=60, check=False)
        out, err = server.communicate(timeout=60)
    finally:
        server.kill()
    assert client.returncode == 0 and server.returncode == 0, err
    assert "* Waiting for client to connect... *" in out
    assert _avg(out) == _avg(client.stdout)


def test_all_reduce_perf_model(twin):
    t = twin("bluefield3")
    rc, out, err = t.run("all_reduce_perf", "-b", "8", "-e", "128M", "-f", "2", "-g", "8")
    assert rc == 0, err
    rows = [line.split() for line in out.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert [int(r[0]) for r in rows] == [8 * 2 ** i for i in range(25)]
    busbw = [float(r[7]) for r in rows]
    assert busbw == sorted(busbw) and 300 < busbw[-1] < 360
    rc, _out, err = t.run("all_reduce_perf", "-g", "9")
    assert rc == 1 and "this node has 8 GPUs" in err
    with t.edit() as node:
        ls.configure_gpus(node, 0)
    rc, _out, err = t.run("all_reduce_perf", "-g", "1")
    assert rc == 1 and "no CUDA device" in err


def test_state_module_is_used_read_only(twin):
    t = twin("bluefield3")
    before = state.load_node(t.root).runtime
    t.run("ib_write_bw", *CLIENT)
    assert state.load_node(t.root).runtime == before


def test_lossy_traffic_raises_the_sequence_error_counters(twin):
    """Traffic on a priority without PFC: out_of_sequence / packet_seq_err rise with the packets sent; lossless
    traffic raises only the packet counters (dpusim.telemetry counters, what DTS and sysfs show)."""
    from dpusim import state, telemetry

    t = twin("bluefield3")

    def counters():
        with state.open_node(t.root, write=False) as node:
            port = next(p for p in ls.rdma_ports(node) if p["ibdev"] == "mlx5_0")
            return telemetry.counters(port["card"], port["fn"])

    assert t.run("ib_write_bw", *CLIENT)[0] == 0  # trust pcp, no PFC: lossy
    lossy = counters()
    assert lossy["port_xmit_packets"] > 0 and lossy["out_of_sequence"] == lossy["packet_seq_err"] > 0
    _qos(t, 3)
    assert t.run("ib_write_bw", *CLIENT)[0] == 0
    after = counters()
    assert after["port_xmit_packets"] > lossy["port_xmit_packets"]
    assert after["out_of_sequence"] == lossy["out_of_sequence"] and after["packet_seq_err"] == lossy["packet_seq_err"]


@pytest.mark.parametrize("profile, line", [
    ("bluefield2", " ibv_wr* API     : ON"),
    ("bluefield3", " ibv_wr* API     : ON\t\tUsing DDP      : OFF"),
    ("connectx7", " ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF"),
])
def test_ibv_wr_line_follows_the_profiles_perftest(twin, profile, line):
    """Issue 18 (7): perftest printed no DDP column before 25.01 and renamed it 'Enhanced Reorder' in 25.10
    (linux-rdma/perftest src/perftest_parameters.c, commits 1ed34b1 and 799923f); the twin prints its profile's."""
    t = twin(profile)
    rc, out, err = t.run("ib_write_bw", *CLIENT)
    assert rc == 0, err
    assert line in out.split("\n")


NET_CONF = ("NCCL_P2P_DISABLE=1\nNCCL_SHM_DISABLE=1\nNCCL_IB_HCA==mlx5_0:1\nNCCL_IB_GID_INDEX=1\nNCCL_IB_TC=104\n"
            "NCCL_NET_GDR_LEVEL=SYS\n")


def _net_busbw(t, conf: str = NET_CONF) -> float:
    path = t.root / "etc" / "nccl.conf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(conf)
    rc, out, err = t.run("all_reduce_perf", "-b", "8M", "-e", "128M", "-f", "2", "-g", "8")
    assert rc == 0, err
    return float([line for line in out.splitlines() if line.strip().startswith("134217728")][0].split()[7])


def _net_ready(t):
    """What stage 5 leaves: peermem loaded, ACS off on every bridge (on at boot), PFC on the RoCE priority."""
    with t.edit() as node:
        ls.load_peermem(node)
        for bridge in ls.pcie_bridges(node):
            ls.set_acs_ctl(node, bridge["address"], 0)
    _qos(t, 3)


def test_all_reduce_through_the_nic_follows_each_factor(twin):
    """With P2P and SHM off the ring goes through the NIC: the port's rate, then one factor per setting (peermem,
    ACS, GID index, PFC on the traffic's priority, NIC-GPU affinity through NCCL_NET_GDR_LEVEL)."""
    t = twin("bluefield3")
    _net_ready(t)
    good = _net_busbw(t)
    port = perftest.bandwidth_gbps(1024, True) / 8  # netdev MTU 1500 -> active 1024
    assert good == pytest.approx(port, rel=0.01)
    nvlink = _net_busbw(t, NET_CONF.replace("NCCL_SHM_DISABLE=1\n", ""))  # SHM allowed: NVLink P2P, not the NIC
    assert nvlink > 300

    assert _net_busbw(t, NET_CONF.replace("NCCL_NET_GDR_LEVEL=SYS", "NCCL_NET_GDR_LEVEL=PIX")) == pytest.approx(
        good * nccl_tests.STAGED_FACTOR, rel=0.01)  # affinity: every GPU is NODE/SYS from the card
    lossy = good * perftest.LOSSY_FACTOR
    assert _net_busbw(t, NET_CONF.replace("NCCL_IB_GID_INDEX=1", "NCCL_IB_GID_INDEX=0")) == pytest.approx(
        lossy, rel=0.01)  # RoCE v1: no DSCP, priority 0 without PFC
    assert _net_busbw(t, NET_CONF.replace("NCCL_IB_TC=104", "NCCL_IB_TC=160")) == pytest.approx(lossy, rel=0.01)
    (t.root / "etc" / "nccl.conf").write_text(NET_CONF.replace("NCCL_IB_GID_INDEX=1", "NCCL_IB_GID_INDEX=9"))
    rc, _out, err = t.run("all_reduce_perf", "-g", "8")
    assert rc == 1 and "NCCL_IB_GID_INDEX 9 is not a GID of mlx5_0" in err

    rc, _out, err = t.run("setpci", "-s", "0000:17:00.0", "ECAP_ACS+6.w=005d")
    assert rc == 0, err
    assert _net_busbw(t) == pytest.approx(good * nccl_tests.ACS_FACTOR, rel=0.01)
    assert t.run("setpci", "-s", "0000:17:00.0", "ECAP_ACS+6.w=0000")[0] == 0
    assert _net_busbw(t) == good

    rc, _out, err = t.run("mlnx_qos", "-i", "ens1f0np0", "--pfc", "0,0,0,0,0,0,0,0")
    assert rc == 0, err
    assert _net_busbw(t) == pytest.approx(lossy, rel=0.01)
    _qos(t, 3)
    with t.edit() as node:
        ls.unload_peermem(node)
    assert _net_busbw(t) == pytest.approx(good * nccl_tests.STAGED_FACTOR, rel=0.01)


def test_all_reduce_environment_wins_over_nccl_conf(twin, monkeypatch):
    t = twin("bluefield3")
    _net_ready(t)
    good = _net_busbw(t)
    monkeypatch.setenv("NCCL_IB_TC", "160")
    assert _net_busbw(t) == pytest.approx(good * perftest.LOSSY_FACTOR, rel=0.01)
    monkeypatch.setenv("NCCL_SHM_DISABLE", "0")
    assert _net_busbw(t) > 300
