"""roles/firewall and roles/zero_trust: argument specs equal the defaults; the stage wiring; the default policy
renders; the zero-trust flags follow the module's options."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.bluefleet.dpu.plugins.filter.firewall import firewall_ruleset
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _host_restriction as host_restriction

ROOT = Path(__file__).resolve().parents[3]


def _load(*parts):
    return yaml.safe_load(ROOT.joinpath(*parts).read_text(encoding="utf-8"))


@pytest.mark.parametrize("role", ["firewall", "zero_trust"])
def test_argument_spec_equals_defaults(role):
    defaults = _load("roles", role, "defaults", "main.yml")
    options = _load("roles", role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults)
    for name, spec in options.items():
        assert name.startswith(role + "_"), name
        assert spec.get("default") == defaults[name], name
        assert spec.get("description"), name


def test_default_firewall_policy_renders_with_addresses():
    defaults = _load("roles", "firewall", "defaults", "main.yml")
    hostvars = {"h1": {"bluefleet_host_overlay_address": "10.10.0.1/24"}}
    text = firewall_ruleset(defaults["firewall_networks"], {"gpu_hosts": ["h1"]}, hostvars)
    assert text.count("chain overlay_") == 2 and 'comment "RoCE v2 between GPU hosts"' in text


def test_zero_trust_flags_are_the_module_options():
    defaults = _load("roles", "zero_trust", "defaults", "main.yml")
    flags = sorted(k[len("zero_trust_"):] for k in defaults if k.startswith("zero_trust_disable_"))
    assert flags == sorted(host_restriction.FLAGS)
    tasks = _load("roles", "zero_trust", "tasks", "restrict.yml")
    args = next(task for task in tasks if "bluefleet.dpu.host_restriction" in task)["bluefleet.dpu.host_restriction"]
    assert sorted(k for k in args if k.startswith("disable_")) == flags
    choices = _load("roles", "zero_trust", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"][
        "zero_trust_host_level"]["choices"]
    assert choices == list(host_restriction.LEVELS)


def test_stage_wiring():
    site = _load("site.yml")
    names = [entry["name"] for entry in site]
    zero = names.index("Stage 6, zero trust (restrict the host last)")
    assert site[zero]["ansible.builtin.import_playbook"] == "playbooks/zero_trust.yml"
    assert all(not n.startswith("Stage") or n.startswith(("Stage 7",)) for n in names[zero + 1:]), names
    play = _load("playbooks", "zero_trust.yml")[0]
    assert play["hosts"] == "dpus" and play["tags"] == ["zero_trust"]
    offload = _load("playbooks", "offload.yml")
    assert offload[-1]["name"] == "DPU offload: firewall" and "firewall" in offload[-1]["tags"]
    assert [t["ansible.builtin.import_role"]["name"] for t in offload[-1]["tasks"]] == ["bluefleet.dpu.firewall"]


def test_zero_trust_plan_task_renders_the_plan_once_per_fact():
    """ansible-core 2.19 renders a task variable, and runs its filter, at each reference: each fact the plan task sets
    names the plan once (it named it three times through an `in state` variable)."""
    plan = _load("roles", "zero_trust", "tasks", "restrict.yml")[0]
    facts = plan["ansible.builtin.set_fact"]
    assert sorted(facts) == ["__zero_trust_plan", "zero_trust_host_restriction", "zero_trust_reset_required",
                             "zero_trust_reset_required_by"]
    for name, template in facts.items():
        assert template.count("__zero_trust_answer") == 1, name
    assert [v for v in plan["vars"] if "__zero_trust_answer" in str(plan["vars"][v])] == []


def test_secure_boot_report_is_the_check():
    """One assert reports the lifecycle (its message where the lifecycle is expected, or anything is) and fails with
    the fix where it is not."""
    tasks = _load("roles", "zero_trust", "tasks", "secure_boot.yml")
    (report,) = [t for t in tasks if t["name"] == "Report the secure-boot lifecycle"]
    check = report["ansible.builtin.assert"]
    assert check["that"].startswith("zero_trust_secure_boot_expected | length == 0 or ")
    assert "expected:" in check["success_msg"] and "change zero_trust_secure_boot_expected" in check["fail_msg"]
    assert not [t for t in tasks if "ansible.builtin.debug" in t]
