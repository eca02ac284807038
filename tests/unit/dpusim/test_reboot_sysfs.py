"""A reboot or power cycle unloads nvidia_peermem and its sysfs file; the EINVAL fault is a named fault."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DPUSIM = [sys.executable, "-m", "dpusim.cli"]


def run(root: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, DPUSIM_ROOT=str(root), PATH="%s/bin:%s" % (root, os.environ["PATH"]))
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, check=check, timeout=60)


@pytest.fixture
def host(tmp_path):
    root = tmp_path / "host"
    subprocess.run([*DPUSIM, "env", "--root", str(root)], check=True, capture_output=True, timeout=60)
    run(root, *DPUSIM, "init", "--profile", "bluefield3", "--role", "host")
    return root


@pytest.mark.parametrize("how", ["reboot", "power-cycle"])
def test_peermem_sysfs_goes_with_a_reboot(host, how):
    sysfs = host / "sys/kernel/mm/memory_peers/nv_mem/version"
    run(host, "modprobe", "nvidia_peermem")
    assert sysfs.is_file()
    run(host, *DPUSIM, how)
    assert not sysfs.exists()
    assert "nvidia_peermem" not in run(host, "lsmod").stdout


def test_peermem_einval_fault_is_known_to_dpusim_fault(host):
    run(host, *DPUSIM, "fault", "set", "peermem_einval")
    proc = run(host, "modprobe", "nvidia_peermem", check=False)
    assert proc.returncode != 0
    assert "Invalid argument" in proc.stderr
    run(host, *DPUSIM, "fault", "clear", "peermem_einval")
    run(host, "modprobe", "nvidia_peermem")
