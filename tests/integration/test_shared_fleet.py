"""The session's read-only sim fleet (conftest ``shared_sim_fleet``): reading leaves it as it was, and the
fingerprint that guards it sees a write (so a test that changes state cannot share it unnoticed)."""

from __future__ import annotations

from pathlib import Path

from conftest import fleet_fingerprint, sim_hostvars, twin_tool

MST = "/dev/mst/mt41692_pciconf0"  # bluefield3's device in `mst status`
READS = (("mst", "status"), ("flint", "-d", MST, "q"), ("mlxconfig", "-d", MST, "q"), ("dpusim", "state"))


def _root(hostvars: dict, host: str) -> Path:
    value = hostvars[host]["bluefleet_environment"]["DPUSIM_ROOT"]
    return Path(value["__ansible_unsafe"] if isinstance(value, dict) else value)


def test_reads_leave_the_shared_fleet_as_it_was(shared_sim_fleet):
    inventory, hostvars = shared_sim_fleet["inventory"], shared_sim_fleet["hostvars"]
    assert sorted(hostvars) == ["sim01", "sim01-dpu", "sim02", "sim02-dpu"]
    before = fleet_fingerprint(inventory)
    assert before, "the fleet has twin state files"
    for host in hostvars:
        for argv in READS:
            proc = twin_tool(_root(hostvars, host), *argv)
            assert proc.returncode == 0, "%s on %s: %s%s" % (argv, host, proc.stdout, proc.stderr)
    assert fleet_fingerprint(inventory) == before


def test_the_fingerprint_sees_a_write(sim_inventory):
    hostvars = sim_hostvars(sim_inventory)
    before = fleet_fingerprint(sim_inventory)
    proc = twin_tool(_root(hostvars, "sim01-dpu"), "mlxconfig", "-d", MST, "-y", "set",
                     "INTERNAL_CPU_OFFLOAD_ENGINE=1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = fleet_fingerprint(sim_inventory)
    changed = [k for k in set(before) | set(after) if before.get(k) != after.get(k)]
    assert changed and all(k.startswith("sim01") for k in changed), changed  # the pair's card (sim01.card/...)
