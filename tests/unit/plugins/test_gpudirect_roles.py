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
