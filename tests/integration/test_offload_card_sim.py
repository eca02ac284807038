"""playbooks/offload.yml, the card's part (tag switchdev), against the simulated fleet.

IPSEC_FULL_OFFLOAD in each DPU's mlnx-bf.conf with one driver restart only when it changed, then the eswitch mode.
Four runs (check, apply, apply, check); the twin's state proves what happened: the file, the loaded driver's
mode (``compat/devlink/ipsec_mode`` the twin renders), the restart counter, ``devlink dev eswitch show``.
"""

from __future__ import annotations

import json
import os
import subprocess

import yaml
from conftest import BIN, ROOT, changed_count, make_sim_inventory, run_playbook, twin_state

PLAYBOOK = "playbooks/offload.yml"
DPUS = ("sim01-dpu", "sim02-dpu")
NO = 'IPSEC_FULL_OFFLOAD="no"'
YES = 'IPSEC_FULL_OFFLOAD="yes"'


def root_of(inventory, host):
    return inventory.parent / "state" / host


def conf(inventory, host):
    return (root_of(inventory, host) / "etc/mellanox/mlnx-bf.conf").read_text()


def driver_mode(inventory, host):
    root = root_of(inventory, host)
    return {uplink: (root / "sys/class/net" / uplink / "compat/devlink/ipsec_mode").read_text().strip()
            for uplink in ("p0", "p1")}


def restarts(inventory, host):
    return twin_state(root_of(inventory, host))["node"].get("linux", {}).get("driver_restarts", 0)


def twin(inventory, host, *argv):
    root = root_of(inventory, host)
    env = dict(os.environ, DPUSIM_ROOT=str(root))
    proc = subprocess.run([str(root / "bin" / argv[0]), *argv[1:]], env=env, capture_output=True, text=True,
                          check=True, timeout=60)
    return proc.stdout


def eswitch_modes(inventory, host):
    data = json.loads(twin(inventory, host, "devlink", "-j", "dev", "eswitch", "show"))
    return {handle: attrs["mode"] for handle, attrs in data["dev"].items()}


def task_changed(run, task_name):
    """Hosts on which the task of that name reported a change (runner_on_ok events)."""
    hosts = set()
    for event in run["events"]:
        data = event.get("event_data", {})
        if event.get("event") == "runner_on_ok" and data.get("task") == task_name and data["res"].get("changed"):
            hosts.add(data["host"])
    return hosts


def task_skipped(run, task_name):
    """Hosts on which the task of that name was skipped (runner_on_skipped events)."""
    return {event["event_data"]["host"] for event in run["events"]
            if event.get("event") == "runner_on_skipped" and event["event_data"].get("task") == task_name}


def test_bad_input_then_four_runs_restart_the_driver_once_and_only_when_changed(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inv", nodes=2)
    extra = tmp_path / "netdevs.yml"
    extra.write_text("switchdev_netdevs: [p0, ens9]\n")
    bad = run_playbook(PLAYBOOK, inventory, "--tags", "switchdev", "-e", "@%s" % extra, check=False)
    assert bad["rc"] != 0
    assert "netdev 'ens9' is not a port of any devlink device" in bad["stdout"]
    for host in DPUS:
        assert NO in conf(inventory, host), "bad input: the file is untouched"
        assert restarts(inventory, host) == 0

    check = run_playbook(PLAYBOOK, inventory, "--tags", "switchdev", "--check", "--diff")
    assert task_changed(check, "Set IPSEC_FULL_OFFLOAD in mlnx-bf.conf") == set(DPUS)
    assert task_changed(check, "Restart mlx5 driver") == set()
    for host in DPUS:
        assert NO in conf(inventory, host), "check mode leaves the file alone"
        assert driver_mode(inventory, host) == {"p0": "none", "p1": "none"}
        assert restarts(inventory, host) == 0
    assert "+" + YES in check["stdout"], "--diff shows the line that would change"

    apply = run_playbook(PLAYBOOK, inventory, "--tags", "switchdev")
    assert changed_count(apply) == 4, "per DPU: the file and the driver restart"
    assert task_changed(apply, "Restart mlx5 driver") == set(DPUS)
    for host in DPUS:
        text = conf(inventory, host)
        assert YES in text and 'ENABLE_ESWITCH_MULTIPORT="yes"' in text, "the rest of the file is kept"
        assert driver_mode(inventory, host) == {"p0": "full", "p1": "full"}
        assert restarts(inventory, host) == 1
        assert set(eswitch_modes(inventory, host).values()) == {"switchdev"}

    again = run_playbook(PLAYBOOK, inventory, "--tags", "switchdev")
    assert changed_count(again) == 0, again["stdout"][-3000:]
    assert task_skipped(again, "Set the eswitch mode of each uplink's device") == set(DPUS), (
        "no driver restart and the check found every device in switchdev: no set run")
    check2 = run_playbook(PLAYBOOK, inventory, "--tags", "switchdev", "--check", "--diff")
    assert changed_count(check2) == 0
    assert [restarts(inventory, host) for host in DPUS] == [1, 1], "no restart when nothing changed"


def test_failed_driver_restart_names_the_state_left_and_a_rerun_restarts_it(tmp_path, collection_link):
    """The SSH session drops during `openibd restart` (twin fault connection_drop, exit 255): the run fails naming
    the host, the step, the state left (file written, driver on the old mode) and the way back; the re-run restarts
    the driver (issue 16: a play that lowers availability says what it left and how to recover)."""
    inventory = make_sim_inventory(tmp_path / "inv", nodes=1)
    host = "sim01-dpu"
    subprocess.run([str(BIN / "dpusim"), "--root", str(root_of(inventory, host)), "fault", "set", "connection_drop",
                    "--tool", "openibd"], check=True, capture_output=True, timeout=60)
    failed = run_playbook(PLAYBOOK, inventory, "--tags", "switchdev", check=False)
    assert failed["rc"] != 0
    msgs = [e["event_data"]["res"].get("msg", "") for e in failed["events"]
            if e.get("event") == "runner_on_failed" and not e["event_data"].get("ignore_errors")]
    assert msgs, failed["stdout"][-3000:]
    msg = msgs[-1]
    for words in (host + ": the mlx5 driver restart failed at 'Restart mlx5 driver'", "closed by remote host",
                  "IPSEC_FULL_OFFLOAD is written in", "the driver may still run the old mode",
                  "run the playbook again"):
        assert words in msg, (words, msg)
    assert YES in conf(inventory, host) and driver_mode(inventory, host) == {"p0": "none", "p1": "none"}
    assert restarts(inventory, host) == 0

    again = run_playbook(PLAYBOOK, inventory, "--tags", "switchdev")  # the fault fired once: the session is back
    assert task_changed(again, "Restart mlx5 driver") == {host}
    assert driver_mode(inventory, host) == {"p0": "full", "p1": "full"} and restarts(inventory, host) == 1


def test_hand_edit_pending_then_legacy_and_back(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inv", nodes=1)
    host = "sim01-dpu"
    legacy = ("-e", "switchdev_mode=legacy", "--tags", "switchdev")
    check = run_playbook(PLAYBOOK, inventory, *legacy, "--check")  # also creates the twin roots
    assert task_changed(check, "Set the eswitch mode of each uplink's device") == {host}
    assert set(eswitch_modes(inventory, host).values()) == {"switchdev"}, "check mode changes nothing"

    # The file says yes, the driver has not been restarted: the twin keeps running the old value.
    path = root_of(inventory, host) / "etc/mellanox/mlnx-bf.conf"
    path.write_text(path.read_text().replace(NO, YES))
    assert "restart pending" in twin(inventory, host, "openibd", "status")
    assert driver_mode(inventory, host) == {"p0": "none", "p1": "none"}

    run = run_playbook(PLAYBOOK, inventory, *legacy)
    assert task_changed(run, "Set IPSEC_FULL_OFFLOAD in mlnx-bf.conf") == {host}, "file right, driver not: change"
    assert task_changed(run, "Restart mlx5 driver") == {host}
    assert driver_mode(inventory, host) == {"p0": "full", "p1": "full"}
    assert eswitch_modes(inventory, host) == {"pci/0000:03:00.0": "legacy", "pci/0000:03:00.1": "legacy"}
    ports = json.loads(twin(inventory, host, "devlink", "-j", "port", "show"))["port"]
    assert {p.get("flavour") for p in ports.values()} == {"physical"}, "legacy: no representors"
    assert changed_count(run_playbook(PLAYBOOK, inventory, *legacy)) == 0

    back = run_playbook(PLAYBOOK, inventory, "--tags", "switchdev")
    assert changed_count(back) == 1, "only the eswitch changes"
    assert set(eswitch_modes(inventory, host).values()) == {"switchdev"}
    assert restarts(inventory, host) == 1, "an eswitch change needs no driver restart"

    # Legacy again, then IPsec full offload off: the driver restart puts the eswitch back to its boot mode
    # (switchdev) although the check before it found legacy everywhere: the set run must still come.
    assert changed_count(run_playbook(PLAYBOOK, inventory, *legacy)) == 1
    off = run_playbook(PLAYBOOK, inventory, *legacy, "-e", "switchdev_ipsec_full_offload=false")
    assert task_changed(off, "Restart mlx5 driver") == {host} and restarts(inventory, host) == 2
    assert task_changed(off, "Set the eswitch mode of each uplink's device") == {host}
    assert eswitch_modes(inventory, host) == {"pci/0000:03:00.0": "legacy", "pci/0000:03:00.1": "legacy"}


def test_role_argument_specs_equal_the_defaults():
    role = ROOT / "roles" / "switchdev"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    options = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert sorted(options) == sorted(defaults)
    for name, spec in options.items():
        assert spec.get("default") == defaults[name], name
        assert name.startswith("switchdev_"), name
