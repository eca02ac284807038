"""The twin's Linux/RDMA/GPU tool front-ends on real twin state (a BlueField-3 host + DPU pair).

Each test drives the tools through the dispatcher (``dpusim.tool.run``) as a shell would, and checks outputs,
exit status, state changes, and that runtime settings are lost on reboot / power cycle.
"""

from __future__ import annotations

import json
import os

import pytest

from dpusim import device, linux_state, state, tool


@pytest.fixture
def pair(tmp_path, monkeypatch):
    card = tmp_path / "pair"
    host, dpu = tmp_path / "host", tmp_path / "dpu"
    state.init_node(host, ["bluefield3"], "host", [card])
    state.init_node(dpu, ["bluefield3"], "dpu", [card])
    monkeypatch.delenv("DPUSIM_ROOT", raising=False)
    return {"host": host, "dpu": dpu}


def run(capsys, monkeypatch, root, name, *argv):
    monkeypatch.setenv("DPUSIM_ROOT", str(root))
    rc = tool.run(name, list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def reboot(root):
    with state.open_node(root) as node:
        device.node_reboot(node)


# ------------------------------------------------------------------------------------------------ devlink

def test_devlink_dpu_ports_eswitch_and_reboot(pair, capsys, monkeypatch):
    dpu = pair["dpu"]
    rc, out, _ = run(capsys, monkeypatch, dpu, "devlink", "port", "show")
    assert rc == 0
    assert out.splitlines()[:3] == [
        "pci/0000:03:00.0/262143: type eth netdev p0 flavour physical port 0 splittable false",
        "pci/0000:03:00.0/196608: type eth netdev pf0hpf flavour pcipf controller 1 pfnum 0 external true "
        "splittable false",
        "  function:"]
    assert run(capsys, monkeypatch, dpu, "devlink", "dev", "eswitch", "set", "pci/0000:03:00.0", "mode",
               "legacy")[:2] == (0, "")
    _, out, _ = run(capsys, monkeypatch, dpu, "devlink", "dev", "eswitch", "show", "pci/0000:03:00.0")
    assert out == "pci/0000:03:00.0: mode legacy inline-mode none encap-mode basic\n"
    _, out, _ = run(capsys, monkeypatch, dpu, "devlink", "port")
    assert "pf0hpf" not in out and "pf1hpf" in out
    reboot(dpu)  # eswitch mode is runtime: the Arm boots back into switchdev
    _, out, _ = run(capsys, monkeypatch, dpu, "devlink", "dev", "eswitch", "show", "pci/0000:03:00.0")
    assert "mode switchdev" in out


def test_devlink_errors(pair, capsys, monkeypatch):
    dpu = pair["dpu"]
    rc, _, err = run(capsys, monkeypatch, dpu, "devlink", "dev", "eswitch", "show", "pci/0000:99:00.0")
    assert (rc, err) == (1, "kernel answers: No such device\n")
    rc, _, err = run(capsys, monkeypatch, dpu, "devlink", "dev", "eswitch", "set", "pci/0000:03:00.0", "mode", "x")
    assert (rc, err) == (1, 'Unknown eswitch mode "x"\n')
    rc, _, err = run(capsys, monkeypatch, dpu, "devlink", "dev", "param", "set", "pci/0000:03:00.0", "name",
                     "flow_steering_mode", "value", "smfs", "cmode", "driverinit")
    assert (rc, err) == (1, "Configuration mode not supported\n")
    rc, _, err = run(capsys, monkeypatch, dpu, "devlink", "dev", "param", "set", "pci/0000:03:00.0", "name",
                     "flow_steering_mode", "value", "bogus", "cmode", "runtime")
    assert (rc, err) == (1, "kernel answers: Invalid argument\n")


def test_devlink_param_set_json_and_reboot(pair, capsys, monkeypatch):
    dpu = pair["dpu"]
    assert run(capsys, monkeypatch, dpu, "devlink", "dev", "param", "set", "pci/0000:03:00.0", "name",
               "flow_steering_mode", "value", "smfs", "cmode", "runtime")[0] == 0
    _, out, _ = run(capsys, monkeypatch, dpu, "devlink", "dev", "param", "show", "pci/0000:03:00.0", "name",
                    "flow_steering_mode")
    assert out == ("pci/0000:03:00.0:\n  name flow_steering_mode type driver-specific\n    values:\n"
                   "      cmode runtime value smfs\n")
    _, out, _ = run(capsys, monkeypatch, dpu, "devlink", "-j", "dev", "param", "show", "pci/0000:03:00.0", "name",
                    "flow_steering_mode")
    assert json.loads(out) == {"param": {"pci/0000:03:00.0": [
        {"name": "flow_steering_mode", "type": "driver-specific", "values": [{"cmode": "runtime", "value": "smfs"}]}]}}
    reboot(dpu)
    _, out, _ = run(capsys, monkeypatch, dpu, "devlink", "-j", "dev", "param", "show", "pci/0000:03:00.0", "name",
                    "flow_steering_mode")
    assert json.loads(out)["param"]["pci/0000:03:00.0"][0]["values"][0]["value"] == "dmfs"


def test_devlink_port_function_state_like_the_ecpf_sample(pair, capsys, monkeypatch):
    dpu = pair["dpu"]
    port = "pci/0000:03:00.0/196608"
    assert run(capsys, monkeypatch, dpu, "devlink", "port", "function", "set", port, "state", "inactive")[:2] == (0, "")
    _, out, _ = run(capsys, monkeypatch, dpu, "devlink", "port", "show", port)
    assert out.splitlines()[2] == "    hw_addr 94:6d:ae:4f:29:6a state inactive opstate detached roce enable " \
                                  "max_io_eqs 120"
    rc, _, err = run(capsys, monkeypatch, dpu, "devlink", "port", "function", "set", "pci/0000:03:00.0/262143",
                     "state", "inactive")
    assert (rc, err) == (1, "kernel answers: Operation not supported\n")


def test_devlink_host_cannot_take_the_eswitch_of_a_dpu_mode_bluefield(pair, capsys, monkeypatch):
    rc, _, err = run(capsys, monkeypatch, pair["host"], "devlink", "dev", "eswitch", "set", "pci/0000:e2:00.0",
                     "mode", "switchdev")
    assert (rc, err) == (1, "kernel answers: Operation not supported\n")


def test_devlink_shows_vf_representors_when_the_host_enables_vfs(pair, capsys, monkeypatch):
    with state.open_node(pair["dpu"]) as node:
        node.cards[0].data.setdefault("linux", {})["host_vfs"] = [2, 0]
    _, out, _ = run(capsys, monkeypatch, pair["dpu"], "devlink", "port", "show")
    assert "pci/0000:03:00.0/196609: type eth netdev pf0vf0 flavour pcivf controller 1 pfnum 0 vfnum 0 external " \
           "true splittable false" in out
    assert "pf0vf1" in out and "pf1vf0" not in out


def test_devlink_dev_info_follows_the_running_firmware(pair, capsys, monkeypatch):
    with state.open_node(pair["dpu"]) as node:
        node.cards[0].data["firmware"]["running"]["version"] = "32.43.1014"
    _, out, _ = run(capsys, monkeypatch, pair["dpu"], "devlink", "-j", "dev", "info", "pci/0000:03:00.0")
    info = json.loads(out)["info"]["pci/0000:03:00.0"]
    assert info["versions"]["running"]["fw.version"] == "32.43.1014"
    assert info["versions"]["stored"]["fw.version"] == "32.41.1000"


# ------------------------------------------------------------------------------------------------ ethtool

def test_ethtool_toggle_is_runtime(pair, capsys, monkeypatch):
    dpu = pair["dpu"]
    _, out, _ = run(capsys, monkeypatch, dpu, "ethtool", "-k", "p0")
    assert out.startswith("Features for p0:\n") and "\nhw-tc-offload: on\n" in out  # switchdev uplink
    assert run(capsys, monkeypatch, dpu, "ethtool", "-K", "p0", "hw-tc-offload", "off")[:3] == (0, "", "")
    assert "\nhw-tc-offload: off\n" in run(capsys, monkeypatch, dpu, "ethtool", "-k", "p0")[1]
    reboot(dpu)
    assert "\nhw-tc-offload: on\n" in run(capsys, monkeypatch, dpu, "ethtool", "-k", "p0")[1]
    host = pair["host"]
    assert "\nhw-tc-offload: off\n" in run(capsys, monkeypatch, host, "ethtool", "-k", "ens1f0np0")[1]
    assert run(capsys, monkeypatch, host, "ethtool", "-K", "ens1f0np0", "hw-tc-offload", "on")[0] == 0
    with state.open_node(host) as node:
        device.power_cycle(node)
    assert "\nhw-tc-offload: off\n" in run(capsys, monkeypatch, host, "ethtool", "-k", "ens1f0np0")[1]


def test_ethtool_fixed_feature_and_bad_value(pair, capsys, monkeypatch):
    dpu = pair["dpu"]
    rc, out, err = run(capsys, monkeypatch, dpu, "ethtool", "-K", "p0", "esp-hw-offload", "off")
    assert (rc, out, err) == (1, "Actual changes:\nesp-hw-offload: on [requested off]\n",
                              "Could not change any device features\n")
    rc, _, err = run(capsys, monkeypatch, dpu, "ethtool", "-K", "p0", "tx", "maybe")
    assert rc == 1 and "is not followed by 'on' or 'off'" in err


def test_ethtool_legacy_group_name(pair, capsys, monkeypatch):
    host = pair["host"]
    assert run(capsys, monkeypatch, host, "ethtool", "-K", "ens1f0np0", "tx", "off")[0] == 0
    _, out, _ = run(capsys, monkeypatch, host, "ethtool", "-k", "ens1f0np0")
    assert "\ntx-checksumming: off\n\ttx-checksum-ipv4: off [fixed]\n\ttx-checksum-ip-generic: off\n" in out


def test_ethtool_driver_info_of_uplink_and_representor(pair, capsys, monkeypatch):
    _, out, _ = run(capsys, monkeypatch, pair["dpu"], "ethtool", "-i", "p0")
    assert out.splitlines()[:3] == ["driver: mlx5_core", "version: 5.15.0-1060-bluefield",
                                    "firmware-version: 32.41.1000 (MT_0000000998)"]
    assert "bus-info: 0000:03:00.0" in out.splitlines()
    _, out, _ = run(capsys, monkeypatch, pair["dpu"], "ethtool", "-i", "pf0hpf")
    assert out.splitlines()[0] == "driver: mlx5e_rep"


# ------------------------------------------------------------------------------------------------ mlnx_qos / cma

def test_mlnx_qos_trust_pfc_ets_and_reboot(pair, capsys, monkeypatch):
    host = pair["host"]
    rc, out, _ = run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0", "--trust", "dscp", "--pfc",
                     "0,0,0,1,0,0,0,0")
    assert rc == 0
    lines = out.splitlines()
    assert lines[1] == "Priority trust state: dscp"
    assert "\tprio:3 dscp:31,30,29,28,27,26,25,24," in lines
    assert "\tenabled     0   0   0   1   0   0   0   0   " in lines
    rc, out, _ = run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0", "-s",
                     "ets,ets,ets,ets,ets,ets,ets,ets", "-t", "10,10,10,40,10,10,5,5", "-p", "0,1,2,3,4,5,6,7")
    assert rc == 0 and "tc: 3 ratelimit: unlimited, tsa: ets, bw: 40%\n\t priority:  3\n" in out
    _, out, _ = run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0")
    assert "Priority trust state: dscp" in out and "bw: 40%" in out
    reboot(host)
    _, out, _ = run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0")
    assert "Priority trust state: pcp" in out and "\tenabled     0   0   0   0   0   0   0   0   " in out
    assert "tc: 1 ratelimit: unlimited, tsa: vendor\n\t priority:  0\n" in out


def test_mlnx_qos_errors(pair, capsys, monkeypatch):
    host = pair["host"]
    assert run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0", "--pfc", "0,0,1")[:2] == (
        1, "pfc list must have 8 items\n")
    rc, out, _ = run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0", "-s", "ets,ets,ets,ets,ets,ets,ets,ets",
                     "-t", "10,10,10,10,10,10,10,10")
    assert (rc, out) == (1, "[Errno 22] Invalid argument\n")
    assert run(capsys, monkeypatch, host, "mlnx_qos")[:2] == (1, "Interface name is required\n"
                                                                 "Usage: mlnx_qos -i <interface> [options]\n")
    assert run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0", "--trust", "dscp", "--dscp2prio",
               "set,26,3")[:2] == (1, "trust and dscp2prio commands cannot be used at the same time.\n")
    assert run(capsys, monkeypatch, pair["dpu"], "mlnx_qos", "-i", "pf0hpf")[:2] == (
        1, "ETS features are not supported on your system\n")
    _, out, _ = run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0")
    assert "Priority trust state: pcp" in out  # failed commands changed nothing


def test_mlnx_qos_dscp2prio_on_pcp_switches_trust(pair, capsys, monkeypatch):
    _, out, _ = run(capsys, monkeypatch, pair["host"], "mlnx_qos", "-i", "ens1f1np1", "--dscp2prio", "set,26,3")
    assert "Priority trust state: dscp\ndscp2prio mapping:\n\tprio:3 dscp:26,\ndefault priority:\n" in out


def test_cma_roce_mode_and_tos(pair, capsys, monkeypatch):
    host = pair["host"]
    assert run(capsys, monkeypatch, host, "cma_roce_mode", "-d", "mlx5_0", "-p", "1")[1] == "RoCE v2\n"
    assert run(capsys, monkeypatch, host, "cma_roce_mode", "-d", "mlx5_0", "-p", "1", "-m", "1")[1] == "IB/RoCE v1\n"
    assert run(capsys, monkeypatch, host, "cma_roce_mode", "-d", "mlx5_0")[1] == "IB/RoCE v1\n"
    assert run(capsys, monkeypatch, host, "cma_roce_tos", "-d", "mlx5_0", "-t", "106")[1] == "106\n"
    assert run(capsys, monkeypatch, host, "cma_roce_mode", "-d", "mlx5_7")[:2] == (
        1, "Failed to create configuration for mlx5_7\n")
    assert run(capsys, monkeypatch, host, "cma_roce_mode", "-d", "mlx5_0", "-p", "2")[:2] == (
        1, "Device mlx5_0 port 2 does not exist\n")
    reboot(host)
    assert run(capsys, monkeypatch, host, "cma_roce_mode", "-d", "mlx5_0")[1] == "RoCE v2\n"
    assert run(capsys, monkeypatch, host, "cma_roce_tos", "-d", "mlx5_0")[1] == "0\n"


# ------------------------------------------------------------------------------------------------ RDMA

def test_show_gids_from_mac_and_ipv4(pair, capsys, monkeypatch):
    host = pair["host"]
    with state.open_node(host) as node:
        linux_state.set_netdev(node, "ens1f0np0", ipv4_add=["192.168.10.2/24"])
    _, out, _ = run(capsys, monkeypatch, host, "show_gids")
    lines = out.splitlines()
    assert lines[2] == "mlx5_0\t1\t0\tfe80:0000:0000:0000:966d:aeff:fe4f:296a\t\t\tv1\tens1f0np0"
    assert lines[5] == "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:0a02\t192.168.10.2  \tv2\tens1f0np0"
    assert lines[-1] == "n_gids_found=6"


def test_ibv_devinfo_ibdev2netdev_rdma(pair, capsys, monkeypatch):
    host = pair["host"]
    rc, out, _ = run(capsys, monkeypatch, host, "ibv_devinfo", "-d", "mlx5_1")
    assert rc == 0 and out.splitlines()[:4] == ["hca_id:\tmlx5_1", "\ttransport:\t\t\tInfiniBand (0)",
                                                "\tfw_ver:\t\t\t\t32.41.1000", "\tnode_guid:\t\t\t946d:ae03:004f:296b"]
    assert "\tvendor_part_id:\t\t\t41692" in out and "\t\t\tactive_mtu:\t\t1024 (3)" in out
    assert run(capsys, monkeypatch, host, "ibv_devinfo", "-d", "mlx5_9")[::2] == (
        255, "IB device 'mlx5_9' wasn't found\n")
    assert run(capsys, monkeypatch, host, "ibv_devinfo", "-l")[1] == "2 HCAs found:\n\tmlx5_0\n\tmlx5_1\n\n"
    assert run(capsys, monkeypatch, host, "ibdev2netdev")[1] == ("mlx5_0 port 1 ==> ens1f0np0 (Up)\n"
                                                                  "mlx5_1 port 1 ==> ens1f1np1 (Up)\n")
    assert run(capsys, monkeypatch, pair["dpu"], "rdma", "link", "show", "mlx5_0/1")[1] == (
        "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev p0\n")
    with state.open_node(host) as node:
        node.runtime_for("ens1f1np1")["link"] = "down"
    assert "mlx5_1 port 1 ==> ens1f1np1 (Down)" in run(capsys, monkeypatch, host, "ibdev2netdev")[1]
    assert "PORT_DOWN (1)" in run(capsys, monkeypatch, host, "ibv_devinfo", "-d", "mlx5_1")[1]


def test_links_training_reads_the_ports_down_for_its_reads_only(pair, capsys, monkeypatch):
    dpu = pair["dpu"]
    monkeypatch.setenv("DPUSIM_ROOT", str(dpu))
    from dpusim import cli
    assert cli.main(["fault", "set", "links_training", "--reads", "2"]) == 0
    capsys.readouterr()
    down = ("link mlx5_0/1 state DOWN physical_state DISABLED netdev p0\n"
            "link mlx5_1/1 state DOWN physical_state DISABLED netdev p1\n")
    assert run(capsys, monkeypatch, dpu, "rdma", "dev", "show")[0] == 0  # not a read of the ports: uses none
    assert run(capsys, monkeypatch, dpu, "rdma", "link", "show")[:2] == (0, down)
    assert run(capsys, monkeypatch, dpu, "rdma", "link")[:2] == (0, down)
    assert run(capsys, monkeypatch, dpu, "rdma", "link", "show")[1] == down.replace(
        "DOWN physical_state DISABLED", "ACTIVE physical_state LINK_UP")
    assert "links_training" not in state.load_node(dpu).faults
    assert cli.main(["fault", "set", "links_training", "--reads", "0"]) != 0


def test_ibv_devinfo_verbose_blocks(pair, capsys, monkeypatch):
    with state.open_node(pair["host"]) as node:
        linux_state.set_netdev(node, "ens1f0np0", ipv4_add=["10.0.0.1/24"])
    rc, out, _ = run(capsys, monkeypatch, pair["host"], "ibv_devinfo", "-v", "-d", "mlx5_0")
    lines = out.splitlines()
    assert rc == 0
    flags = lines.index("\tdevice_cap_flags:\t\t0x21361c36")
    assert lines[flags + 1:flags + 3] == ["\t\t\t\t\tBAD_PKEY_CNTR", "\t\t\t\t\tBAD_QKEY_CNTR"]
    assert lines[lines.index("\tuc_odp_caps:") + 1] == "\t\t\t\t\tNO SUPPORT"
    assert "\tdevice_cap_flags_ex:\t\t0x1421361C36" in lines and "\t\t\t\t\tRAW_SCATTER_FCS" in lines
    assert "\t\t\tphys_state:\t\tLINK_UP (5)" in lines
    assert "\t\t\tGID[  3]:\t\t::ffff:10.0.0.1, RoCE v2" in lines
    assert not any("Unknown flags" in line for line in lines)


def test_rdma_tools_see_nothing_when_the_card_is_missing(pair, capsys, monkeypatch):
    host = pair["host"]
    with state.open_node(host) as node:
        node.faults["device_missing"] = {}
    assert run(capsys, monkeypatch, host, "ibv_devinfo")[::2] == (255, "No IB devices found\n")
    assert run(capsys, monkeypatch, host, "ibdev2netdev")[1] == ""
    assert run(capsys, monkeypatch, host, "devlink", "port")[:2] == (0, "")
    assert run(capsys, monkeypatch, host, "devlink", "dev", "info")[:2] == (0, "")
    assert run(capsys, monkeypatch, host, "ethtool", "-k", "ens1f0np0")[0] != 0


def test_dpu_tools_fail_while_the_arm_is_down(pair, capsys, monkeypatch):
    with state.open_node(pair["dpu"]) as node:
        node.cards[0].data["arm"] = {"state": "off"}
    rc, _, err = run(capsys, monkeypatch, pair["dpu"], "devlink", "dev")
    assert rc == 255 and "Arm OS is not running" in err


# ------------------------------------------------------------------------------------------------ GPU / system

def test_nvidia_smi_host(pair, capsys, monkeypatch):
    host = pair["host"]
    rc, out, _ = run(capsys, monkeypatch, host, "nvidia-smi")
    lines = out.splitlines()
    assert rc == 0 and lines[2].startswith("| NVIDIA-SMI 550.127.08             Driver Version: 550.127.08")
    assert sum("NVIDIA H100 80GB HBM3" in line for line in lines) == 8
    assert lines[-2] == "|  No running processes found                                                             |"
    _, out, _ = run(capsys, monkeypatch, host, "nvidia-smi", "topo", "-m")
    assert out.splitlines()[1].startswith("GPU0\t X \tNV18\t") and "  NIC0: mlx5_0\n  NIC1: mlx5_1\n" in out
    _, out, _ = run(capsys, monkeypatch, host, "nvidia-smi", "topo", "-mp")
    assert "NV18" not in out and "NV#" not in out
    _, out, _ = run(capsys, monkeypatch, host, "nvidia-smi", "-q", "-d", "MEMORY")
    assert "Attached GPUs                             : 8\n" in out and "Product Name" not in out
    with state.open_node(host) as node:
        linux_state.configure_gpus(node, 0)
    assert run(capsys, monkeypatch, host, "nvidia-smi")[:2] == (6, "No devices were found\n")


def test_gpu_inventory_cli(pair, capsys, monkeypatch):
    from dpusim import cli

    assert cli.main(["gpus", "2", "--driver", "535.129.03", "--cuda", "12.2", "--root", str(pair["host"])]) == 0
    _, out, _ = run(capsys, monkeypatch, pair["host"], "nvidia-smi")
    assert "Driver Version: 535.129.03" in out and sum("NVIDIA H100" in line for line in out.splitlines()) == 2
    assert cli.main(["gpus", "2", "--root", str(pair["dpu"])]) == 1
    assert "GPUs belong to a host node" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["gpus", "x", "--root", str(pair["host"])])
    assert exc.value.code == 2


def test_twin_answers_come_from_its_root_not_the_machine(pair, capsys, monkeypatch, tmp_path):
    """lspci, lsmod, the GIDs and the link state are the same whatever this machine has: a real netdev named like
    the card's, real PCI devices and modules are never merged in (issue #15: the twin never reads its machine)."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    for name, text in (("lspci", "00:1f.6 Ethernet controller: Intel Corporation Ethernet I219-LM"),
                       ("lsmod", "Module                  Size  Used by\ne1000e 360448 0"),
                       ("ip", '[{"ifname": "p0", "addr_info": [{"family": "inet", "local": "10.99.0.1"}]}]')):
        (fake / name).write_text("#!/bin/sh\necho '%s'\n" % text)
        (fake / name).chmod(0o755)
    host = pair["host"]
    before = [run(capsys, monkeypatch, host, *argv)[1] for argv in (["lspci"], ["lsmod"], ["show_gids"])]
    monkeypatch.setenv("PATH", "%s:%s" % (fake, os.environ["PATH"]))
    after = [run(capsys, monkeypatch, host, *argv)[1] for argv in (["lspci"], ["lsmod"], ["show_gids"])]
    assert after == before
    assert "I219" not in after[0] and "e1000e" not in after[1] and "10.99.0.1" not in "".join(after)


def test_ip_changes_to_a_card_netdev_are_recorded_when_the_real_ip_succeeds(pair, capsys, monkeypatch, tmp_path):
    """The twin's ip passes a change to the real iproute2 and, when it succeeded, keeps it in its root: the RoCE v2
    GIDs show the address; a refused change (real ip fails) is not recorded."""
    from dpusim import cli

    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "ip").write_text("#!/bin/sh\n[ \"$IP_FAIL\" = 1 ] && { echo 'Cannot find device' >&2; exit 1; }\nexit 0\n")
    (fake / "ip").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (fake, os.environ["PATH"]))
    dpu = pair["dpu"]
    monkeypatch.setenv("IP_FAIL", "1")
    assert run(capsys, monkeypatch, dpu, "ip", "addr", "add", "192.168.77.5/24", "dev", "p0")[0] == 1
    assert "c0a8:4d05" not in run(capsys, monkeypatch, dpu, "show_gids")[1]
    monkeypatch.setenv("IP_FAIL", "0")
    assert run(capsys, monkeypatch, dpu, "ip", "addr", "add", "192.168.77.5/24", "dev", "p0")[0] == 0
    assert "c0a8:4d05" in run(capsys, monkeypatch, dpu, "show_gids")[1]
    assert run(capsys, monkeypatch, dpu, "ip", "link", "set", "dev", "p0", "down")[0] == 0
    assert cli.main(["netdev", "show", "p0", "--root", str(dpu)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["link"] == "down" and shown["ipv4"] == ["192.168.77.5"]
    assert cli.main(["netdev", "set", "eth9", "--up", "--root", str(dpu)]) == 1
    assert "eth9 is not a netdev of this node's card(s)" in capsys.readouterr().err


def test_modprobe_peermem_lsmod_sysfs_and_reboot(pair, capsys, monkeypatch):
    host = pair["host"]
    version = host / "sys/kernel/mm/memory_peers/nv_mem/version"
    assert "nvidia_peermem" not in run(capsys, monkeypatch, host, "lsmod")[1]
    assert run(capsys, monkeypatch, host, "modprobe", "nvidia-peermem")[:3] == (0, "", "")
    assert version.read_text() == "1.1\n"
    _, out, _ = run(capsys, monkeypatch, host, "lsmod")
    assert out.splitlines()[:2] == ["Module                  Size  Used by", "nvidia_peermem         16384  0"]
    assert "nvidia              39059456  3 nvidia_uvm,nvidia_modeset,nvidia_peermem" in out
    reboot(host)
    assert "nvidia_peermem" not in run(capsys, monkeypatch, host, "lsmod")[1]
    assert not version.exists()


def test_modprobe_peermem_failures(pair, capsys, monkeypatch):
    host = pair["host"]
    with state.open_node(host) as node:
        node.faults["peermem_einval"] = {}
    assert run(capsys, monkeypatch, host, "modprobe", "nvidia_peermem")[::2] == (
        1, "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n")
    rc, _, err = run(capsys, monkeypatch, pair["dpu"], "modprobe", "nvidia_peermem")
    assert (rc, err) == (1, "modprobe: FATAL: Module nvidia_peermem not found in directory "
                            "/lib/modules/5.15.0-1060-bluefield\n")


def test_lspci_lists_the_card_and_gpus(pair, capsys, monkeypatch):
    _, out, _ = run(capsys, monkeypatch, pair["host"], "lspci", "-s", "e2:00.2")
    assert out == "e2:00.2 DMA controller: Mellanox Technologies MT43244 BlueField-3 SoC Management Interface " \
                  "(rev 01)\n"
    _, out, _ = run(capsys, monkeypatch, pair["host"], "lspci", "-D", "-s", "0000:18:00.0")
    assert out == "0000:18:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)\n"
    _, out, _ = run(capsys, monkeypatch, pair["dpu"], "lspci", "-n", "-s", "03:00.1")
    assert out == "03:00.1 0200: 15b3:a2dc (rev 01)\n"


@pytest.mark.parametrize(("role", "argv", "rc", "message"), [
    ("dpu", ["devlink", "dev", "eswitch", "set"], 1, 'Devlink identification ("bus_name/dev_name") expected'),
    ("dpu", ["devlink", "dev", "param", "set", "pci/0000:03:00.0", "name"], 1, "Parameter name expected."),
    ("dpu", ["devlink", "dev", "param", "set", "pci/0000:03:00.0", "name", "enable_roce", "cmode", "driverinit"],
     1, "Value to set expected."),
    ("dpu", ["devlink", "dev", "param", "set", "pci/0000:03:00.0", "name", "enable_roce", "value", "yes", "cmode",
             "driverinit"], 1, "Value type not supported"),
    ("dpu", ["devlink", "port", "function", "set"], 1,
     'Port identification ("bus_name/dev_name/port_index" or "netdev ifname") expected.'),
    ("dpu", ["devlink", "dev", "param", "set", "pci/0000:03:00.0", "name", "enable_roce", "value", "true", "cmode",
             "boot"], 1, 'Unknown configuration mode "boot"'),
    ("dpu", ["devlink", "dev", "eswitch", "set", "pci/0000:03:00.0"], 1, "Need to set at least one option"),
    ("dpu", ["devlink", "dev", "eswitch", "set", "pci/0000:03:00.0", "inline-mode", "l2"], 1,
     'Unknown eswitch inline mode "l2"'),
    ("dpu", ["devlink", "-j", "health"], 1, 'Object "health" not found'),
    ("dpu", ["devlink", "dev", "reload", "pci/0000:03:00.0"], 1, 'Command "reload" not found'),
    ("host", ["mlnx_qos", "-i", "ens1f0np0", "--pfc", "a,b,c,d,e,f,g,h"], 1, "Bad value for PFC"),
    ("host", ["mlnx_qos", "-i", "ens1f0np0", "-s", "ets,foo,ets,ets,ets,ets,ets,ets"], 1, "Bad TSA value"),
    ("host", ["mlnx_qos", "-i", "ens1f0np0", "--dscp2prio", "set,99,1"], 1,
     "Invalid dscp2prio command. Refer to the help."),
    ("host", ["mlnx_qos", "-i", "ens1f0np0", "--trust", "vlan"], 1, "Invalid trust state command. Refer to the help."),
    ("host", ["mlnx_qos", "-i", "ens1f0np0", "--defltprio", "set,3"], 1, "--defltprio is not modelled"),
    ("host", ["mlnx_qos", "-i", "ens1f0np0", "--bogus"], 2, "mlnx_qos: error: no such option: --bogus"),
    ("host", ["mlnx_qos", "-i", "ens1f0np0", "--pfc"], 2, "mlnx_qos: error: --pfc option requires 1 argument"),
    ("host", ["mlnx_qos", "-i", "ens1f0np0", "-d", "maybe"], 1, "Invalid dcbx mode command. Refer to the help."),
    ("host", ["cma_roce_tos", "-d", "mlx5_0", "-t", "abc"], 1, "integer expression expected"),
    ("host", ["ibv_devinfo", "-x"], 255, "Usage: ibv_devinfo"),
    ("host", ["ibv_devinfo", "-i", "0"], 1, "Usage: ibv_devinfo"),
    ("host", ["ibv_devinfo", "-d", "mlx5_0", "-i", "2"], 4, "Invalid port requested for device"),
    ("host", ["ibdev2netdev", "-x"], 255, "ibdev2netdev <options>"),
    ("host", ["rdma", "resource"], 1, "the twin answers 'rdma link"),
    ("host", ["rdma", "dev", "show", "mlx5_7"], 1, "Wrong device name"),
    ("host", ["nvidia-smi", "-x", "-q"], 2, "the twin answers the default table"),
    ("dpu", ["ethtool", "-K", "p0", "no-such-feature", "on"], 92, "netlink error: bit name not found (offset 52)"),
])
def test_bad_invocations_fail_clearly(pair, capsys, monkeypatch, role, argv, rc, message):
    got_rc, out, err = run(capsys, monkeypatch, pair[role], argv[0], *argv[1:])
    assert got_rc == rc
    assert message in out + err


def test_mlnx_qos_default_priority_line_follows_the_profiles_mlnx_tools(pair, capsys, monkeypatch):
    """Issue 18 (7): mlnx-tools 25.07 removed the 'default priority:' line and --defltprio (Mellanox/mlnx-tools
    commit 374d9b5); the twin prints and refuses as the mlnx-tools its profile claims."""
    host = pair["host"]
    monkeypatch.delenv("DPUSIM_MLNX_TOOLS_LAYOUT", raising=False)
    out = run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0")[1]
    assert "default priority:" in out.splitlines()  # bluefield3: before 25.07
    monkeypatch.setenv("DPUSIM_MLNX_TOOLS_LAYOUT", "2025")
    rc, out, _ = run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0")
    assert rc == 0 and "default priority:" not in out and "Priority trust state: pcp" in out
    rc, out, err = run(capsys, monkeypatch, host, "mlnx_qos", "-i", "ens1f0np0", "--defltprio", "set,2")
    assert (rc, out, err) == (2, "", "Usage: mlnx_qos -i <interface> [options]\n\nmlnx_qos: error: no such option: "
                                     "--defltprio\n")
