"""dpusim SNAP: the namespaces SNAP emulates follow its pod and its RPC-init files, and the paired GPU host's
``nvme list`` shows them in nvme-cli's layout (src/dpusim/tools/nvme.py names the source)."""

from __future__ import annotations

import json

MANIFEST = """apiVersion: v1
kind: Pod
metadata:
  name: doca-snap
spec:
  containers:
    - name: doca-snap
      image: nvcr.io/nvidia/doca/doca_snap:4.5.0-doca2.9.0
"""
SPDK = ("# Managed by bluefleet\n"
        "bdev_nvme_attach_controller -b nvme0 -t tcp -a 192.0.2.10 -f ipv4 -s 4420 -n nqn.2026-01.org.example:s0\n")
SNAP = """nvme_subsystem_create --nqn nqn.2022-10.io.nvda.nvme:0
nvme_namespace_create -b nvme0n1 -n 1 --nqn nqn.2022-10.io.nvda.nvme:0
nvme_controller_create --nqn nqn.2022-10.io.nvda.nvme:0 --ctrl NVMeCtrl1 --pf_id 0 --suspended
nvme_controller_attach_ns -c NVMeCtrl1 -n 1
nvme_controller_resume -c NVMeCtrl1
"""


def _pair(twin, tmp_path):
    card = tmp_path / "card"
    host = twin("bluefield3", role="host", card_dir=card, name="host")
    dpu = twin("bluefield3", role="dpu", card_dir=card, name="dpu")
    return host, dpu


def _deploy(dpu, spdk=SPDK, snap=SNAP):
    conf = dpu.root / "etc" / "nvda_snap"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "spdk_rpc_init.conf").write_text(spdk)
    (conf / "snap_rpc_init.conf").write_text(snap)
    kdir = dpu.root / "etc" / "kubelet.d"
    kdir.mkdir(parents=True, exist_ok=True)
    (kdir / "doca_snap.yaml").write_text(MANIFEST)
    rc, _out, err = dpu.run("crictl", "ps")
    assert rc == 0, err


def _devices(host):
    rc, out, err = host.run("nvme", "list", "-o", "json")
    assert rc == 0, err
    return json.loads(out)["Devices"]


def test_no_snap_no_namespace(twin, tmp_path):
    host, _dpu = _pair(twin, tmp_path)
    assert _devices(host) == []
    rc, out, err = host.run("nvme", "list")
    assert (rc, out, err) == (0, "", "No NVMe devices detected.\n")


def test_snap_namespace_visible_on_the_paired_host(twin, tmp_path):
    host, dpu = _pair(twin, tmp_path)
    _deploy(dpu)
    [dev] = _devices(host)
    assert dev["DevicePath"] == "/dev/nvme0n1" and dev["NameSpace"] == 1
    assert dev["ModelNumber"] == "BlueField NVMe SNAP Controller"
    assert dev["PhysicalSize"] == 1953125000 * 512 and dev["SectorSize"] == 512
    rc, out, _err = host.run("nvme", "list")
    lines = out.splitlines()
    assert lines[0].startswith("Node                  Generic               SN                   Model")
    assert lines[1].split(" ") == ["-" * w for w in (21, 21, 20, 40, 10, 26, 16, 8)]
    assert lines[2][:44] == "/dev/nvme0n1          /dev/ng0n1            "
    assert "0x1" in lines[2] and "  1.00  TB /   1.00  TB" in lines[2] and "512   B +  0 B" in lines[2]
    record = dpu.card().data["snap"]["namespaces"][0]
    assert record["target_nqn"] == "nqn.2026-01.org.example:s0" and record["address"] == "192.0.2.10"


def test_namespace_goes_with_the_pod_and_with_a_crash_that_stays_down(twin, tmp_path):
    host, dpu = _pair(twin, tmp_path)
    _deploy(dpu)
    rc, _o, err = dpu.cli("kubelet", "crash", "doca-snap", "--stay-down")
    assert rc == 0, err
    assert _devices(host) == []
    (dpu.root / "etc" / "kubelet.d" / "doca_snap.yaml").unlink()
    (dpu.root / "etc" / "kubelet.d" / "doca_snap.yaml").write_text(MANIFEST + "# new\n")
    dpu.run("crictl", "ps")
    assert len(_devices(host)) == 1
    (dpu.root / "etc" / "kubelet.d" / "doca_snap.yaml").unlink()
    dpu.run("crictl", "ps")
    assert _devices(host) == []


def test_crash_that_the_kubelet_restarts_shows_the_namespace_again(twin, tmp_path):
    host, dpu = _pair(twin, tmp_path)
    _deploy(dpu)
    rc, _o, err = dpu.cli("kubelet", "crash", "doca-snap")
    assert rc == 0, err
    assert _devices(host) == []
    dpu.run("crictl", "ps")
    assert len(_devices(host)) == 1


def test_namespace_without_a_tcp_target_or_controller_is_not_exposed(twin, tmp_path):
    host, dpu = _pair(twin, tmp_path)
    _deploy(dpu, spdk="", snap=SNAP)
    assert _devices(host) == []
    assert "no such bdev" in dpu.card().data["snap"]["problems"][0]
    _deploy(dpu, snap=SNAP.replace("nvme_controller_resume -c NVMeCtrl1\n", ""))
    assert _devices(host) == []


def test_nvme_rejects_other_commands(twin, tmp_path):
    host, _dpu = _pair(twin, tmp_path)
    rc, _out, err = host.run("nvme", "id-ctrl", "/dev/nvme0")
    assert rc == 1 and "nvme list" in err


def test_subsystem_model_and_serial_options_reach_the_host(twin, tmp_path):
    host, dpu = _pair(twin, tmp_path)
    _deploy(dpu, snap=SNAP.replace("nvme:0\n", "nvme:0 --mn 'Acme Emulated NVMe' --sn ACME0001\n", 1))
    [dev] = _devices(host)
    assert (dev["ModelNumber"], dev["SerialNumber"]) == ("Acme Emulated NVMe", "ACME0001")
