"""The fabric stage answers roce_qos's and the boot files' checks from preflight's read of the node (dpu_info's
sections roce and files; filters bluefleet.dpu.roce_plan and bluefleet.dpu.files_plan): a node that holds every
setting and file runs none of those modules, and one setting or file broken by hand on one node brings back exactly
that module on exactly that node, which puts it right.
"""

from __future__ import annotations

from conftest import make_sim_inventory, run_playbook, twin_tool

HOSTS = ["sim01", "sim01-dpu"]
ARGS = ("--tags", "preflight,fabric", "-e", "bluefleet_validate=false")
COMPARE = "Compare the RoCE settings with preflight's read of the node (the module runs only where they differ)"
APPLY = "Apply the lossless RoCE settings on every RoCE netdev (runtime only, lost on reboot)"
FILES_COMPARE = "Compare the boot-time files with preflight's read of the node (the modules run only where they differ)"
FILES = "Write the boot-time unit, its settings and the script that applies them"


def ran(run, task):
    """Hosts on which ``task`` ran (not skipped), and those where it changed something."""
    events = [e for e in run["events"] if e.get("event") in ("runner_on_ok", "runner_on_failed")
              and e["event_data"].get("task") == task]
    return (sorted(e["event_data"]["host"] for e in events),
            sorted(e["event_data"]["host"] for e in events if e["event_data"]["res"].get("changed")))


def trust(root, netdev):
    out = twin_tool(root, "mlnx_qos", "-i", netdev)
    assert out.returncode == 0, out.stderr
    return next(line.split(":", 1)[1].strip() for line in out.stdout.splitlines()
                if line.startswith("Priority trust state"))


def test_a_node_that_holds_everything_runs_no_module_and_one_break_brings_back_one(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=1)
    state = inventory.parent / "state"
    first = run_playbook("site.yml", inventory, *ARGS)
    assert ran(first, APPLY) == (HOSTS, HOSTS) and ran(first, FILES) == (HOSTS, HOSTS)

    # A no-op: the read answers both checks on both nodes; no roce_qos, files or systemd_service run.
    second = run_playbook("site.yml", inventory, *ARGS)
    assert ran(second, COMPARE)[0] == HOSTS and ran(second, FILES_COMPARE)[0] == HOSTS
    assert ran(second, APPLY) == ([], []) and ran(second, FILES) == ([], [])
    assert not (second["stats"].get("changed") or {}), second["stdout"][-3000:]

    # One setting broken by hand on the DPU: roce_qos runs there alone and puts it back. Its change makes the read
    # stale on that node (bluefleet_changed_at), so the boot files are compared by the files module there: no change.
    dpu = state / "sim01-dpu"
    assert twin_tool(dpu, "mlnx_qos", "-i", "p0", "--trust", "pcp").returncode == 0
    third = run_playbook("site.yml", inventory, *ARGS)
    assert ran(third, APPLY) == (["sim01-dpu"], ["sim01-dpu"]) and ran(third, FILES) == (["sim01-dpu"], [])
    assert trust(dpu, "p0") == "dscp"

    # One boot file changed by hand on the host: the files module runs there alone and writes it back.
    env_file = state / "sim01" / "etc" / "bluefleet" / "roce-qos.env"
    before = env_file.read_text()
    env_file.write_text(before.replace("ROCE_TRUST=dscp", "ROCE_TRUST=pcp"))
    fourth = run_playbook("site.yml", inventory, *ARGS)
    assert ran(fourth, FILES) == (["sim01"], ["sim01"]) and ran(fourth, APPLY) == ([], [])
    assert env_file.read_text() == before

    # A card reset in this run after the read (as the firmware stage or a driver restart says): the read no longer
    # answers, every node reads itself, and finds nothing to do.
    reset = run_playbook("site.yml", inventory, *ARGS, "-e", "bluefleet_card_reset=true")
    assert ran(reset, APPLY) == (HOSTS, []) and ran(reset, FILES) == (HOSTS, [])
