"""The fabric stage answers roce_qos's and the boot files' checks from preflight's read of the node (dpu_info's
sections roce and files; filters bluefleet.dpu.roce_plan and bluefleet.dpu.files_plan): a node that holds every
setting and file runs none of those modules - the role ends after its plan (meta: end_role), with roce_qos_facts
kept and published - and one setting or file broken by hand on one node brings back exactly that module on exactly
that node, which puts it right.
"""

from __future__ import annotations

from conftest import make_sim_inventory, run_playbook, twin_tool

HOSTS = ["sim01", "sim01-dpu"]
ARGS = ("--tags", "preflight,fabric", "-e", "bluefleet_validate=false")
COMPARE = ("Compare the RoCE settings and the boot-time files with preflight's read of the node (the modules run only "
           "where they differ)")
APPLY = "Apply the lossless RoCE settings on every RoCE netdev (runtime only, lost on reboot)"
FILES = "Write the boot-time unit, its settings and the script that applies them"
PUBLISH = "Publish the RoCE settings as bluefleet_roce"
END = "End the role where preflight's read answered both checks and nothing differs"
LATE_CHECK = "Check the role's inputs (meta/argument_specs.yml) where the play planned first"


def ran(run, task):
    """Hosts on which ``task`` ran (not skipped), and those where it changed something."""
    events = [e for e in run["events"] if e.get("event") in ("runner_on_ok", "runner_on_failed")
              and e["event_data"].get("task") == task]
    return (sorted(e["event_data"]["host"] for e in events),
            sorted(e["event_data"]["host"] for e in events if e["event_data"]["res"].get("changed")))


def passed(run, role):
    """Host -> the tasks of ``role`` it passed through (ran or skipped), in order."""
    out = {}
    for e in run["events"]:
        if e.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped") \
                and e["event_data"].get("role") == role:
            out.setdefault(e["event_data"]["host"], []).append(e["event_data"]["task"])
    return out


def published(run):
    """Host -> the facts the play published from roce_qos_facts (bluefleet_roce)."""
    return {e["event_data"]["host"]: e["event_data"]["res"]["ansible_facts"] for e in run["events"]
            if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == PUBLISH}


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

    # A no-op: the read answers both checks on both nodes; no roce_qos, files or systemd_service run, and the role
    # ends after its plan: no later task of it, not even a skipped one, and no argument check before it (the play
    # imports the role plan first; preflight checked its inputs in this run). The facts the GPU plays read are
    # published all the same, from the read, as the first run published them from the module's.
    second = run_playbook("site.yml", inventory, *ARGS)
    assert passed(second, "roce_qos") == dict.fromkeys(HOSTS, [COMPARE]), passed(second, "roce_qos")
    assert published(second) == published(first) and set(published(second)) == set(HOSTS)
    assert published(second)["sim01-dpu"]["bluefleet_roce"]["netdevs"] == ["p0", "p1"]
    assert not (second["stats"].get("changed") or {}), second["stdout"][-3000:]
    # opensm on this RoCE fabric: nothing to set, valid settings; the role ends before its first task.
    assert passed(second, "opensm") == {}

    # One setting broken by hand on the DPU: roce_qos runs there alone and puts it back. Its change makes the read
    # stale on that node (bluefleet_changed_at), so the boot files are compared by the files module there: no change.
    dpu = state / "sim01-dpu"
    assert twin_tool(dpu, "mlnx_qos", "-i", "p0", "--trust", "pcp").returncode == 0
    third = run_playbook("site.yml", inventory, *ARGS)
    assert ran(third, APPLY) == (["sim01-dpu"], ["sim01-dpu"]) and ran(third, FILES) == (["sim01-dpu"], [])
    assert trust(dpu, "p0") == "dscp"
    assert passed(third, "roce_qos")["sim01"] == [COMPARE]
    # the node with something to do checks the role's inputs after the plan, before the module
    assert passed(third, "roce_qos")["sim01-dpu"][:3] == [COMPARE, END, LATE_CHECK], passed(third, "roce_qos")
    assert published(third) == published(first)

    # One boot file changed by hand on the host: the files module runs there alone and writes it back.
    env_file = state / "sim01" / "etc" / "bluefleet" / "roce-qos.env"
    before = env_file.read_text()
    env_file.write_text(before.replace("ROCE_TRUST=dscp", "ROCE_TRUST=pcp"))
    fourth = run_playbook("site.yml", inventory, *ARGS)
    assert ran(fourth, FILES) == (["sim01"], ["sim01"]) and ran(fourth, APPLY) == ([], [])
    assert env_file.read_text() == before
    assert passed(fourth, "roce_qos")["sim01-dpu"] == [COMPARE]

    # A card reset in this run after the read (as the firmware stage or a driver restart says): the read no longer
    # answers, every node reads itself, and finds nothing to do.
    reset = run_playbook("site.yml", inventory, *ARGS, "-e", "bluefleet_card_reset=true")
    assert ran(reset, APPLY) == (HOSTS, []) and ran(reset, FILES) == (HOSTS, [])
    assert published(reset) == published(first)  # from the module's read

    # A reset fact set on one node only (as the firmware role sets firmware_card_reset on the node it reset): on the
    # DPU it also stales its GPU host's read (a DPU reset clears the host's runtime settings), on the GPU host only
    # that host's.
    host_vars = inventory.parent / "host_vars"
    host_vars.mkdir()
    (host_vars / "sim01-dpu.yml").write_text("firmware_card_reset: true\n")
    dpu_reset = run_playbook("site.yml", inventory, *ARGS)
    assert ran(dpu_reset, APPLY) == (HOSTS, []), ran(dpu_reset, APPLY)
    (host_vars / "sim01-dpu.yml").unlink()
    (host_vars / "sim01.yml").write_text("switchdev_card_reset: true\n")
    host_reset = run_playbook("site.yml", inventory, *ARGS)
    assert ran(host_reset, APPLY) == (["sim01"], []), ran(host_reset, APPLY)
