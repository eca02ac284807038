"""IPsec / OVS / GPU-host overlay plays of playbooks/offload.yml against the simulated fleet.

Sim nodes share this machine's kernel (bluefleet_linux_services=false): the ipsec role renders the swanctl
files under each DPU's twin root and starts nothing; the ovs and host_overlay roles say why they leave this
machine alone. Addresses come from host_vars next to the inventory, as a real inventory would give them.
Four runs (check, apply, apply, check), then bad input: each a clear error and nothing written.
"""

from __future__ import annotations

import hashlib
import stat

import pytest
import yaml
from conftest import changed_count, make_sim_inventory, run_playbook

PSK = "Zr8v1QnT4pXw7LcY2mKd9sHf3JbE6uGa0NqVtR5y"  # test-only, 40 characters, 36 distinct
TAGS = ("--tags", "ipsec,ovs,host_overlay")


def inventory(tmp_path, dpu_vars=None, group_vars=None, nodes=2):
    inv = make_sim_inventory(tmp_path / "inventory", nodes=nodes)
    hv = inv.parent / "host_vars"
    hv.mkdir()
    for i in range(1, nodes + 1):
        dvars = {"bluefleet_uplink_address": f"192.168.50.{i}/24", "bluefleet_vtep_address": f"172.30.0.{i}/32"}
        dvars.update((dpu_vars or {}).get(i, {}))
        (hv / f"sim{i:02d}-dpu.yml").write_text(yaml.safe_dump(dvars))
        (hv / f"sim{i:02d}.yml").write_text(yaml.safe_dump({"bluefleet_host_overlay_address": f"10.10.0.{i}/24"}))
    gv = inv.parent / "group_vars"
    gv.mkdir()
    (gv / "all.yml").write_text(yaml.safe_dump(dict({"ipsec_psk": PSK}, **(group_vars or {}))))
    return inv


def swanctl_files(inv):
    """{relative path: (mode, sha256)} of everything under the DPUs' etc/swanctl."""
    out = {}
    for path in sorted((inv.parent / "state").glob("*-dpu/etc/swanctl/**/*")):
        if path.is_file():
            out[str(path.relative_to(inv.parent))] = (stat.S_IMODE(path.stat().st_mode),
                                                      hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def test_four_runs_render_under_the_twin_root_and_converge(tmp_path, collection_link):
    inv = inventory(tmp_path)
    check1 = run_playbook("playbooks/offload.yml", inv, *TAGS, "--check", "--diff")
    assert changed_count(check1) > 0 and swanctl_files(inv) == {}, "check mode wrote files"
    apply1 = run_playbook("playbooks/offload.yml", inv, *TAGS)
    assert changed_count(apply1) == 6  # swanctl directories, connections, secrets on each DPU
    files = swanctl_files(inv)
    conf = inv.parent / "state/sim01-dpu/etc/swanctl/conf.d/bluefleet.conf"
    secrets = inv.parent / "state/sim01-dpu/etc/swanctl/conf.d/bluefleet-secrets.conf"
    assert files[str(conf.relative_to(inv.parent))][0] == 0o600
    assert files[str(secrets.relative_to(inv.parent))][0] == 0o600
    text = conf.read_text()
    assert "bf-sim02-dpu {" in text and "remote_addrs = 192.168.50.2" in text and "local_addrs = 192.168.50.1" in text
    assert "local_ts = 172.30.0.1/32" in text and "remote_ts = 172.30.0.2/32" in text
    assert "hw_offload = packet" in text and "start_action = trap" in text and "encap = no" in text
    assert f'secret = "{PSK}"' in secrets.read_text()
    assert PSK not in apply1["stdout"] and PSK not in check1["stdout"], "the PSK reached the output"
    assert "bluefleet_linux_services is false" in apply1["stdout"]  # ovs / host_overlay say why they skip
    apply2 = run_playbook("playbooks/offload.yml", inv, *TAGS)
    assert changed_count(apply2) == 0 and swanctl_files(inv) == files
    check2 = run_playbook("playbooks/offload.yml", inv, *TAGS, "--check", "--diff")
    assert changed_count(check2) == 0


@pytest.mark.parametrize("dpu_vars, group_vars, message", [
    ({}, {"ipsec_psk": "ab" * 20}, "ipsec_psk is missing or weak"),
    ({}, {"ipsec_pairs": [["sim01-dpu", "sim09-dpu"]]}, "names 'sim09-dpu', which is not a DPU"),
    ({2: {"bluefleet_vtep_address": "192.168.50.99/32"}}, {}, "lies in the fabric subnet"),
])
def test_bad_input_fails_clearly_and_writes_nothing(tmp_path, collection_link, dpu_vars, group_vars, message):
    inv = inventory(tmp_path, dpu_vars, group_vars)
    run = run_playbook("playbooks/offload.yml", inv, "--tags", "ipsec", "--limit", "dpus", check=False)
    assert run["rc"] != 0 and message in run["stdout"], run["stdout"][-3000:]
    assert swanctl_files(inv) == {}
    assert "abababab" not in run["stdout"], "the PSK reached the output"


def test_without_addresses_each_role_says_why_and_ends_there(tmp_path, collection_link):
    """A fleet without IPsec or overlay addresses (the plain sim inventory): the inputs check, ipsec, ovs and
    host_overlay each say why and end there, passing through no further task (not even skipped); ovs and
    host_overlay once per host, ipsec once for the play (no DPU of its group has an address: the group's answer)."""
    inv = make_sim_inventory(tmp_path / "inventory", nodes=2)
    run = run_playbook("playbooks/offload.yml", inv, *TAGS)
    assert changed_count(run) == 0

    def seen(task):
        return sorted(e["event_data"]["host"] for e in run["events"]
                      if e.get("event") in ("runner_on_ok", "runner_on_skipped", "runner_on_failed")
                      and e["event_data"].get("task") == task)

    later = ("Check the IPsec inputs", "Check and configure IPsec", "Configure the bridge and the overlay",
             "Overlay address and MTU on the card's host netdev")
    assert {task: seen(task) for task in later if seen(task)} == {}
    dpus, hosts = ["sim01-dpu", "sim02-dpu"], ["sim01", "sim02"]
    assert seen("Say why IPsec is not configured on the group (once for the play)") == ["sim01-dpu"]
    assert seen("Say why IPsec is not configured") == []
    assert seen("Say why Open vSwitch is not configured") == dpus
    assert seen("Say why the overlay address is not configured") == hosts
