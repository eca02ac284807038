"""playbooks/fabric.yml (the RoCE QoS play, tag roce) against the device twin.

The four-times rule, a reboot that loses the QoS (the twin models it as runtime state) and gets it back from
the boot-time unit the role installs and enables (the twin runs enabled units at boot), and without the unit a
re-run that puts it back. Twin state is read with
``dpusim state`` and the tools' own output, never through the project's parsers.
"""

from __future__ import annotations

import subprocess

from conftest import BIN, changed_count, make_sim_inventory, run_playbook, twin_snapshot, twin_tool

PLAYBOOK = "playbooks/fabric.yml"
TAGS = "--tags=roce"
HOSTS = ("sim01", "sim01-dpu")
NETDEVS = {"sim01": ("ens1f0np0", "ens1f1np1"), "sim01-dpu": ("p0", "p1")}


def qos_of(inventory, host, netdev):
    root = inventory.parent / "state" / host
    net = root / "sys" / "class" / "net" / netdev
    return {"mlnx_qos": twin_tool(root, "mlnx_qos", "-i", netdev).stdout,
            "mtu": (net / "mtu").read_text().strip(),
            "ecn3": (net / "ecn" / "roce_np" / "enable" / "3").read_text().strip()}


def assert_lossless(inventory):
    for host in HOSTS:
        for netdev in NETDEVS[host]:
            got = qos_of(inventory, host, netdev)
            assert "Priority trust state: dscp" in got["mlnx_qos"], (host, netdev, got["mlnx_qos"])
            assert "\tenabled     0   0   0   1   0   0   0   0   \n" in got["mlnx_qos"], (host, netdev)
            assert "tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%" in got["mlnx_qos"], (host, netdev)
            assert got["mtu"] == "9000" and got["ecn3"] == "1", (host, netdev, got)


def test_four_times_then_reboot_loses_qos_and_boot_script_restores_it(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    run_playbook(PLAYBOOK, inventory, "--list-hosts")  # creates the twin roots
    for host in HOSTS:
        twin_tool(inventory.parent / "state" / host, "mlnx_qos", "-i", NETDEVS[host][0])  # the node after its boot
    before = twin_snapshot(inventory, HOSTS)

    check = run_playbook(PLAYBOOK, inventory, TAGS, "--check", "--diff")
    assert set(check["stats"].get("changed") or {}) == set(HOSTS)
    assert "+    trust: dscp" in check["stdout"] or "trust: dscp" in check["stdout"]
    assert twin_snapshot(inventory, HOSTS) == before, "check mode must leave the twin and its sysfs untouched"

    apply = run_playbook(PLAYBOOK, inventory, TAGS)
    assert set(apply["stats"].get("changed") or {}) == set(HOSTS)
    assert_lossless(inventory)
    dpu_root = inventory.parent / "state" / "sim01-dpu"
    assert twin_tool(dpu_root, "cma_roce_mode", "-d", "mlx5_0", "-p", "1").stdout == "RoCE v2\n"
    assert twin_tool(dpu_root, "cma_roce_tos", "-d", "mlx5_0", "-p", "1").stdout == "104\n"
    env_file = (dpu_root / "etc" / "bluefleet" / "roce-qos.env").read_text()
    assert 'ROCE_PORTS="p0:mlx5_0:1 p1:mlx5_1:1"' in env_file and "ROCE_TC_BW=8,7,7,50,7,7,7,7\n" in env_file
    unit = (dpu_root / "etc" / "systemd" / "system" / "bluefleet-roce-qos.service").read_text()
    assert "ExecStart=%s/usr/local/sbin/bluefleet-roce-qos" % dpu_root in unit

    again = run_playbook(PLAYBOOK, inventory, TAGS)
    assert changed_count(again) == 0, again["stdout"][-3000:]
    check_again = run_playbook(PLAYBOOK, inventory, TAGS, "--check", "--diff")
    assert changed_count(check_again) == 0

    # A reboot of the DPU loses every runtime setting (QoS, RDMA-CM defaults, ECN, MTU), and the boot-time unit the
    # role installed and enabled (the twin runs enabled units at boot, as systemd would) puts it back.
    subprocess.run([str(BIN / "dpusim"), "--root", str(dpu_root), "reboot"], check=True, capture_output=True,
                   timeout=120)
    assert_lossless(inventory)
    assert twin_tool(dpu_root, "cma_roce_tos", "-d", "mlx5_1", "-p", "1").stdout == "104\n"

    # Without the unit enabled, a reboot loses it all ...
    (dpu_root / "etc/systemd/system/multi-user.target.wants/bluefleet-roce-qos.service").unlink()
    subprocess.run([str(BIN / "dpusim"), "--root", str(dpu_root), "reboot"], check=True, capture_output=True,
                   timeout=120)
    lost = qos_of(inventory, "sim01-dpu", "p0")
    assert "Priority trust state: pcp" in lost["mlnx_qos"] and lost["mtu"] == "1500" and lost["ecn3"] == "0"
    assert twin_tool(dpu_root, "cma_roce_tos", "-d", "mlx5_0", "-p", "1").stdout == "0\n"
    # ... the script the unit runs, with the unit's environment file, puts it back by hand ...
    script = dpu_root / "usr" / "local" / "sbin" / "bluefleet-roce-qos"
    env_file = dpu_root / "etc/bluefleet/roce-qos.env"
    res = twin_tool(dpu_root, "sh", "-c", "set -a; . %s; set +a; %s" % (env_file, script))
    assert res.returncode == 0, res.stderr + res.stdout
    assert "bluefleet-roce-qos: p0 (mlx5_0/1) trust dscp" in res.stdout
    assert_lossless(inventory)

    # ... and after one more reboot without it, the play finds the loss and restores it (and re-enables the unit),
    # on the DPU only.
    subprocess.run([str(BIN / "dpusim"), "--root", str(dpu_root), "reboot"], check=True, capture_output=True,
                   timeout=120)
    rerun = run_playbook(PLAYBOOK, inventory, TAGS)
    assert set(rerun["stats"].get("changed") or {}) == {"sim01-dpu"}
    assert_lossless(inventory)


def test_fabric_play_publishes_bluefleet_roce(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    run = run_playbook(PLAYBOOK, inventory, TAGS, "-e", "'bluefleet_roce_priority=5 bluefleet_roce_dscp=34'")
    facts = {e["event_data"]["host"]: e["event_data"]["res"]["ansible_facts"] for e in run["events"]
             if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == "Publish the RoCE settings as "
             "bluefleet_roce"}
    assert set(facts) == set(HOSTS)
    for host, published in facts.items():
        fact = published["bluefleet_roce"]
        assert fact["priority"] == 5 and fact["dscp"] == 34 and fact["tos"] == 136 and fact["traffic_class"] == 136
        assert fact["pfc"] == [5] and fact["roce_mode"] == "v2" and fact["mtu"] == 9000 and fact["trust"] == "dscp"
        assert fact["netdevs"] == list(NETDEVS[host]) and fact["ibdevs"] == ["mlx5_0", "mlx5_1"], fact
        assert fact["gid_index"] == 1 and published["bluefleet_roce_gid_index"] == 1  # link-local v2: no IPv4 here
    assert "\tenabled     0   0   0   0   0   1   0   0   \n" in qos_of(inventory, "sim01-dpu", "p0")["mlnx_qos"]


def test_nccl_extra_settings_written_and_a_bad_name_refused_before_any_write(tmp_path, collection_link):
    """nccl_extra is checked where the NCCL settings are derived (bluefleet.dpu.nccl_env, option extra), not by a
    task of its own: an NCCL_* name reaches /etc/nccl.conf; a name that is not one fails naming it, and the file
    is left as it was."""
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    conf = inventory.parent / "state" / "sim01" / "etc" / "nccl.conf"
    run_playbook(PLAYBOOK, inventory, "-e", "'{\"nccl_extra\": {\"NCCL_DEBUG\": \"INFO\"}}'")
    written = conf.read_text()
    assert "NCCL_DEBUG=INFO\n" in written and "NCCL_IB_HCA=" in written, written
    extra = "'{\"nccl_extra\": {\"NCCL_DEBUG\": \"WARN\", \"nccl_algo\": \"Ring\"}}'"
    bad = run_playbook(PLAYBOOK, inventory, "-e", extra, check=False)
    assert bad["rc"] != 0
    failed = [e["event_data"]["res"].get("msg", "") for e in bad["events"] if e.get("event") == "runner_on_failed"]
    assert len(failed) == 1 and "nccl_extra must map NCCL_* names to values, got 'nccl_algo'" in failed[0], failed
    assert conf.read_text() == written
