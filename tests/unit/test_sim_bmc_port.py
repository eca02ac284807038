"""The sim inventory plugin's bmc_port (plugins/inventory/sim.py), read by ansible-inventory as a user would: the
DPU names its loopback BMC (no password), the host none, and a bmc_port the twin cannot serve is refused with the
fix before anything else is looked at."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def inventory(tmp_path, text, *argv, env=None):
    source = tmp_path / "fleet.sim.yml"
    source.write_text("plugin: bluefleet.dpu.sim\n" + text)
    environ = {k: v for k, v in os.environ.items() if k != "BLUEFLEET_SIM_BMC_PORT"}
    environ.update(env or {}, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    return subprocess.run([str(BIN / "ansible-inventory"), "-i", str(source), *argv], capture_output=True, text=True,
                          check=False, timeout=120, env=environ, cwd=ROOT)


def test_the_dpu_names_its_loopback_bmc_and_the_host_none(tmp_path):
    source = tmp_path / "fleet.sim.yml"
    source.write_text("plugin: bluefleet.dpu.sim\nnodes: 1\n")
    subprocess.run([str(BIN / "bluefleet"), "sim", "init", "-i", str(source)], check=True, capture_output=True,
                   timeout=300, cwd=ROOT)
    proc = inventory(tmp_path, "nodes: 1\n", "--list", env={"BLUEFLEET_SIM_BMC_PORT": "18443"})
    assert proc.returncode == 0, proc.stderr
    hostvars = json.loads(proc.stdout)["_meta"]["hostvars"]
    bmc = {k: v.get("__ansible_unsafe", v) if isinstance(v, dict) else v  # ansible-inventory marks strings unsafe
           for k, v in hostvars["sim01-dpu"]["bluefleet_bmc"].items()}
    assert bmc == {"address": "http://127.0.0.1:18443", "username": "root"}
    assert "bluefleet_bmc" not in hostvars["sim01"]
    proc = inventory(tmp_path, "nodes: 1\n", "--list")
    assert "bluefleet_bmc" not in json.loads(proc.stdout)["_meta"]["hostvars"]["sim01-dpu"]


@pytest.mark.parametrize("text", ["nodes: 2\nprofile: bluefield2\nbmc_port: 18443\n", "nodes: 2\nbmc_port: 80\n",
                                  "nodes: 2\nbmc_port: 65535\n"])
def test_a_bmc_port_the_twin_cannot_serve_is_refused_with_the_fix(tmp_path, text):
    proc = inventory(tmp_path, text, "--list")
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "give a port from 1024 to 65533 (one port per DPU from it) with profile bluefield3" in out, out
