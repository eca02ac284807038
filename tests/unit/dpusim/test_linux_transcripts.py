"""Transcript tests: the twin's Linux/RDMA/GPU renderers against ``../shared/corpus``.

Each test builds the plain data a sample shows (a scenario) and compares the rendered text with the sample:
exactly where the sample is ``verbatim``; after expanding TABs where the publisher expanded them; after
normalising runs of blanks where it went through ``column -t``; as a prefix / contiguous slice / ordered
subsequence where the sample is truncated, partial or abridged.

Covered samples (file -> test):
- devlink/bf-dpu-devlink-port-representors-nova-spec ............ test_devlink_port_nova_spec (exact)
- devlink/cx6-eswitch-show-switchdev ............................. test_devlink_eswitch_show (exact)
- devlink/cx6dx-devlink-dev-info-pending-fw-fail ................. test_devlink_dev_info (exact)
- devlink/ecpf-host-pf-rep-port-function-state ................... test_devlink_port_function_state (exact output
  lines; the '$ ' prompt lines are the publisher's) and, through the tool, test_linux_tools
- devlink/sf-devlink-dev-and-port-show-aux ....................... test_devlink_dev_show_and_sf_port (exact)
- devlink/param-show-flow-steering-regression-error .............. test_devlink_param_layout (the first three lines:
  handle / name / values layout; the missing value line there is the kernel bug the mail reports)
- ethtool/bf3-host-ethtool-i-rhel94-aarch64 ...................... test_ethtool_driver_info (exact)
- ethtool/*-k-grep-esp-* (3 files) ............................... test_ethtool_k_grep_esp (exact, after grep)
- mlnx_qos/cx-dscp-ets-pfc5-partial .............................. test_mlnx_qos_dscp_prefix (prefix, tabs->spaces)
- mlnx_qos/fixture-tabs-pcp ...................................... test_mlnx_qos_pcp_fixture (ordered subsequence:
  the fixture is abridged)
- show_gids/cx7-vf-net1-container ................................ test_show_gids (exact)
- ibv_devinfo/cx7-roce-and-cx6-partial-deepep38 .................. test_ibv_devinfo_partial (contiguous slice,
  tabs->spaces)
- ibdev2netdev/h100-cx7-ib-cx6-eth-column-t-commented ............ test_ibdev2netdev_column_t (comments removed,
  blanks normalised)
- rdma/sf-rdma-link-and-dev-show-parav ........................... test_rdma_link_and_dev (exact)
- nvidia-smi/h100-1gpu-550-no-processes .......................... test_nvidia_smi_table (exact)
- nvidia-smi/topo-mp-L40S-10nics ................................. test_nvidia_smi_topo_mp (exact)
- lspci/bf2-lspci-4-functions, bf3-host-lspci-grep-bluefield-3,
  cx4-lspci-grep-mellanox-vfs .................................... test_lspci (exact)
- lsmod/gpu-operator-doc-lsmod-grep-nvidia ....................... test_lsmod_grep_nvidia (exact, after grep)
- lsmod/nvidia-580-mlx5-fwctl-lsmod-grep ......................... test_lsmod_580_prefix (prefix: truncated)

Not covered, and why:
- devlink/cx6dx-devlink-dev-info-error-no-data: a firmware-state error of one kernel release (no twin fault for it).
- devlink/mlx5-devlink-monitor-param-new-partial: ``devlink monitor`` is not modelled.
- ethtool/cx4-ethtool-link: link settings (``ethtool IF``) are not modelled; the real ethtool answers.
- nvidia-smi/h100-535-older-layout-partial: the twin renders the current (550) layout only.
- lspci/bf2-lspci-vv-vpd-fixture: ``lspci -vv`` is passed to the real lspci.
- ibstat/*, ip/*, perftest/*, nccl-tests/*: not tools of this task (ibstat, ip, ib_write_bw, all_reduce_perf).
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from shared_corpus import SHARED, require_shared

from dpusim.render import devlink, ethtool, gpu, qos, rdma, system

CORPUS = SHARED / "corpus"


def sample(rel: str) -> str:
    """The body of a corpus sample; "not run: no ../shared" without the corpus (a failure under CI=true)."""
    path = require_shared("corpus") / rel
    if not path.exists():
        pytest.fail(f"corpus sample {path} is missing from ../shared/corpus")
    text = path.read_text(encoding="utf-8")
    return text.split("# ---\n", 1)[1]


def lines(text: str) -> list[str]:
    return text.splitlines()


def is_subsequence(needle: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(n == h for h in it) for n in needle)


def is_slice(needle: list[str], hay: list[str]) -> bool:
    n = len(needle)
    return any(hay[i:i + n] == needle for i in range(len(hay) - n + 1))


# ------------------------------------------------------------------------------------------------ devlink

def test_devlink_port_nova_spec():
    ports = []
    for pf, (uplink_idx, base) in enumerate(((262143, 196608), (327679, 262144))):
        ports.append({"handle": f"pci/0000:03:00.{pf}/{uplink_idx}", "type": "eth", "netdev": f"p{pf}",
                      "flavour": "physical", "port": pf})
        ports.append({"handle": f"pci/0000:03:00.{pf}/{base}", "type": "eth", "netdev": f"pf{pf}hpf",
                      "flavour": "pcipf", "pfnum": pf})
        for vf in range(4):
            ports.append({"handle": f"pci/0000:03:00.{pf}/{base + 1 + vf}", "type": "eth", "netdev": f"pf{pf}vf{vf}",
                          "flavour": "pcivf", "pfnum": pf, "vfnum": vf})
    assert devlink.port_show(ports) == sample("devlink/bf-dpu-devlink-port-representors-nova-spec.txt")


def test_devlink_eswitch_show():
    text = "".join(devlink.eswitch_show([{"handle": h, "mode": "switchdev", "inline_mode": "none",
                                          "encap_mode": "basic"}]) for h in ("pci/0000:0f:00.0", "pci/0000:92:00.0"))
    assert text == sample("devlink/cx6-eswitch-show-switchdev.txt")


def test_devlink_dev_info():
    dev = {"handle": "pci/0000:00:06.0", "driver": "mlx5_core", "serial_number": "xxx...",
           "board.serial_number": "MT2225300179",
           "versions": {"fixed": {"fw.psid": "MT_0000000436"},
                        "running": {"fw.version": "22.41.0188", "fw": "22.41.0188"},
                        "stored": {"fw.version": "255.255.65535", "fw": "255.255.65535"}}}
    assert devlink.dev_info([dev]) == sample("devlink/cx6dx-devlink-dev-info-pending-fw-fail.txt")


def _ecpf_port(fn_state: str) -> dict:
    return {"handle": "pci/0000:03:00.0/196608", "type": "eth", "netdev": "eth1", "flavour": "pcipf", "controller": 1,
            "pfnum": 0, "external": True, "splittable": False,
            "function": {"hw_addr": "a0:88:c2:45:17:7c", "state": fn_state,
                         "opstate": "attached" if fn_state == "active" else "detached", "roce": "enable",
                         "max_io_eqs": 120}}


def test_devlink_port_function_state():
    want = [line for line in lines(sample("devlink/ecpf-host-pf-rep-port-function-state.txt"))
            if not line.startswith("$ ")]
    got = lines(devlink.port_show([_ecpf_port("active")]) + devlink.port_show([_ecpf_port("inactive")]))
    assert got == want


def test_devlink_dev_show_and_sf_port():
    text = devlink.dev_show(["pci/0000:06:00.0", "auxiliary/mlx5_core.sf.4"]) + devlink.port_show(
        [{"handle": "auxiliary/mlx5_core.sf.4/1", "type": "eth", "netdev": "p0sf88", "flavour": "virtual", "port": 0,
          "splittable": False}])
    assert text == sample("devlink/sf-devlink-dev-and-port-show-aux.txt")


def test_devlink_param_layout():
    published = lines(sample("devlink/param-show-flow-steering-regression-error.txt"))
    assert published[0].startswith("# devlink dev param show")
    got = lines(devlink.param_show([("pci/0000:24:00.0", [{"name": "flow_steering_mode", "type": "driver-specific",
                                                             "values": []}])]))
    assert got == published[1:4]


def test_devlink_json_shapes():
    out = devlink.eswitch_show([{"handle": "pci/0000:03:00.0", "mode": "switchdev", "inline_mode": "none",
                                 "encap_mode": "basic"}], as_json=True)
    assert out == ('{"dev":{"pci/0000:03:00.0":{"mode":"switchdev","inline-mode":"none","encap-mode":"basic"}}}\n')
    params = devlink.param_show([("pci/0000:03:00.0", [{"name": "flow_steering_mode", "type": "driver-specific",
                                                          "values": [{"cmode": "runtime", "value": "dmfs"}]}])],
                                as_json=True)
    assert params == ('{"param":{"pci/0000:03:00.0":[{"name":"flow_steering_mode","type":"driver-specific",'
                      '"values":[{"cmode":"runtime","value":"dmfs"}]}]}}\n')
    pretty = devlink.port_show([_ecpf_port("active")], as_json=True, pretty=True)
    assert pretty.startswith('{\n    "port": {\n        "pci/0000:03:00.0/196608": {\n            "type": "eth",')
    assert '"external": true' in pretty and '"max_io_eqs": 120' in pretty


# ------------------------------------------------------------------------------------------------ ethtool

def test_ethtool_driver_info():
    info = {"driver": "mlx5_core", "version": "5.14.0-427.50.1.el9_4.aarch64",
            "firmware_version": "32.43.1014 (MT_0000000884)", "expansion_rom_version": "", "bus_info": "0002:01:00.0",
            "supports_statistics": "yes", "supports_test": "yes", "supports_eeprom_access": "no",
            "supports_register_dump": "no", "supports_priv_flags": "yes"}
    assert ethtool.driver_info(info) == sample("ethtool/bf3-host-ethtool-i-rhel94-aarch64.txt")


def _grep(text: str, word: str) -> str:
    return "".join(line + "\n" for line in lines(text) if word in line)


@pytest.mark.parametrize(("rel", "feats"), [
    ("ethtool/cx6dx-ethtool-k-grep-esp-working.txt",
     {"tx-esp-segmentation": {"active": True, "fixed": False}, "esp-hw-offload": {"active": True, "fixed": True},
      "esp-tx-csum-hw-offload": {"active": True, "fixed": True}}),
    ("ethtool/bond-ethtool-k-grep-esp-after-fix.txt",
     {"tx-esp-segmentation": {"active": True, "fixed": False}, "esp-hw-offload": {"active": True, "fixed": False},
      "esp-tx-csum-hw-offload": {"active": True, "fixed": False}}),
    ("ethtool/bond-ethtool-k-grep-esp-before-fix.txt",
     {"tx-esp-segmentation": {"active": False, "fixed": False, "requested": True},
      "esp-hw-offload": {"active": True, "fixed": False}, "esp-tx-csum-hw-offload": {"active": True, "fixed": False}}),
])
def test_ethtool_k_grep_esp(rel, feats):
    want = sample(rel)
    if "dmesg" in (CORPUS / rel).read_text().split("# ---", 1)[0]:
        want = "".join(line + "\n" for line in lines(want) if not line.startswith("["))  # the dmesg lines
    all_feats = {"rx-checksum": {"active": True, "fixed": False}, "hw-tc-offload": {"active": False, "fixed": False},
                 **feats}
    assert _grep(ethtool.features("enp3s0f0np0", all_feats), "esp") == want


def test_ethtool_k_listing_layout_matches_real_lo_capture():
    # Layout check against the real `ethtool -k lo` (ethtool 6.1, kernel 6.18) captured on the development machine:
    # group lines, TAB-indented members, then kernel order. Head of that capture (verbatim):
    real_head = ("Features for lo:\nrx-checksumming: on [fixed]\ntx-checksumming: on\n"
                 "\ttx-checksum-ipv4: off [fixed]\n\ttx-checksum-ip-generic: on [fixed]\n"
                 "\ttx-checksum-ipv6: off [fixed]\n\ttx-checksum-fcoe-crc: off [fixed]\n"
                 "\ttx-checksum-sctp: on [fixed]\nscatter-gather: on\n\ttx-scatter-gather: on [fixed]\n"
                 "\ttx-scatter-gather-fraglist: on [fixed]\n")
    feats = {"rx-checksum": (True, True), "tx-checksum-ipv4": (False, True), "tx-checksum-ip-generic": (True, True),
             "tx-checksum-ipv6": (False, True), "tx-checksum-fcoe-crc": (False, True),
             "tx-checksum-sctp": (True, True), "tx-scatter-gather": (True, True),
             "tx-scatter-gather-fraglist": (True, True)}
    text = ethtool.features("lo", {k: {"active": a, "fixed": f} for k, (a, f) in feats.items()})
    assert text == real_head


def test_ethtool_apply_changes_real_behaviour():
    feats = {"hw-tc-offload": {"active": False, "fixed": True}, "esp-hw-offload": {"active": False, "fixed": True},
             "tx-gso-list": {"active": True, "fixed": False}, "tx-checksum-ipv4": {"active": False, "fixed": True}}
    # ethtool -K lo hw-tc-offload on  (real: stdout "Actual changes:" + line, stderr "Could not change...", rc 1)
    _, out, err, rc = ethtool.apply_changes("lo", feats, [("hw-tc-offload", True)])
    assert (out, err, rc) == ("Actual changes:\nhw-tc-offload: off [requested on]\n",
                              "Could not change any device features\n", 1)
    # ethtool -K lo tx-gso-list off tx-checksum-ipv4 on  (real: rc 0, both listed in kernel order)
    new, out, err, rc = ethtool.apply_changes("lo", feats, [("tx-gso-list", False), ("tx-checksum-ipv4", True)])
    assert (out, err, rc) == ("Actual changes:\ntx-checksum-ipv4: off [requested on]\ntx-gso-list: off\n", "", 0)
    assert new["tx-gso-list"]["active"] is False
    # unknown names: offsets as the real tool printed them (52 for the first name on "lo", 76 after tx-gso-list on)
    _, _, err, rc = ethtool.apply_changes("lo", feats, [("bogus", True)])
    assert (err, rc) == ("netlink error: bit name not found (offset 52)\nnetlink error: Operation not supported\n", 92)
    _, _, err, rc = ethtool.apply_changes("lo", feats, [("tx-gso-list", True), ("bogus", True)])
    assert "offset 76" in err


# ------------------------------------------------------------------------------------------------ mlnx_qos

def _qos_dscp_sample_state() -> dict:
    table = qos.default_app_table()
    for dscp, prio in ((40, 4), (40, 5), (48, 7), (48, 6)):  # re-set 40 and 48: they move to the table head
        table = qos.app_table_set(table, dscp, prio)
    return {"dcbx": "os", "trust": "dscp", "app_table": table,
            "buffer_size": [19872, 220896, 0, 0, 0, 0, 0, 0], "max_buffer_size": 4151520, "cable_len": 30,
            "pfc": [0, 0, 0, 0, 0, 1, 0, 0], "prio2buffer": [0, 0, 0, 0, 0, 1, 0, 0], "prio_tc": list(range(8)),
            "tsa": ["ets"] * 4 + ["strict"] * 4, "tc_bw": [9, 1, 80, 10, 0, 0, 0, 0], "ratelimit": [0] * 8}


def test_mlnx_qos_dscp_prefix():
    want = [line.expandtabs() for line in lines(sample("mlnx_qos/cx-dscp-ets-pfc5-partial.txt"))]
    got = [line.expandtabs() for line in lines(qos.mlnx_qos(_qos_dscp_sample_state()))]
    assert got[:len(want)] == want
    assert got[len(want)] == "tc: 4 ratelimit: unlimited, tsa: strict"


def test_mlnx_qos_pcp_fixture():
    want = lines(sample("mlnx_qos/fixture-tabs-pcp.txt"))
    q = dict(_qos_dscp_sample_state(), trust="pcp", app_table=[], cable_len=7, pfc=[0] * 8, prio2buffer=[1] * 8)
    got = lines(qos.mlnx_qos(q))
    assert is_subsequence(want, got), got


def test_mlnx_qos_dscp2prio_wraps_after_eight_values():
    q = dict(_qos_dscp_sample_state(), app_table=[(d, 3) for d in range(10)])
    got = lines(qos.mlnx_qos(q))
    assert "\tprio:3 dscp:00,01,02,03,04,05,06,07," in got and "\tprio:3 dscp:08,09," in got


# ------------------------------------------------------------------------------------------------ RDMA

def test_show_gids():
    rows = [{"dev": "mlx5_3", "port": 1, "index": i, "ver": ver, "netdev": "net1", "gid": gid}
            for i, (gid, ver) in enumerate([("fe80:0000:0000:0000:0cb0:10ff:fe34:0aad", "v1"),
                                            ("fe80:0000:0000:0000:0cb0:10ff:fe34:0aad", "v2"),
                                            ("0000:0000:0000:0000:0000:ffff:c0a8:0a02", "v1"),
                                            ("0000:0000:0000:0000:0000:ffff:c0a8:0a02", "v2")])]
    assert rdma.show_gids(rows) == sample("show_gids/cx7-vf-net1-container.txt")


def _hca(name: str, fw: str, guid: str, part: int, board: str) -> dict:
    return {"hca_id": name, "transport": 0, "fw_ver": fw, "node_guid": guid, "sys_image_guid": guid,
            "vendor_id": 0x02C9, "vendor_part_id": part, "hw_ver": 0, "board_id": board,
            "ports": [{"port": 1, "state": "ACTIVE", "max_mtu": 4096, "active_mtu": 4096, "sm_lid": 0, "port_lid": 0,
                       "port_lmc": 0, "link_layer": "Ethernet"}]}


def test_ibv_devinfo_partial():
    want = lines(sample("ibv_devinfo/cx7-roce-and-cx6-partial-deepep38.txt"))
    text = rdma.ibv_devinfo([_hca("mlx5_1", "28.42.1000", "a088:c203:007e:1dbb", 4129, "MT_0000000838"),
                             _hca("mlx5_2", "28.42.1000", "a088:c203:007e:1dba", 4129, "MT_0000000838")])
    got = [line.expandtabs() for line in lines(text)]
    assert is_slice(want, got), "\n".join(got)


def test_ibv_devinfo_verbose_gid_lines():
    h = _hca("mlx5_0", "32.41.1000", "946d:ae03:004f:296a", 41692, "MT_0000000998")
    h["caps"] = {}
    h["ports"][0].update({"max_msg_sz": 0x40000000, "port_cap_flags": 0x04010000, "port_cap_flags2": 0,
                          "pkey_tbl_len": 1, "gid_tbl_len": 255, "active_width": "4", "active_width_code": 2,
                          "active_speed": "50.0 Gbps", "active_speed_code": 64, "phys_state": "LINK_UP",
                          "phys_state_code": 5,
                          "gids": [(0, "fe80:0000:0000:0000:966d:aeff:fe4f:296a", "v1"),
                                   (1, "fe80:0000:0000:0000:966d:aeff:fe4f:296a", "v2"),
                                   (2, "0000:0000:0000:0000:0000:ffff:c0a8:0a02", "v2")]})
    got = lines(rdma.ibv_devinfo([h], verbose=True))
    assert "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:966d:aeff:fe4f:296a, RoCE v1" in got
    assert "\t\t\tGID[  1]:\t\tfe80::966d:aeff:fe4f:296a, RoCE v2" in got
    assert "\t\t\tGID[  2]:\t\t::ffff:192.168.10.2, RoCE v2" in got
    assert "\tmax_qp:\t\t\t\t0" in got and got[-1] == ""


def test_ibdev2netdev_column_t():
    published = lines(sample("ibdev2netdev/h100-cx7-ib-cx6-eth-column-t-commented.txt"))
    want = [" ".join(line.split("#", 1)[0].split()) for line in published]
    rows = []
    for line in want:
        ibdev, _, port, _, netdev, link = line.split()
        rows.append({"ibdev": ibdev, "port": int(port), "netdev": netdev, "link": link.strip("()")})
    rows.reverse()  # the renderer sorts like `ls /sys/class/infiniband`
    got = [" ".join(line.split()) for line in lines(rdma.ibdev2netdev(rows))]
    assert got == want


def test_ibdev2netdev_verbose_layout():
    row = {"ibdev": "mlx5_0", "port": 1, "netdev": "p0", "link": "Up", "pci": "0000:03:00.0", "devid": 41692,
           "partid": "900-9D3B6", "desc": "BlueField-3", "fw": "32.41.1000", "state": "ACTIVE"}
    assert rdma.ibdev2netdev([row], verbose=True) == (
        "0000:03:00.0 mlx5_0 (MT41692 - 900-9D3B6  ) BlueField-3     fw 32.41.1000 port 1 (ACTIVE) ==> p0 (Up)\n")


def test_rdma_link_and_dev():
    text = rdma.rdma_link([{"ibdev": "mlx5_0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP",
                            "netdev": "p0sf88"}])
    text += rdma.rdma_dev([
        {"index": 8, "ibdev": "rocep6s0f1", "node_type": "ca", "fw": "16.29.0550", "node_guid": "248a:0703:00b3:d113",
         "sys_image_guid": "248a:0703:00b3:d112"},
        {"index": 13, "ibdev": "mlx5_0", "node_type": "ca", "fw": "16.29.0550", "node_guid": "0000:00ff:fe00:8888",
         "sys_image_guid": "248a:0703:00b3:d112"}])
    assert text == sample("rdma/sf-rdma-link-and-dev-show-parav.txt")


def test_cma_roce_lines():
    assert qos.cma_roce_mode(2) == "RoCE v2\n" and qos.cma_roce_mode(1) == "IB/RoCE v1\n"
    assert qos.cma_roce_tos(106) == "106\n"


# ------------------------------------------------------------------------------------------------ nvidia-smi

def test_nvidia_smi_table():
    info = {"driver_version": "550.127.08", "cuda_version": "12.4",
            "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "persistence": "On", "bus_id": "00000000:C3:00.0",
                      "disp_a": "Off", "ecc": "0", "fan": "N/A", "temp_c": 26, "perf": "P0", "power_w": 75,
                      "power_cap_w": 700, "mem_used_mib": 1, "mem_total_mib": 81559, "util_pct": 0,
                      "compute_mode": "Default", "mig": "Disabled"}]}
    got = gpu.table(info, dt.datetime(2026, 8, 12, 10, 50, 31))
    assert got == sample("nvidia-smi/h100-1gpu-550-no-processes.txt")


def test_nvidia_smi_date_line_pads_the_day():
    assert gpu.date_line(dt.datetime(2025, 10, 6, 3, 29, 21)) == "Mon Oct  6 03:29:21 2025"


def test_nvidia_smi_topo_mp():
    nics = [f"NIC{i}" for i in range(10)]
    devices = [{"name": "GPU0", "cpu_affinity": "0,2,4,6,8,10", "numa_affinity": "0", "gpu_numa_id": "N/A"}]
    devices += [{"name": n, "nic": f"mlx5_{i}"} for i, n in enumerate(nics)]
    matrix = {}
    for a in devices:
        for b in devices:
            x, y = a["name"], b["name"]
            if x != y:
                pix = x in nics[1:] and y in nics[1:]
                matrix[(x, y)] = "PIX" if pix else "NODE"
    assert gpu.topo(devices, matrix, nvlink_legend=False) == sample("nvidia-smi/topo-mp-L40S-10nics.txt")


# ------------------------------------------------------------------------------------------------ lspci / lsmod

def _fn(addr, cls, cid, dname, did, rev="01"):
    return {"address": addr, "class_name": cls, "class_id": cid, "vendor_name": "Mellanox Technologies",
            "vendor_id": "15b3", "device_name": dname, "device_id": did, "rev": rev}


BF2 = "MT42822 BlueField-2 integrated ConnectX-6 Dx network controller"
BF3 = "MT43244 BlueField-3 integrated ConnectX-7 network controller"


@pytest.mark.parametrize(("rel", "fns"), [
    ("lspci/bf2-lspci-4-functions.txt", [
        _fn("0000:10:00.0", "Ethernet controller", "0200", BF2, "a2d6"),
        _fn("0000:10:00.1", "Ethernet controller", "0200", BF2, "a2d6"),
        _fn("0000:10:00.2", "Ethernet controller", "0200",
            "BlueField DPU Family Auxiliary Communication Channel [BlueField Family]", "c2d1"),
        _fn("0000:10:00.3", "DMA controller", "0801", "MT42822 BlueField-2 SoC Management Interface", "c2d2")]),
    ("lspci/bf3-host-lspci-grep-bluefield-3.txt", [
        _fn("0000:e2:00.0", "Ethernet controller", "0200", BF3, "a2dc"),
        _fn("0000:e2:00.1", "Ethernet controller", "0200", BF3, "a2dc"),
        _fn("0000:e2:00.2", "DMA controller", "0801", "MT43244 BlueField-3 SoC Management Interface", "c2d5")]),
    ("lspci/cx4-lspci-grep-mellanox-vfs.txt",
     [_fn("0000:01:00.0", "Ethernet controller", "0200", "MT27700 Family [ConnectX-4]", "1013", rev=None)]
     + [_fn(a, "Ethernet controller", "0200", "MT27700 Family [ConnectX-4 Virtual Function]", "1014", rev=None)
        for a in ["0000:01:00.%d" % i for i in range(1, 8)] + ["0000:01:01.0"]]),
])
def test_lspci(rel, fns):
    assert system.lspci(list(reversed(fns))) == sample(rel)


def test_lspci_numeric_forms():
    fn = _fn("0000:e2:00.0", "Ethernet controller", "0200", BF3, "a2dc")
    assert system.lspci([fn], numeric=1) == "e2:00.0 0200: 15b3:a2dc (rev 01)\n"
    assert system.lspci([fn], domain=True, numeric=2) == (
        f"0000:e2:00.0 Ethernet controller [0200]: Mellanox Technologies {BF3} [15b3:a2dc] (rev 01)\n")


def test_lsmod_grep_nvidia():
    mods = [("nvidia_fs", 245760, 0, []), ("nvidia_peermem", 16384, 0, []), ("nvidia_modeset", 1159168, 0, []),
            ("nvidia_uvm", 1048576, 0, []),
            ("nvidia", 39059456, 115, ["nvidia_uvm", "nvidia_peermem", "nvidia_modeset"]),
            ("ib_core", 319488, 9, ["rdma_cm", "ib_ipoib", "nvidia_peermem", "iw_cm", "ib_umad", "rdma_ucm",
                                    "ib_uverbs", "mlx5_ib", "ib_cm"]),
            ("drm", 491520, 6, ["drm_kms_helper", "drm_vram_helper", "nvidia", "mgag200", "ttm"]),
            ("mlx5_core", 3153920, 1, ["mlx5_ib"])]
    text = system.lsmod([{"name": n, "size": s, "refcnt": r, "holders": h} for n, s, r, h in mods])
    assert lines(text)[0] == "Module                  Size  Used by"
    assert _grep(text, "nvidia") == sample("lsmod/gpu-operator-doc-lsmod-grep-nvidia.txt")


def test_lsmod_580_prefix():
    want = lines(sample("lsmod/nvidia-580-mlx5-fwctl-lsmod-grep.txt"))
    rows = [re.split(r"\s+", line, maxsplit=3) for line in want]
    mods = [{"name": r[0], "size": int(r[1]), "refcnt": int(r[2]), "holders": r[3].split(",") if len(r) > 3 else []}
            for r in rows]
    got = lines(system.lsmod(mods))[1:]
    assert got == want


def test_modprobe_not_found_line():
    assert system.modprobe_not_found("nvidia_peermem", "6.8.0") == (
        "modprobe: FATAL: Module nvidia_peermem not found in directory /lib/modules/6.8.0\n")
