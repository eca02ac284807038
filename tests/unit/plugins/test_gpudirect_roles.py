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
    text = _load("nccl", "vars", "main.yml")["__nccl_settings"]
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


@pytest.mark.parametrize("module, options, fact", [
    ("bluefleet.dpu.peermem", "__gpu_host_peermem", "__gpu_host_peermem_plan"),
    ("bluefleet.dpu.pci_acs", "__gpu_host_acs_options", "__gpu_host_acs_plan"),
])
def test_the_module_runs_with_the_options_its_plan_was_made_for(module, options, fact):
    plan, run = _plan_and_module(_tasks("gpu_host", "configure.yml"), module)
    assert run[module] == plan["vars"][options]  # one YAML anchor: the very same options
    assert options + "," in plan["ansible.builtin.set_fact"][fact]
    when = run["when"] if isinstance(run["when"], list) else [run["when"]]
    assert when[-1] == "not (%s.in_state | default(false))" % fact


def test_the_nccl_files_are_written_as_they_were_planned():
    (plan,) = [t for t in _tasks("nccl", "derive.yml") if "ansible.builtin.set_fact" in t]
    (run,) = _tasks("nccl", "files.yml")
    call = " ".join(plan["ansible.builtin.set_fact"]["__nccl_files_plan"].split())
    assert "files_plan(__nccl_files, [], fs_root=nccl_fs_root," in call
    assert run["bluefleet.dpu.files"] == {"fs_root": "{{ nccl_fs_root }}", "files": "{{ __nccl_files }}"}
    assert run["when"] == "not (__nccl_files_plan.in_state | default(false))"
    # the files render the settings the role sets (the fact itself is set in the plan's task: not yet there)
    assert plan["ansible.builtin.set_fact"]["nccl_settings"] == "{{ __nccl_settings }}"
    for name in ("nccl.conf.j2", "nccl.sh.j2"):
        text = (ROLES / "nccl" / "templates" / name).read_text(encoding="utf-8")
        assert "__nccl_settings" in text and " nccl_settings" not in text, name


def test_the_acs_unit_is_enabled_unless_the_plan_and_the_enable_link_hold():
    tasks = _tasks("gpu_host", "configure.yml")
    (enable,) = [t for t in tasks if "ansible.builtin.systemd_service" in t]
    assert enable["when"][:2] == ["gpu_host_acs_disable | bool", "gpu_host_linux_services | bool"]
    assert "__gpu_host_acs_plan.in_state" in enable["when"][2] and "__gpu_host_acs_link_plan.in_state" in \
        enable["when"][2]
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
    # the GPUs are read in the card read's module run (dpu_info's gpu_filter / gpu_files_root)
    (read,) = [t["bluefleet.dpu.dpu_info"] for t in facts if "bluefleet.dpu.dpu_info" in t]
    assert read["gpu_files_root"] == "{{ gpu_host_fs_root | default(%s) }}" % gpu_host["gpu_host_fs_root"][3:-3]
    assert "union(__preflight_gpu_fabric_sections)" in read["gpu_filter"]
    assert nccl["nccl_fs_root"] == gpu_host["gpu_host_fs_root"] == "{{ bluefleet_fs_root | default('/') }}"
