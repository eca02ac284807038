"""Preflight then the fabric stage on the twin, three times: a no-op re-run runs no module on the GPU hosts.

Preflight's read (gpu_info's sections peermem and acs, dpu_info's files with the NCCL files and the ACS unit's enable
link) answers the checks of peermem, pci_acs and the NCCL files task on the controller (filters peermem_plan,
acs_plan, files_plan), as 9018506 did for roce_qos. The first run converges the fleet; the second changes nothing and
runs no module process in the fabric plays of a GPU host; then one thing is broken by hand on one host (the
modules-load.d file that loads nvidia_peermem at boot is removed on sim01) and the third run runs exactly peermem on
exactly sim01, which writes the file back. Module runs are read from the runner events (``resolved_action``); the
twin's files are read directly, never through the project's code.
"""

from __future__ import annotations

from conftest import ROOT, changed_count, make_sim_inventory, run_playbook

GPU_HOSTS = ("sim01", "sim02")
PEERMEM_CONF = "etc/modules-load.d/nvidia-peermem.conf"
# actions that run on the controller only (no module process on the node)
CONTROLLER = {"ansible.builtin.set_fact", "ansible.builtin.debug", "ansible.builtin.assert", "ansible.builtin.fail",
              "ansible.builtin.meta", "ansible.builtin.include_tasks", "ansible.builtin.import_tasks",
              "ansible.builtin.include_role", "ansible.builtin.import_role", "ansible.builtin.validate_argument_spec"}


def _playbook(tmp_path):
    play = tmp_path / "preflight_fabric.yml"
    play.write_text("---\n- name: Stage 1, preflight and facts\n  ansible.builtin.import_playbook: %s\n"
                    "- name: Stage 5, RDMA fabric\n  ansible.builtin.import_playbook: %s\n"
                    % (ROOT / "playbooks" / "preflight.yml", ROOT / "playbooks" / "fabric.yml"))
    return str(play)


def fabric_module_runs(run):
    """``[(host, module), ...]`` of every module process the fabric plays ran on a GPU host, in order."""
    out = []
    for event in run["events"]:
        data = event.get("event_data", {})
        if event.get("event") not in ("runner_on_ok", "runner_on_failed") or data.get("host") not in GPU_HOSTS:
            continue
        if data.get("play", "").startswith("Fabric:") and data.get("resolved_action") not in CONTROLLER:
            out.append((data["host"], data["resolved_action"]))
    return out


def plans(run, task_prefix):
    """Host -> the plan a "Compare ..." task set (its facts), from the runner events."""
    return {e["event_data"]["host"]: e["event_data"]["res"]["ansible_facts"] for e in run["events"]
            if e.get("event") == "runner_on_ok" and e["event_data"].get("task", "").startswith(task_prefix)}


def test_noop_rerun_runs_no_gpu_host_module_and_a_broken_file_runs_exactly_its_module(tmp_path, collection_link):
    inventory = make_sim_inventory(tmp_path / "inventory", nodes=2)
    state = inventory.parent / "state"
    playbook = _playbook(tmp_path)

    first = run_playbook(playbook, inventory)
    ran_first = fabric_module_runs(first)
    for host in GPU_HOSTS:
        for module in ("bluefleet.dpu.peermem", "bluefleet.dpu.pci_acs", "bluefleet.dpu.files"):
            assert (host, module) in ran_first, (host, module, ran_first)
        assert (state / host / PEERMEM_CONF).is_file()
        assert (state / host / "etc/nccl.conf").is_file() and (state / host / "etc/profile.d/nccl.sh").is_file()

    second = run_playbook(playbook, inventory)
    assert changed_count(second) == 0, second["stdout"][-4000:]
    assert fabric_module_runs(second) == [], fabric_module_runs(second)
    for host, facts in plans(second, "Compare nvidia_peermem").items():
        assert facts["__gpu_host_peermem_plan"]["in_state"], (host, facts)
    assert set(plans(second, "Compare PCIe ACS")) == set(GPU_HOSTS)
    assert {h: f["__nccl_files_plan"]["in_state"] for h, f in plans(second, "Compare the NCCL files").items()} == \
        dict.fromkeys(GPU_HOSTS, True)
    nccl_conf = (state / "sim02" / "etc/nccl.conf").read_text()

    (state / "sim01" / PEERMEM_CONF).unlink()
    third = run_playbook(playbook, inventory)
    assert fabric_module_runs(third) == [("sim01", "bluefleet.dpu.peermem")], third["stdout"][-4000:]
    assert plans(third, "Compare nvidia_peermem")["sim01"]["__gpu_host_peermem_plan"]["changes"] == ["persist"]
    assert (third["stats"].get("changed") or {}) == {"sim01": 1}, third["stdout"][-4000:]
    assert "nvidia_peermem" in (state / "sim01" / PEERMEM_CONF).read_text().splitlines()
    assert (state / "sim02" / "etc/nccl.conf").read_text() == nccl_conf
