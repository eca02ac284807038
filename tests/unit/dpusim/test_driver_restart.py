"""The twin's DPU driver: mlnx-bf.conf read at boot and by ``openibd restart``; IPSEC_FULL_OFFLOAD pending until then.

The file layout is that of NVIDIA DPF's DPUFlavor ``configFiles`` entry for /etc/mellanox/mlnx-bf.conf; the status
lines are MLNX_OFED openibd's (``dpusim.driver`` docstring has the sources).
"""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from dpusim import driver

DPF_CONF = ('ALLOW_SHARED_RQ="no"\n'
            'IPSEC_FULL_OFFLOAD="no"\n'
            'ENABLE_ESWITCH_MULTIPORT="yes"\n'
            'RDMA_SET_NETNS_EXCLUSIVE="no"\n')
RESTART_OUT = ("Unloading HCA driver:                                      [  OK  ]\n"
               "Loading HCA driver and Access Layer:                       [  OK  ]\n")


@pytest.fixture
def dpu(twin):
    return twin("bluefield3", role="dpu")


def conf(t):
    return t.root / "etc/mellanox/mlnx-bf.conf"


def sysfs_mode(t, uplink="p0"):
    return (t.root / "sys/class/net" / uplink / "compat/devlink/ipsec_mode").read_text()


def enable_in_file(t):
    conf(t).write_text(conf(t).read_text().replace('IPSEC_FULL_OFFLOAD="no"', 'IPSEC_FULL_OFFLOAD="yes"'))


def test_init_writes_the_conf_and_the_init_script(dpu):
    assert conf(dpu).read_text() == DPF_CONF
    assert stat.S_IMODE(conf(dpu).stat().st_mode) == 0o644
    script = dpu.root / "etc/init.d/openibd"
    assert script.stat().st_mode & stat.S_IXUSR
    assert sysfs_mode(dpu) == "none\n" and sysfs_mode(dpu, "p1") == "none\n"


def test_a_file_edit_waits_for_the_restart(dpu):
    enable_in_file(dpu)
    rc, out, _ = dpu.run("openibd", "status")
    assert rc == 0 and "ipsec_mode none" in out and "restart pending" in out
    assert sysfs_mode(dpu) == "none\n"
    rc, out, err = dpu.run("openibd", "restart")
    assert (rc, out, err) == (0, RESTART_OUT, "")
    assert sysfs_mode(dpu) == "full\n" and sysfs_mode(dpu, "p1") == "full\n"
    rc, out, _ = dpu.run("openibd", "status")
    assert "ipsec_mode full" in out and "pending" not in out
    assert driver.restarts(dpu.node()) == 1


def test_the_restart_reloads_the_eswitch_and_port_functions(dpu):
    assert dpu.run("devlink", "dev", "eswitch", "set", "pci/0000:03:00.0", "mode", "legacy")[0] == 0
    assert dpu.run("devlink", "port", "function", "set", "pci/0000:03:00.1/262144", "state", "inactive")[0] == 0
    dpu.run("openibd", "restart")
    _, out, _ = dpu.run("devlink", "dev", "eswitch", "show")
    assert out == ("pci/0000:03:00.0: mode switchdev inline-mode none encap-mode basic\n"
                   "pci/0000:03:00.1: mode switchdev inline-mode none encap-mode basic\n")
    _, out, _ = dpu.run("devlink", "port", "show", "pci/0000:03:00.1/262144")
    assert "state active" in out


def test_a_reboot_loads_the_file_too(dpu):
    enable_in_file(dpu)
    dpu.run("devlink", "dev", "eswitch", "show")  # any twin call: the running driver keeps "none"
    assert sysfs_mode(dpu) == "none\n"
    assert dpu.cli("reboot")[0] == 0
    dpu.run("devlink", "dev", "eswitch", "show")  # first call after the boot loads the driver
    assert sysfs_mode(dpu) == "full\n"
    assert driver.restarts(dpu.node()) == 0, "a reboot is not an openibd restart"


def test_front_end_under_the_root_runs_the_restart(dpu):
    enable_in_file(dpu)
    env = dict(os.environ, DPUSIM_ROOT=str(dpu.root), DPUSIM_TIME_SCALE="0")
    proc = subprocess.run([str(dpu.root / "etc/init.d/openibd"), "restart"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert (proc.returncode, proc.stdout) == (0, RESTART_OUT)
    assert sysfs_mode(dpu) == "full\n"


@pytest.mark.parametrize("argv", [[], ["reload"], ["restart", "now"]])
def test_other_actions_print_the_usage(dpu, argv):
    rc, out, err = dpu.run("openibd", *argv)
    assert rc == 1 and out == "" and err.startswith("Usage: openibd {")
    assert driver.restarts(dpu.node()) == 0


def test_nothing_runs_while_the_arm_is_down(dpu):
    with dpu.edit() as node:
        node.cards[0].data["arm"]["state"] = "booting"
    rc, _, err = dpu.run("openibd", "restart")
    assert rc == 255 and "Arm OS is not running" in err


def test_a_host_has_no_mlnx_bf_conf(twin):
    host = twin("bluefield3", role="host")
    assert not conf(host).exists() and not (host.root / "sys/class/net/p0/compat").exists()
    assert host.run("openibd", "restart")[0] == 0
    assert driver.restarts(host.node()) == 1


@pytest.mark.parametrize("text, mode", [
    ('IPSEC_FULL_OFFLOAD="yes"\n', "full"), ("IPSEC_FULL_OFFLOAD=yes # on\n", "full"),
    ("IPSEC_FULL_OFFLOAD='YES'\n", "full"), ('IPSEC_FULL_OFFLOAD="yes"\nIPSEC_FULL_OFFLOAD="no"\n', "none"),
    ('# IPSEC_FULL_OFFLOAD="yes"\n', "none"), ("", "none"),
])
def test_the_file_as_the_shell_reads_it(dpu, text, mode):
    conf(dpu).write_text(text)
    dpu.run("openibd", "restart")
    assert sysfs_mode(dpu) == mode + "\n"


def test_devlink_version_line(dpu):
    """What the eswitch module returns as tool_version (iproute2 devlink.c prints 'devlink utility, iproute2-...')."""
    assert dpu.run("devlink", "-V") == (0, "devlink utility, iproute2-6.1.0\n", "")
