"""roles/gpu_host and roles/nccl: argument specs equal the defaults; the NCCL role's filter options exist."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import yaml
from ansible_collections.bluefleet.dpu.plugins.filter.nccl import nccl_env

ROLES = Path(__file__).resolve().parents[3] / "roles"


def _load(role, *parts):
    return yaml.safe_load((ROLES / role).joinpath(*parts).read_text(encoding="utf-8"))


@pytest.mark.parametrize("role", ["gpu_host", "nccl"])
def test_argument_spec_equals_defaults(role):
    defaults = _load(role, "defaults", "main.yml")
    options = _load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults)
    for name, spec in options.items():
        assert spec["default"] == defaults[name], name
        assert spec.get("description"), name
        assert name.startswith(role + "_"), name


def test_nccl_role_passes_only_filter_options():
    task = _load("nccl", "tasks", "derive.yml")[1]
    text = task["ansible.builtin.set_fact"]["nccl_settings"]
    params = set(inspect.signature(nccl_env).parameters) - {"roce", "affinity"}
    for name in params:
        assert "%s=nccl_" % name in text, name


# ------------------------------------------------------------------ the plans from preflight's read (fabric stage)
PREFLIGHT = ROLES / "preflight"


def _tasks(role, name):
    return _load(role, "tasks", name)


def _plan_and_module(tasks, module):
    """The set_fact task that plans and the task that runs ``module``, in that order."""
    names = [next(k for k in t if k.startswith(("bluefleet.", "ansible."))) for t in tasks]
    plan, run = tasks[names.index("ansible.builtin.set_fact")], tasks[names.index(module)]
    assert names.index("ansible.builtin.set_fact") < names.index(module)
    return plan, run


@pytest.mark.parametrize("role, file, module, options, fact", [
    ("gpu_host", "peermem.yml", "bluefleet.dpu.peermem", "__gpu_host_peermem", "__gpu_host_peermem_plan"),
    ("gpu_host", "acs.yml", "bluefleet.dpu.pci_acs", "__gpu_host_acs_options", "__gpu_host_acs_plan"),
    ("nccl", "files.yml", "bluefleet.dpu.files", "__nccl_files", "__nccl_files_plan"),
])
def test_the_module_runs_with_the_options_its_plan_was_made_for(role, file, module, options, fact):
    plan, run = _plan_and_module(_tasks(role, file), module)
    assert run[module] == plan["vars"][options]  # one YAML anchor: the very same options
    assert fact in plan["ansible.builtin.set_fact"]
    assert run["when"] == "not (%s.in_state | default(false))" % fact


def test_the_acs_unit_is_enabled_unless_the_plan_and_the_enable_link_hold():
    tasks = _tasks("gpu_host", "acs.yml")
    (enable,) = [t for t in tasks if "ansible.builtin.systemd_service" in t]
    assert enable["when"][0] == "gpu_host_linux_services | bool"
    assert "__gpu_host_acs_plan.in_state" in enable["when"][1] and "__gpu_host_acs_link_plan.in_state" in \
        enable["when"][1]
    (link,) = _load("gpu_host", "vars", "main.yml")["__gpu_host_acs_enabled_link"]
    assert link == {"path": "/etc/systemd/system/multi-user.target.wants/bluefleet-pci-acs.service",
                    "src": "/etc/systemd/system/bluefleet-pci-acs.service"}


def test_preflight_reads_what_the_gpu_host_plays_manage_where_the_roles_keep_it():
    """The paths and roots preflight reads are the roles' defaults (a read of other paths or roots does not answer,
    and the modules run)."""
    nccl, gpu_host = _load("nccl", "defaults", "main.yml"), _load("gpu_host", "defaults", "main.yml")
    pvars = yaml.safe_load((PREFLIGHT / "vars" / "main.yml").read_text(encoding="utf-8"))
    files = pvars["__preflight_gpu_fabric_files"]
    assert "nccl_conf_path | default('%s')" % nccl["nccl_conf_path"] in files
    assert "nccl_env_path | default('%s')" % nccl["nccl_env_path"] in files
    assert "'%s'" % _load("gpu_host", "vars", "main.yml")["__gpu_host_acs_enabled_link"][0]["path"] in files
    sections = pvars["__preflight_gpu_fabric_sections"]
    assert sections == "{{ ['peermem', 'acs'] if preflight_fabric_read | bool else [] }}"
    facts = yaml.safe_load((PREFLIGHT / "tasks" / "facts.yml").read_text(encoding="utf-8"))
    (read,) = [t["bluefleet.dpu.gpu_info"] for t in facts if "bluefleet.dpu.gpu_info" in t]
    assert read["files_root"] == "{{ gpu_host_fs_root | default(%s) }}" % gpu_host["gpu_host_fs_root"][3:-3]
    assert "union(__preflight_gpu_fabric_sections)" in read["filter"]
    assert nccl["nccl_fs_root"] == gpu_host["gpu_host_fs_root"] == "{{ bluefleet_fs_root | default('/') }}"
