"""playbooks/fabric.yml, GPUDirect and NCCL plays (``--tags gpudirect,nccl``), against the device twin.

The RoCE fact is given as an extra variable (the RoCE play is not run here), so these tests prove the
GPU host and NCCL plays on their own: the four runs (check, apply, apply, check), a reboot of the twin
(nvidia_peermem unloaded and ACS back on, the modules-load.d file and the ACS unit kept; the next run
loads nvidia_peermem and turns ACS off again and changes nothing else), bad input (peermem EINVAL on one
host, a NIC that does not exist on the other: a clear error and nothing written), and the opt-in
benchmark playbook with thresholds.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import BIN, make_sim_inventory, run_playbook

ROCE = {"priority": 3, "dscp": 26, "cnp_dscp": 48, "tos": 104, "traffic_class": 104, "mtu": 4096, "gid_index": 3,
        "ibdevs": ["mlx5_0", "mlx5_1"], "netdevs": ["ens1f0np0", "ens1f1np1"]}
TAGS = "--tags gpudirect,nccl"
HOSTS = ("sim01", "sim02")
# The twin's host: 8 GPUs, one BlueField-3 (mlx5_0, mlx5_1) on NUMA node 1; GPU0-3 reach it across the SMP
# interconnect (SYS), GPU4-7 within the node (NODE): nvidia-smi topo -m of the twin, closest NIC = NIC0.
EXPECTED_CONF = {"NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "=mlx5_0:1", "NCCL_IB_TC": "104",
                 "NCCL_NET_GDR_LEVEL": "SYS", "NCCL_SOCKET_IFNAME": "=ens1f0np0"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    base = tmp_path_factory.mktemp("gpudirect")
    inventory = make_sim_inventory(base / "inventory", nodes=2)
    extra = base / "roce.json"
    extra.write_text(json.dumps({"bluefleet_roce": ROCE}))
    return inventory, extra, base / "inventory" / "state"


def _files(state, host):
    root = state / host
    return {
        "peermem_conf": (root / "etc/modules-load.d/nvidia-peermem.conf").is_file(),
        "registered": (root / "sys/kernel/mm/memory_peers/nv_mem/version").is_file(),
        "nccl_conf": (root / "etc/nccl.conf").is_file(),
        "nccl_env": (root / "etc/profile.d/nccl.sh").is_file(),
        "acs_unit": (root / "etc/systemd/system/bluefleet-pci-acs.service").is_file(),
    }


def _acs_words(state, host):
    """ACS control of every twin bridge of ``host``, read with the twin's setpci."""
    env = {"DPUSIM_ROOT": str(state / host), "PATH": "%s:/usr/bin:/bin" % (state / host / "bin")}
    out = subprocess.run(["lspci", "-D", "-vvv"], capture_output=True, text=True, env=env, check=True, timeout=60)
    bridges = [line.split()[0] for line in out.stdout.splitlines() if " PCI bridge: " in line]
    assert bridges, out.stdout
    return {b: subprocess.run(["setpci", "-s", b, "ECAP_ACS+6.w"], capture_output=True, text=True, env=env,
                              check=True, timeout=60).stdout.strip() for b in bridges}


def _changed(run):
    return {h: n for h, n in (run["stats"].get("changed") or {}).items() if n}


def _conf(path):
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def _nccl_files_changed(run):
    """Host -> the paths the NCCL files task wrote (or, in check mode, would write)."""
    return {e["event_data"]["host"]: e["event_data"]["res"]["changed_paths"] for e in run["events"]
            if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == NCCL_FILES_TASK}


NCCL_FILES_TASK = "Write the NCCL configuration file and the shell profile that exports the settings"


def test_four_runs_reboot_and_persistence(fleet):
    inventory, extra, state = fleet
    first = run_playbook("playbooks/fabric.yml", inventory, TAGS, "-e", "@%s" % extra, "--check", "--diff")
    # peermem, ACS and the one task that writes nccl.conf and nccl.sh (and their directories) would change on each
    # host
    assert _changed(first) == {"sim01": 3, "sim02": 3}, first["stdout"][-3000:]
    both = ["/etc/nccl.conf", "/etc/profile.d/nccl.sh"]
    assert _nccl_files_changed(first) == {"sim01": both, "sim02": both}
    for host in HOSTS:
        assert not any(_files(state, host).values()), "check mode touched %s: %s" % (host, _files(state, host))
        assert set(_acs_words(state, host).values()) == {"001d"}, "check mode changed ACS on %s" % host

    apply = run_playbook("playbooks/fabric.yml", inventory, TAGS, "-e", "@%s" % extra)
    assert _changed(apply) == {"sim01": 3, "sim02": 3}, apply["stdout"][-3000:]
    # the stage alone reads the topology itself (site.yml takes preflight's read: test_site_sim.py)
    assert sorted(e["event_data"]["host"] for e in apply["events"] if e.get("event") == "runner_on_ok"
                  and e["event_data"].get("task") == "Read the GPU-NIC topology") == list(HOSTS)
    assert _nccl_files_changed(apply) == {"sim01": both, "sim02": both}
    for host in HOSTS:
        assert all(_files(state, host).values()), "%s after apply: %s" % (host, _files(state, host))
        assert _conf(state / host / "etc/nccl.conf") == EXPECTED_CONF
        profile = (state / host / "etc/profile.d/nccl.sh").read_text()
        assert "export NCCL_IB_TC=104\n" in profile and "export NCCL_IB_HCA==mlx5_0:1\n" in profile
        words = _acs_words(state, host)
        assert set(words.values()) == {"0000"} and len(words) == 9  # 8 GPUs + 1 card
        unit = (state / host / "etc/systemd/system/bluefleet-pci-acs.service").read_text()
        assert all("-s %s ECAP_ACS+6.w=0000" % b in unit for b in words)

    again = run_playbook("playbooks/fabric.yml", inventory, TAGS, "-e", "@%s" % extra)
    assert _changed(again) == {}, again["stdout"][-3000:]
    assert _nccl_files_changed(again) == {"sim01": [], "sim02": []}
    last = run_playbook("playbooks/fabric.yml", inventory, TAGS, "-e", "@%s" % extra, "--check", "--diff")
    assert _changed(last) == {}, last["stdout"][-3000:]

    subprocess.run([str(BIN / "dpusim"), "--root", str(state / "sim01"), "reboot"], check=True, timeout=120,
                   capture_output=True)
    lsmod = subprocess.run([str(state / "sim01" / "bin" / "lsmod")], capture_output=True, text=True, timeout=60,
                           env={"DPUSIM_ROOT": str(state / "sim01"), "PATH": "/usr/bin:/bin"}, check=True)
    assert "nvidia_peermem" not in lsmod.stdout, "the reboot kept nvidia_peermem loaded"
    assert _files(state, "sim01")["peermem_conf"], "the reboot removed the modules-load.d file"
    assert set(_acs_words(state, "sim01").values()) == {"001d"}, "ACS control survived the reboot"
    assert _files(state, "sim01")["acs_unit"], "the reboot removed the ACS unit"

    after_reboot = run_playbook("playbooks/fabric.yml", inventory, TAGS, "-e", "@%s" % extra)
    # nvidia_peermem loaded and ACS turned off again; the files are unchanged
    assert _changed(after_reboot) == {"sim01": 2}, after_reboot["stdout"][-3000:]
    assert "Load nvidia_peermem and check its registration" in after_reboot["stdout"]
    assert _files(state, "sim01")["registered"]


def test_bad_input_fails_clearly_and_writes_nothing(tmp_path):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=2)
    state = tmp_path / "inventory" / "state"
    extra = tmp_path / "roce.json"
    extra.write_text(json.dumps({"bluefleet_roce": ROCE, "nccl_hca": ["mlx5_9"]}))
    # the inventory creates the twin roots when it is parsed; the fault needs sim01's root
    run_playbook("playbooks/fabric.yml", inventory, "--list-hosts")
    subprocess.run([str(BIN / "dpusim"), "--root", str(state / "sim01"), "fault", "set", "peermem_einval"],
                   check=True, timeout=60, capture_output=True)
    run = run_playbook("playbooks/fabric.yml", inventory, TAGS, "-e", "@%s" % extra, check=False)
    assert run["rc"] != 0
    out = run["stdout"]
    assert "could not insert 'nvidia_peermem': Invalid argument" in out
    assert "built against another MOFED/DOCA-OFED" in out
    assert "hca names mlx5_9, not a RoCE NIC of this host" in out
    assert set(run["stats"].get("failures") or {}) == {"sim01", "sim02"}
    assert _files(state, "sim01") == dict.fromkeys(("peermem_conf", "registered", "nccl_conf", "nccl_env",
                                                    "acs_unit"), False)
    assert not _files(state, "sim02")["nccl_conf"] and not _files(state, "sim02")["nccl_env"]


def test_fabric_benchmark_thresholds(fleet):
    """After the GPUDirect play (nvidia_peermem loaded), ib_write_bw in GPU memory between sim01 (server) and
    sim02 (client) and all_reduce_perf on each host pass their thresholds; a threshold above the twin's
    result fails with the measured number and what to check. Without the RoCE play PFC is off: the twin
    reports the lossy rate (about 110 Gb/s on its 200 G port at MTU 1024)."""
    inventory, extra, state = fleet
    if not all(_files(state, host)["registered"] for host in HOSTS):  # not left so by the test before
        run_playbook("playbooks/fabric.yml", inventory, TAGS, "-e", "@%s" % extra)
    ok = run_playbook("playbooks/fabric_benchmark.yml", inventory, "-e", "fabric_benchmark_tcp_port=24117",
                      "-e", "fabric_benchmark_min_bw_gbps=100", "-e", "fabric_benchmark_min_busbw=300",
                      "-e", "fabric_benchmark_duration=2")
    assert "sim02 -> sim01: 109.52 Gb/s average (MTU 1024, GID 1, ToS 104, GPU memory True)" in ok["stdout"]
    assert "353.5 GB/s bus bandwidth at the largest message" in ok["stdout"]
    slow = run_playbook("playbooks/fabric_benchmark.yml", inventory, "-e", "fabric_benchmark_tcp_port=24118",
                        "-e", "fabric_benchmark_min_bw_gbps=150", "-e", "fabric_benchmark_min_busbw=400",
                        "-e", "fabric_benchmark_duration=2", check=False)
    assert slow["rc"] != 0
    assert "average 109.52 Gb/s to sim01 is below min_bw_gbps 150" in slow["stdout"]
    assert "bus bandwidth 353.50 GB/s at 134217728 bytes is below min_busbw 400" in slow["stdout"]
