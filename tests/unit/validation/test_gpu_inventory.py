"""The GPU-less rule of the conformance suite (tests/validation/gpu_inventory.py): a host of gpu_hosts declared
``bluefleet_gpus: 0`` is not applicable to the GPU checks (reported N/A with the reason), any other declaration is
held to its GPUs, and a value that is not a count stops the run naming the host and the value."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

# Loaded by path: the suite's folder is not put on sys.path (its conftest is not the unit tests' one).
_SPEC = importlib.util.spec_from_file_location(
    "gpu_inventory", Path(__file__).resolve().parents[2] / "validation" / "gpu_inventory.py")
_MOD = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_MOD)
declared_gpus, skip_if_declared_gpu_less = _MOD.declared_gpus, _MOD.skip_if_declared_gpu_less


def node(**hostvars):
    return SimpleNamespace(name="gpu07", vars=hostvars)


@pytest.mark.parametrize(("value", "expected"), [(None, None), (0, 0), (8, 8), ("0", 0), (" 4 ", 4), (False, 0)])
def test_declared_gpus_reads_a_count(value, expected):
    hostvars = {} if value is None else {"bluefleet_gpus": value}
    assert declared_gpus(node(**hostvars)) == expected


@pytest.mark.parametrize("value", ["none", "-1", "4.0", "", "eight"])
def test_a_value_that_is_not_a_count_names_host_and_value(value):
    with pytest.raises(pytest.UsageError, match=r"gpu07: bluefleet_gpus is .*expected the number of GPUs"):
        declared_gpus(node(bluefleet_gpus=value))


@pytest.mark.parametrize("value", [0, "0"])
def test_declared_gpu_less_is_not_applicable_with_the_reason(value):
    said = r"^not applicable: gpu07 is declared GPU-less \(bluefleet_gpus: 0\)$"
    with pytest.raises(pytest.skip.Exception, match=said):
        skip_if_declared_gpu_less(node(bluefleet_gpus=value))


@pytest.mark.parametrize("hostvars", [{}, {"bluefleet_gpus": 8}, {"bluefleet_gpus": "1"}])
def test_a_host_with_gpus_or_no_declaration_is_checked(hostvars):
    assert skip_if_declared_gpu_less(node(**hostvars)) is None
