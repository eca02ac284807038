"""The twin runs the boot units the roles installed: after `dpusim reboot` / `power-cycle` of a converged node,
the runtime RoCE QoS (lost by the reboot) is applied again by bluefleet-roce-qos.service, as on a real host.

Control: the same reboot with the unit's multi-user.target.wants link removed leaves the QoS lost, so the test
sees the unit's work and not a twin that keeps runtime state."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import BIN, make_sim_inventory, run_playbook, twin_tool

UNIT = "etc/systemd/system/multi-user.target.wants/bluefleet-roce-qos.service"


def qos(root, netdev):
    out = twin_tool(root, "mlnx_qos", "-i", netdev).stdout
    return "Priority trust state: dscp" in out, (root / "sys/class/net" / netdev / "mtu").read_text().strip()


def boot(root, how):
    proc = subprocess.run([str(BIN / "dpusim"), "--root", str(root), how], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    inventory = make_sim_inventory(tmp_path_factory.mktemp("boot") / "inventory", nodes=1)
    run_playbook("playbooks/fabric.yml", inventory, "--tags=roce")
    return inventory.parent / "state"


@pytest.mark.parametrize("host, netdev, how", [("sim01-dpu", "p0", "reboot"), ("sim01", "ens1f0np0", "power-cycle")])
def test_reboot_of_a_converged_node_brings_the_qos_back(fleet, monkeypatch, host, netdev, how):
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "0")
    root = fleet / host
    link = root / UNIT
    assert link.is_symlink() and link.resolve() == root / "etc/systemd/system/bluefleet-roce-qos.service"
    converged = qos(root, netdev)
    assert converged[0] and converged[1] != "1500", converged

    target = link.readlink()
    link.unlink()  # control: without the enabled unit the reboot loses the runtime QoS
    try:
        assert boot(root, how)["boot_units"] == []
        lost = qos(root, netdev)
        assert lost != converged and not lost[0], lost
    finally:
        link.symlink_to(target)

    result = boot(root, how)
    assert result["boot_units"] == [{"unit": "bluefleet-roce-qos.service", "result": "done", "rc": 0}], result
    assert qos(root, netdev) == converged


def test_a_unit_outside_the_node_root_is_not_run(tmp_path, monkeypatch):
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "0")
    root = tmp_path / "node"
    subprocess.run([str(BIN / "dpusim"), "--root", str(root), "init", "--profile", "bluefield3"], check=True,
                   capture_output=True, timeout=120)
    marker = tmp_path / "ran"
    units = root / "etc/systemd/system"
    (units / "multi-user.target.wants").mkdir(parents=True)
    (units / "outside.service").write_text("[Service]\nType=oneshot\nExecStart=/usr/bin/touch %s\n" % marker)
    (units / "multi-user.target.wants/outside.service").symlink_to("../outside.service")
    proc = subprocess.run([str(BIN / "dpusim"), "--root", str(root), "reboot"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0
    [unit] = json.loads(proc.stdout)["boot_units"]
    assert unit["result"] == "not run" and "outside the node root" in unit["error"], unit
    assert "boot unit outside.service not run" in proc.stderr
    assert not marker.exists()
