"""Preflight then the fabric stage on the twin, three times: a no-op re-run runs no module on the GPU hosts.

Preflight's read (gpu_info's sections peermem and acs, dpu_info's files with the NCCL files and the ACS unit's enable
link) answers the checks of peermem, pci_acs and the NCCL files task on the controller (filters peermem_plan,
acs_plan, files_plan), as 9018506 did for roce_qos. The first run converges the fleet; the second changes nothing and
runs no module process in the fabric plays of a GPU host - the gpu_host and nccl roles end after their plans (meta:
end_role), the facts the plays after them read kept and published; then one thing is broken by hand on one host (the
modules-load.d file that loads nvidia_peermem at boot is removed on sim01) and the third run runs exactly peermem on
exactly sim01, which writes the file back; then the ACS unit and nccl.conf are broken on sim02, and the fourth run runs
exactly pci_acs and the NCCL files task there. Module runs are read from the runner events (``resolved_action``); the
twin's files are read directly, never through the project's code.
"""

from __future__ import annotations

from conftest import ROOT, changed_count, make_sim_inventory, run_playbook

GPU_HOSTS = ("sim01", "sim02")
PEERMEM_CONF = "etc/modules-load.d/nvidia-peermem.conf"
ACS_UNIT = "etc/systemd/system/bluefleet-pci-acs.service"
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


def passed(run, role):
    """Host -> the tasks of ``role`` it passed through (ran or skipped), in order, the argument checks left out (the
    one ansible-core prepends, and the role's own after its plan where the play planned first)."""
    out = {}
    for e in run["events"]:
        data = e.get("event_data", {})
        if e.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped") and data.get("role") == role \
                and not data["task"].startswith(("Validating arguments", "Check the role's inputs")):
            out.setdefault(data["host"], []).append(data["task"])
    return out


def facts_of(run, task):
    """Host -> the facts ``task`` set."""
    return {e["event_data"]["host"]: e["event_data"]["res"]["ansible_facts"] for e in run["events"]
            if e.get("event") == "runner_on_ok" and e["event_data"].get("task") == task}


GPU_PLAN = ("Compare nvidia_peermem and PCIe ACS with preflight's read of the host (the modules run only where "
            "something differs)")
NCCL_PLAN = ("Derive the NCCL settings and compare the NCCL files with preflight's read of the host (the module runs "
             "only where they differ)")
AFFINITY = "Publish the GPU-NIC affinity as bluefleet_gpu_nic_affinity"
END = "End the role where preflight's read answered every check and nothing differs"  # skipped where it does not end


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
        assert facts["__gpu_host_acs_plan"]["in_state"] and facts["__gpu_host_acs_link_plan"]["in_state"], (host, facts)
    assert {h: f["__nccl_files_plan"]["in_state"] for h, f in plans(second, "Derive the NCCL settings").items()} == \
        dict.fromkeys(GPU_HOSTS, True)
    # Both roles end after their plans: no later task, not even a skipped one; the affinity and the NCCL settings
    # are set all the same (from preflight's topology read), as the first run set them.
    assert passed(second, "gpu_host") == dict.fromkeys(GPU_HOSTS, [GPU_PLAN]), passed(second, "gpu_host")
    assert passed(second, "nccl") == dict.fromkeys(GPU_HOSTS, [NCCL_PLAN])
    assert facts_of(second, AFFINITY) == facts_of(first, AFFINITY) and set(facts_of(second, AFFINITY)) == \
        set(GPU_HOSTS)
    assert facts_of(second, AFFINITY)["sim01"]["bluefleet_gpu_nic_affinity"]["GPU0"]["device"] == "mlx5_0"
    settings = {h: f["nccl_settings"] for h, f in facts_of(second, NCCL_PLAN).items()}
    assert settings == {h: f["nccl_settings"] for h, f in facts_of(first, NCCL_PLAN).items()}
    assert settings["sim01"]["NCCL_IB_HCA"] == "=mlx5_0:1"
    nccl_conf = (state / "sim02" / "etc/nccl.conf").read_text()

    (state / "sim01" / PEERMEM_CONF).unlink()
    third = run_playbook(playbook, inventory)
    assert fabric_module_runs(third) == [("sim01", "bluefleet.dpu.peermem")], third["stdout"][-4000:]
    assert plans(third, "Compare nvidia_peermem")["sim01"]["__gpu_host_peermem_plan"]["changes"] == ["persist"]
    assert (third["stats"].get("changed") or {}) == {"sim01": 1}, third["stdout"][-4000:]
    assert "nvidia_peermem" in (state / "sim01" / PEERMEM_CONF).read_text().splitlines()
    assert (state / "sim02" / "etc/nccl.conf").read_text() == nccl_conf
    # sim02 ends after the plan as before; on sim01 the role goes on: the affinity is set again, pci_acs is skipped.
    assert passed(third, "gpu_host")["sim02"] == [GPU_PLAN]
    assert passed(third, "gpu_host")["sim01"] == [
        GPU_PLAN, END, "Read the GPU-NIC topology", "Set the closest NIC of each GPU",
        "Load nvidia_peermem and check its registration", "Turn PCIe ACS off on the GPU and NIC bridges",
        "Enable the boot-time ACS unit", "Set ATS of the card", "Say which reset activates ATS"]
    assert facts_of(third, AFFINITY) == facts_of(first, AFFINITY)

    # Two more things broken by hand on sim02: the ACS unit removed and nccl.conf edited. Exactly pci_acs and the NCCL
    # files task run there and put them back; sim01 runs nothing.
    unit = state / "sim02" / ACS_UNIT
    unit_text = unit.read_text()
    unit.unlink()
    (state / "sim02" / "etc/nccl.conf").write_text(nccl_conf.replace("NCCL_IB_TC=", "NCCL_IB_TC=0"))
    fourth = run_playbook(playbook, inventory)
    assert fabric_module_runs(fourth) == [("sim02", "bluefleet.dpu.pci_acs"), ("sim02", "bluefleet.dpu.files")], \
        fourth["stdout"][-4000:]
    assert unit.read_text() == unit_text and (state / "sim02" / "etc/nccl.conf").read_text() == nccl_conf
    assert passed(fourth, "gpu_host")["sim01"] == [GPU_PLAN] and passed(fourth, "nccl")["sim01"][-1] == NCCL_PLAN
