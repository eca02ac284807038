"""roles/firewall (the firewall play of playbooks/offload.yml) against the sim: the rendered file under each DPU's
twin root, checked with ``nft -c`` where nft is installed and never loaded (``bluefleet_linux_services: false``),
the four-times rule, and a bad policy stopped before anything is written.

In the lab the same role loads the file (tests/validation/test_firewall.py checks that it really filters).
"""

from __future__ import annotations

from conftest import changed_count, make_sim_inventory, run_playbook

PLAYBOOK = "playbooks/offload.yml"
FIREWALL = ("--tags", "firewall")
DPUS = ("sim01-dpu", "sim02-dpu")
RULESET = "etc/nftables.d/bluefleet-firewall.nft"


def fleet(tmp_path, addresses=True):
    """A two-pair sim; with ``addresses`` a second inventory source gives the GPU hosts their overlay address."""
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=2)
    if addresses:
        (inventory.parent / "addresses.yml").write_text(
            "all:\n  hosts:\n    sim01: {bluefleet_host_overlay_address: 10.10.0.1/24}\n"
            "    sim02: {bluefleet_host_overlay_address: 10.10.0.2/24}\n")
        return inventory.parent
    return inventory


def root(inventory, host):
    base = inventory if inventory.is_dir() else inventory.parent
    return base / "state" / host


def files(inventory):
    out = {}
    for host in DPUS:
        for rel in (RULESET, "etc/nftables.conf"):
            path = root(inventory, host) / rel
            out[(host, rel)] = path.read_text() if path.exists() else None
    return out


def failures(run):
    return {e["event_data"]["host"]: e["event_data"]["res"].get("msg", "") for e in run["events"]
            if e.get("event") == "runner_on_failed"}


def test_four_times_rule_writes_the_checked_file_only(tmp_path, collection_link):
    inventory = fleet(tmp_path)
    run_playbook(PLAYBOOK, inventory, "--list-hosts")
    assert set(files(inventory).values()) == {None}

    check = run_playbook(PLAYBOOK, inventory, *FIREWALL, "--check", "--diff")
    assert set(check["stats"].get("changed") or {}) == set(DPUS)
    assert set(files(inventory).values()) == {None}, "check mode writes nothing"

    apply = run_playbook(PLAYBOOK, inventory, *FIREWALL)
    assert set(apply["stats"].get("changed") or {}) == set(DPUS)
    written = files(inventory)
    for host in DPUS:
        text = written[(host, RULESET)]
        assert text.splitlines()[2:4] == ["table netdev bluefleet_firewall", "delete table netdev bluefleet_firewall"]
        assert '\t\ttype filter hook egress device "vxlan0" priority filter; policy drop;' in text
        assert '\t\ttype filter hook egress device "pf0hpf" priority filter; policy drop;' in text
        assert ('\t\tip daddr { 10.10.0.1/32, 10.10.0.2/32 } tcp dport { 5201 } counter accept '
                'comment "iperf3 between GPU hosts"') in text
        assert written[(host, "etc/nftables.conf")] == 'include "/etc/nftables.d/bluefleet-firewall.nft"\n'
    assert not [e for e in apply["events"] if e.get("event") == "runner_on_ok"
                and e["event_data"].get("task", "").startswith("Load the ruleset")], "the sim loads nothing"

    again = run_playbook(PLAYBOOK, inventory, *FIREWALL)
    assert changed_count(again) == 0, again["stdout"][-3000:]
    check_again = run_playbook(PLAYBOOK, inventory, *FIREWALL, "--check", "--diff")
    assert changed_count(check_again) == 0, check_again["stdout"][-3000:]
    assert files(inventory) == written


def test_bad_policy_stops_before_anything_is_written(tmp_path, collection_link):
    inventory = fleet(tmp_path)
    policy = tmp_path / "policy.yml"
    policy.write_text("firewall_networks:\n  - name: overlay\n    host_port: pf0hpf\n    fabric_port: vxlan0\n"
                      "    rules:\n      - {peers: [gpu_hosts, 10.9.0.1/16], protocol: tcp, ports: [22]}\n")
    run = run_playbook(PLAYBOOK, inventory, *FIREWALL, "-e", "@%s" % policy, check=False)
    assert run["rc"] != 0
    for host in DPUS:
        msg = failures(run)[host]
        assert "firewall_ruleset: network overlay, rule 1: peer '10.9.0.1/16' is not a valid CIDR" in msg, msg
    assert set(files(inventory).values()) == {None}


def test_inventory_without_addresses_renders_and_says_so(tmp_path, collection_link):
    """No host has the address variable: said once for the play (not on every DPU), where the play read the addresses;
    a DPU that reads with a variable of its own (host_vars) and finds no host with it says so for itself, where the
    role goes on (here always: without preflight's read of this run no DPU ends the role early)."""
    inventory = fleet(tmp_path, addresses=False)
    (inventory.parent / "own_var.yml").write_text(
        "all:\n  hosts:\n    sim02-dpu: {firewall_address_var: bluefleet_no_such_address}\n")
    sources = inventory.parent

    def said(run):
        return sorted((e["event_data"]["host"], e["event_data"]["res"]["msg"]) for e in run["events"]
                      if e.get("event") == "runner_on_ok" and "group peers resolve" in e["event_data"].get("task", ""))

    first = said(run_playbook(PLAYBOOK, sources, *FIREWALL))
    assert [host for host, _message in first] == ["sim01-dpu", "sim02-dpu"], first
    assert first[0][1].startswith("No host of the inventory has bluefleet_host_overlay_address, so peers given as "
                                  "inventory groups allow nothing on the DPUs of this play"), first
    assert first[1][1].startswith("sim02-dpu: no host of the inventory has bluefleet_no_such_address"), first
    text = files(inventory)[("sim01-dpu", RULESET)]
    assert "ip daddr" not in text and "\t\tcounter drop" in text, "no peer resolved: only the data path passes"
    assert said(run_playbook(PLAYBOOK, sources, *FIREWALL)) == first


def test_preflights_read_answers_whether_nft_is_there(tmp_path, collection_link):
    """Where preflight's read of the cards in this run says whether nft is there (bluefleet_dpu_info, section tools),
    the role does not ask nft again: a read without nft stops a node that loads the ruleset, naming the read's words;
    a read with nft checks the file with nft -c. A read that does not say runs 'Look for nft' as before."""
    import json

    inventory = fleet(tmp_path)
    tasks = {"Look for nft", "Require nft where the ruleset is loaded"}

    def ran(run):
        return sorted((e["event_data"]["host"], e["event_data"]["task"]) for e in run["events"]
                      if e.get("event") in ("runner_on_ok", "runner_on_failed")
                      and e["event_data"].get("task") in tasks)

    absent = {"tools": {"tools": {"nftables": {"present": False, "path": None, "version": None,
                                               "note": "nft not found on PATH"}}}}
    extra = tmp_path / "absent.json"
    extra.write_text(json.dumps({"bluefleet_dpu_info": absent, "firewall_linux_services": True}))
    run = run_playbook(PLAYBOOK, inventory, *FIREWALL, "-e", "@%s" % extra, check=False)
    assert run["rc"] != 0
    assert ran(run) == [(host, "Require nft where the ruleset is loaded") for host in DPUS]
    for host in DPUS:
        assert "%s: nft is not installed (nft not found on PATH); install the nftables package" % host \
            in failures(run)[host]
    assert set(files(inventory).values()) == {None}, "nothing is written before the check"
    # a read with nft: no 'Look for nft', and the file is checked with nft -c (a twin root has no nft: a false
    # path makes the check fail, which shows that it ran)
    there = {"tools": {"tools": {"nftables": {"present": True, "path": "/usr/sbin/nft", "version": "1.0.6",
                                              "note": None}}}}
    extra = tmp_path / "there.json"
    extra.write_text(json.dumps({"bluefleet_dpu_info": there, "bluefleet_environment": {"PATH": str(tmp_path)}}))
    run = run_playbook(PLAYBOOK, inventory, *FIREWALL, "-e", "@%s" % extra, check=False)
    assert ran(run) == []
    for host in DPUS:
        assert "nft -c -f" in failures(run)[host], failures(run)
    # no read: the role asks nft itself
    run = run_playbook(PLAYBOOK, inventory, *FIREWALL)
    assert ran(run) == [(host, "Look for nft") for host in DPUS]


# The firewall role's tasks after its plans: where preflight's read answered that the ruleset and the include are as
# rendered and nothing is loaded into a kernel (the sim), an end_role leaves them out.
FIREWALL_LATER = ("Look for nft", "Require nft where the ruleset is loaded",
                  "Write the ruleset (checked with nft -c first)",
                  "Include the ruleset in nftables.conf (loaded at boot)", "Load the ruleset into the kernel")


def seen(run, task):
    """Hosts that went through ``task`` at all (ran, skipped or failed)."""
    return sorted(e["event_data"]["host"] for e in run["events"]
                  if e.get("event") in ("runner_on_ok", "runner_on_skipped", "runner_on_failed")
                  and e["event_data"].get("task") == task)


def test_preflights_read_answers_whether_the_ruleset_differs(tmp_path, collection_link):
    """preflight read the ruleset file's sha256 and mode, and whether nftables.conf holds the include as lineinfile
    leaves it, in this run (dpu_info's section files): where both are as rendered, neither the files module nor
    lineinfile runs, and the role ends after its plans; a file changed by hand on one DPU brings back its module on
    that DPU alone."""
    inventory = fleet(tmp_path)
    args = ("--tags", "preflight,firewall", "-e", "bluefleet_validate=false")
    write = "Write the ruleset (checked with nft -c first)"
    include = "Include the ruleset in nftables.conf (loaded at boot)"

    def ran(run, task=write):
        return sorted((e["event_data"]["host"], bool(e["event_data"]["res"].get("changed"))) for e in run["events"]
                      if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == task)

    first = run_playbook("site.yml", inventory, *args)
    assert ran(first) == [(host, True) for host in DPUS] and ran(first, include) == [(host, True) for host in DPUS]
    written = files(inventory)
    again = run_playbook("site.yml", inventory, *args)
    for task in FIREWALL_LATER:
        assert seen(again, task) == [], task
    ruleset = root(inventory, "sim02-dpu") / RULESET
    ruleset.write_text(ruleset.read_text() + "# changed by hand\n")
    fixed = run_playbook("site.yml", inventory, *args)
    assert ran(fixed) == [("sim02-dpu", True)] and ran(fixed, include) == []
    assert files(inventory) == written

    # The include taken out of one DPU's nftables.conf, the file's mode changed on the other: lineinfile runs on
    # both, each for its own reason, and puts them right; the ruleset is not written.
    conf = root(inventory, "sim01-dpu") / "etc/nftables.conf"
    conf.write_text("flush ruleset\n")
    other = root(inventory, "sim02-dpu") / "etc/nftables.conf"
    other.chmod(0o644)
    fixed = run_playbook("site.yml", inventory, *args)
    assert ran(fixed, include) == [(host, True) for host in DPUS] and ran(fixed) == []
    assert conf.read_text() == 'flush ruleset\ninclude "/etc/nftables.d/bluefleet-firewall.nft"\n'
    assert other.stat().st_mode & 0o777 == 0o755
    assert not [task for task in FIREWALL_LATER if seen(run_playbook("site.yml", inventory, *args), task)]


def test_a_node_that_loads_the_ruleset_reads_the_kernels_table_every_run(tmp_path, collection_link):
    """With firewall_linux_services a reboot loses the table the file defines: the role reads the kernel's table on
    every run, also where preflight's read answered the file and the include (no early end there). Each DPU's twin
    root gets an nft that answers and says what it was asked."""
    inventory = fleet(tmp_path)
    run_playbook(PLAYBOOK, inventory, "--list-hosts")
    for host in DPUS:
        nft = root(inventory, host) / "bin" / "nft"
        nft.write_text('#!/bin/sh\necho "$*" >> "$(dirname "$0")/../nft.log"\n'
                       '[ "$1" = --version ] && echo "nftables v1.0.6 (Lester Gooch #5)"\nexit 0\n')
        nft.chmod(0o755)
    args = ("--tags", "preflight,firewall", "-e", "bluefleet_validate=false", "-e", "firewall_linux_services=true")
    first = run_playbook("site.yml", inventory, *args)
    assert sorted(seen(first, "Load the ruleset (only when the file changed or the table is missing)")) == list(DPUS)
    for host in DPUS:
        (root(inventory, host) / "nft.log").unlink()
    again = run_playbook("site.yml", inventory, *args)
    assert changed_count(again) == 0, again["stdout"][-3000:]
    assert seen(again, "Read the role's table from the kernel") == list(DPUS)
    assert seen(again, "Write the ruleset (checked with nft -c first)") == list(DPUS), "answered, skipped: no end"
    for host in DPUS:
        assert "list table netdev bluefleet_firewall" in (root(inventory, host) / "nft.log").read_text()
