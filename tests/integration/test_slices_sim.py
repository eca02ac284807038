"""The fleet as K job slices (AWX-style): 4 ``--limit`` slices of playbooks/upgrade.yml run concurrently on one
sim fleet and give the same result, host by host, as a single run over a second, identical fleet.

A slice holds whole pairs (a GPU host and its DPU together): the upgrade works on a DPU from its host's side
too (rshim, the host restriction), so a pair is never split. Nothing in the play may assume that it sees the
whole fleet; each slice runs its own canary (bench/README.md, "Job slicing", says how to keep one canary).
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

from conftest import BIN, ROOT, ansible_env, make_sim_inventory, twin_state

NEW_FW = "32.43.1014"
PAIRS = 4
HOSTS = ["sim%02d" % i for i in range(1, PAIRS + 1)] + ["sim%02d-dpu" % i for i in range(1, PAIRS + 1)]


def pair_slices(k):
    """k slices of whole pairs, round robin (what a job template's slice count does, pairs kept together)."""
    slices = [[] for _slice in range(k)]
    for index in range(PAIRS):
        host = "sim%02d" % (index + 1)
        slices[index % k] += [host, host + "-dpu"]
    return slices


def make_fleet(directory):
    inventory = make_sim_inventory(directory / "inventory", nodes=PAIRS)
    image = directory / "fw.bin"
    subprocess.run([str(BIN / "dpusim"), "make-image", "--kind", "nic-fw", "--profile", "bluefield3", "--version",
                    NEW_FW, "-o", str(image)], check=True, capture_output=True, timeout=60)
    extra = directory / "extra.json"
    extra.write_text(json.dumps({"firmware_nic_image": str(image), "firmware_nic_version": NEW_FW,
                                 "bluefleet_state_dir": str(directory / "records")}))
    subprocess.run([str(BIN / "ansible-inventory"), "-i", str(inventory), "--list"], env=ansible_env(), check=True,
                   capture_output=True, timeout=600)  # creates the twin roots before the concurrent runs
    return inventory, extra


def upgrade(inventory, extra, *limit):
    argv = [str(BIN / "ansible-playbook"), "-i", str(inventory), "playbooks/upgrade.yml", "-e", "@%s" % extra]
    if limit:
        argv += ["--limit", ",".join(limit)]
    proc = subprocess.run(argv, cwd=str(ROOT), env=ansible_env(), capture_output=True, text=True, timeout=1800,
                          check=False)
    assert proc.returncode == 0, "upgrade %s failed:\n%s" % (limit or "(whole fleet)", proc.stdout[-5000:])
    return recap(proc.stdout)


def recap(stdout):
    """{host: {ok, changed, failed, skipped}} from the PLAY RECAP."""
    out = {}
    for line in stdout[stdout.rindex("PLAY RECAP"):].splitlines()[1:]:
        if ":" not in line:
            continue
        host, counts = line.split(":", 1)
        fields = dict(field.split("=") for field in counts.split())
        out[host.strip()] = {k: int(fields[k]) for k in ("ok", "changed", "failed", "skipped")}
    return out


def outcome(directory):
    """What the upgrade left, per host: the card's firmware and reset counters, and the rollback record."""
    out = {}
    for host in HOSTS:
        card = twin_state(directory / "inventory" / "state" / host)["cards"][0]
        record = directory / "records" / (host + ".json")
        out[host] = {"running": card["firmware"]["running"]["version"], "arm_boot_id": card["arm_boot_id"],
                     "power_cycles": card["power_cycles"],
                     "record": json.loads(record.read_text()) if record.exists() else None}
    return out


def test_pair_slices_cover_the_fleet_once_and_keep_pairs():
    slices = pair_slices(4)
    assert sorted(h for s in slices for h in s) == sorted(HOSTS)
    for hosts in slices:
        assert {h.removesuffix("-dpu") for h in hosts} == {h for h in hosts if not h.endswith("-dpu")}


def test_four_concurrent_slices_equal_one_run(tmp_path, collection_link):
    single_dir, sliced_dir = tmp_path / "single", tmp_path / "sliced"
    single_inv, single_extra = make_fleet(single_dir)
    sliced_inv, sliced_extra = make_fleet(sliced_dir)
    single = upgrade(single_inv, single_extra)
    with ThreadPoolExecutor(max_workers=4) as pool:
        parts = list(pool.map(lambda hosts: upgrade(sliced_inv, sliced_extra, *hosts), pair_slices(4)))
    union = {}
    for part in parts:
        assert not set(part) & set(union), "a host ran in two slices"
        union.update(part)
    assert sorted(union) == sorted(single) and not any(r["failed"] for r in union.values())
    # The recaps may differ by one task per DPU: the controller-side records folder is created by whichever
    # run gets there first (the canary in a single run, any slice's first node when slices run at once); and the
    # run_once checks (inputs, gate) run on each slice's first host, where a single run has one first host.
    # A GPU host that upgrades no card (a DPU owns it) runs no task of upgrade.yml: it is in neither recap.
    once = (ROOT / "playbooks" / "upgrade.yml").read_text().count("run_once: true")
    assert {h for h in HOSTS if h.endswith("-dpu")} <= set(single), sorted(single)
    for host in single:
        assert abs(union[host]["ok"] - single[host]["ok"]) <= 1 + once, (host, union[host], single[host])
        assert abs(union[host]["changed"] - single[host]["changed"]) <= 1, (host, union[host], single[host])
    single_out, sliced_out = outcome(single_dir), outcome(sliced_dir)
    assert all(single_out[h]["running"] == NEW_FW for h in HOSTS if h.endswith("-dpu"))
    for host in HOSTS:
        record_a, record_b = single_out[host].pop("record"), sliced_out[host].pop("record")
        assert (record_a is None) == (record_b is None), host
        if record_a is not None:
            assert record_a["previous"] == record_b["previous"] and record_a["target"] == record_b["target"], host
    assert sliced_out == single_out
