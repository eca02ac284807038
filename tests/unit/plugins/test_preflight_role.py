"""roles/preflight: argument spec equals defaults; phases tagged; the facts phase reads each node in one module run."""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible_collections.bluefleet.dpu.plugins.modules import dpu_info, gpu_info

ROLE = Path(__file__).resolve().parents[3] / "roles" / "preflight"


def _load(*parts):
    return yaml.safe_load((ROLE.joinpath(*parts)).read_text(encoding="utf-8"))


def test_argument_spec_equals_defaults():
    defaults = _load("defaults", "main.yml")
    options = _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults)
    for name, spec in options.items():
        assert spec["default"] == defaults[name], name
        assert spec.get("description"), name


def test_filter_choices_follow_the_modules():
    options = _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert options["preflight_dpu_info_filter"]["choices"] == list(dpu_info.SECTIONS)
    assert options["preflight_gpu_info_filter"]["choices"] == list(gpu_info.SECTIONS)
    # dpu_info reads the GPUs with gpu_info's code (gpu_filter) and names its sections without importing it
    assert list(dpu_info.GPU_SECTIONS) == list(gpu_info.SECTIONS)
    assert dpu_info.argument_spec()["gpu_filter"]["choices"] == list(gpu_info.SECTIONS)


def test_main_only_includes_tagged_phases():
    tasks = _load("tasks", "main.yml")
    # the inputs first: where the play turned ansible-core's check off, preflight's own are checked there, before any
    # task reads them, under any --tags (always, as ansible-core's check)
    assert [t["ansible.builtin.import_tasks"] for t in tasks] == ["inputs.yml", "pairing.yml", "facts.yml",
                                                                  "tools.yml", "gate.yml"]
    for task in tasks[:4]:
        assert set(task) == {"name", "ansible.builtin.import_tasks", "when", "tags"}
        assert "preflight" in task["tags"]
    assert tasks[0]["tags"] == ["preflight", "inputs", "always"]
    assert tasks[0]["when"] == "__preflight_checked_roles | length > 0"
    # the gate runs whatever the tags: one host's problem stops every host
    assert tasks[4]["tags"] == ["always"] and "when" not in tasks[4]


def test_gate_stops_every_host():
    (gate,) = _load("tasks", "gate.yml")
    assert gate["any_errors_fatal"] is True and gate["run_once"] is True
    assert "ansible_play_hosts_all | difference(ansible_play_hosts)" in gate["ansible.builtin.assert"]["that"]


def test_facts_phase_reads_each_node_in_one_module_run_and_the_gpus_only_on_gpu_hosts():
    tasks = _load("tasks", "facts.yml")
    modules = [k for t in tasks for k in t if k.startswith("bluefleet.")]
    # one read per node: the GPUs come with the cards (gpu_filter), not from a gpu_info run of their own
    assert modules == ["bluefleet.dpu.dpu_info"]
    (read,) = [t for t in tasks if "bluefleet.dpu.dpu_info" in t]
    assert "when" not in read
    gpu_filter = read["bluefleet.dpu.dpu_info"]["gpu_filter"]
    assert "preflight_gpu_info_filter" in gpu_filter and "groups['gpu_hosts']" in gpu_filter
    assert gpu_filter.rstrip().endswith("else [] }}")
    (kept,) = [t["ansible.builtin.set_fact"] for t in tasks if "ansible.builtin.set_fact" in t]
    assert list(kept) == ["preflight_dpu_info", "preflight_gpu_info", "__preflight_dpu_info"]
    assert "__preflight_dpu_info.gpu_info" in kept["preflight_gpu_info"]
    assert "gpu_hosts" in kept["preflight_gpu_info"] and kept["preflight_gpu_info"].rstrip().endswith("else omit }}")
    # the GPU read is kept once, as preflight_gpu_info, not inside preflight_dpu_info too
    keep = next(t for t in tasks if "ansible.builtin.set_fact" in t)
    assert "gpu_info" in keep["vars"]["__preflight_result_keys"]


def test_playbook_publishes_the_facts_under_the_collection_names():
    play = yaml.safe_load((ROLE.parents[1] / "playbooks" / "preflight.yml").read_text(encoding="utf-8"))[0]
    (published,) = [t["ansible.builtin.set_fact"] for t in play["post_tasks"]]
    assert published == {"bluefleet_dpu_info": "{{ preflight_dpu_info | default(omit) }}",
                         "bluefleet_gpu_info": "{{ preflight_gpu_info | default(omit) }}"}


def test_inputs_phase_covers_every_other_role():
    defaults = _load("defaults", "main.yml")
    roles = sorted(p.name for p in ROLE.parent.iterdir() if (p / "meta" / "argument_specs.yml").exists())
    assert sorted(defaults["preflight_input_roles"]) == sorted(set(roles) - {"preflight"})


def test_no_two_roles_share_an_input_name():
    """inputs.yml validates every role's options as one spec: a name two roles shared would be checked against one of
    the two specs only."""
    owner = {}
    # preflight's own options join them where playbooks/preflight.yml turns ansible-core's check off
    for role in ["preflight"] + _load("defaults", "main.yml")["preflight_input_roles"]:
        spec = yaml.safe_load((ROLE.parent / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
        for name in spec["argument_specs"]["main"]["options"]:
            assert name not in owner, "%s: in %s and %s" % (name, owner.get(name), role)
            owner[name] = role
    assert len(owner) > 100


def test_pairing_is_one_task_for_both_sides():
    (task,) = _load("tasks", "pairing.yml")
    assert task["when"] == "inventory_hostname in groups['dpus'] or inventory_hostname in groups['gpu_hosts']"
    that = task["ansible.builtin.assert"]["that"]
    assert that == ["inventory_hostname not in groups['dpus'] or __preflight_dpu_paired",
                    "inventory_hostname not in groups['gpu_hosts'] or __preflight_host_paired"]


def test_inputs_error_path_is_included_with_the_phase_tags():
    """A host whose inputs are valid goes through the validation and one skipped include; the include gives the
    error path's tasks the phase's tags (without `apply`, --tags inputs would skip them and pass a bad input)."""
    check, include = _load("tasks", "inputs.yml")
    assert check["register"] == "__preflight_inputs_all"
    assert include["ansible.builtin.include_tasks"] == {"file": "inputs_failed.yml",
                                                        "apply": {"tags": ["preflight", "inputs", "always"]}}
    assert include["when"] == "__preflight_inputs_all.argument_errors | default([]) | length > 0"
    named, valid = _load("tasks", "inputs_failed.yml")
    assert named["loop"] == "{{ __preflight_checked_roles }}"
    assert valid["ansible.builtin.assert"]["that"][0] == \
        "__preflight_inputs_all.argument_errors | default([]) | length == 0"


def test_preflight_checks_its_own_inputs_with_every_roles_where_the_play_asks():
    """playbooks/preflight.yml imports the role with ansible-core's argument check off: the role's own options join
    every other role's in the one validation of tasks/inputs.yml (no second argument check per host)."""
    play = yaml.safe_load((ROLE.parents[1] / "playbooks" / "preflight.yml").read_text(encoding="utf-8"))[0]
    assert "roles" not in play
    (task,) = play["tasks"]
    assert task["ansible.builtin.import_role"] == {"name": "bluefleet.dpu.preflight", "rolespec_validate": False}
    assert task["vars"] == {"__bluefleet_plan_first": True}
    checked = _load("vars", "main.yml")["__preflight_checked_roles"]
    assert "['preflight'] if __bluefleet_plan_first | default(false) | bool else []" in checked
    assert "{%- for role in __preflight_checked_roles -%}" in _load("vars", "main.yml")["__preflight_role_specs"]
