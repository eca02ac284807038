"""bluefleet.dpu.gpu_info driven by recorded tool outputs through a fake runner."""

from __future__ import annotations

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._gpu_read import closest_nics
from ansible_collections.bluefleet.dpu.plugins.modules import gpu_info
from fake_tools import fixture_text

ARGV = [["nvidia-smi"], ["nvidia-smi", "topo", "-m"], ["lsmod"]]


def ok(kind, name):
    return (0, fixture_text(kind, name), "")


def answers():
    return {
        ("nvidia-smi",): ok("nvidia-smi", "h100-1gpu-550-no-processes"),
        ("nvidia-smi", "topo", "-m"): ok("nvidia-smi-topo", "public-topo-m-8gpu-nv18-6nics-empty-cpu-affinity"),
        ("lsmod",): ok("lsmod", "gpu-operator-doc-lsmod-grep-nvidia"),
    }


@pytest.fixture
def sysfs(tmp_path):
    path = tmp_path.joinpath("sys", "kernel", "mm", "memory_peers", "nv_mem", "version")
    path.parent.mkdir(parents=True)
    path.write_text("1.1\n")
    return tmp_path


def test_runs_exactly_these_commands_and_reports_gpus_topology_peermem(run_module, fake_runner, sysfs):
    runner = fake_runner(answers())
    failed, result = run_module(gpu_info, {"fs_root": str(sysfs)}, runner)
    assert not failed, result
    assert runner.cmd == ARGV
    assert result["cmd"] == ARGV
    assert result["changed"] is False
    gpus = result["gpus"]
    assert gpus["driver_version"] == "550.127.08"
    assert gpus["cuda_version"] == "12.4"
    assert gpus["devices"] == [{
        "index": 0, "name": "NVIDIA H100 80GB HBM3", "bus_id": "00000000:C3:00.0", "memory_total_mib": 81559,
        "persistence_mode": "On", "closest_nic": {"nic": "NIC0", "device": "mlx5_0", "link": "PIX"}}]
    topo = result["topology"]
    assert topo["matrix"]["GPU3"]["NIC2"] == "PIX"
    assert topo["nics"]["NIC5"] == "mlx5_5"
    assert topo["numa_affinity"]["GPU4"] == "1"
    # GPU0 is PIX to NIC0 and NIC1: the first listed wins; GPU1 only reaches NICs through NODE.
    assert topo["closest_nic"]["GPU0"] == {"nic": "NIC0", "device": "mlx5_0", "link": "PIX"}
    assert topo["closest_nic"]["GPU1"] == {"nic": "NIC0", "device": "mlx5_0", "link": "NODE"}
    assert topo["closest_nic"]["GPU4"] == {"nic": "NIC3", "device": "mlx5_3", "link": "PIX"}
    assert topo["closest_nic"]["GPU6"] == {"nic": "NIC5", "device": "mlx5_5", "link": "PIX"}
    assert result["peermem"] == {"available": True, "loaded": True, "registered": True, "version": "1.1",
                                 "sysfs_path": str(sysfs / "sys/kernel/mm/memory_peers/nv_mem/version"),
                                 "sysfs_root": str(sysfs), "persistent": False, "conf_root": str(sysfs),
                                 "conf_path": str(sysfs / "etc/modules-load.d/nvidia-peermem.conf")}
    assert "acs" not in result  # asked for by name only
    assert isinstance(result["read_at"], float)
    assert result["tool_versions"] == {"nvidia-smi": "550.127.08", "lsmod": None}
    assert result["tools_missing"] == []


def test_peermem_not_loaded_and_not_registered(run_module, fake_runner, tmp_path):
    # the mlx5 rows of a real capture, as `lsmod | grep -v nvidia` would print them
    rows = fixture_text("lsmod", "nvidia-580-mlx5-fwctl-lsmod-grep").splitlines(True)
    text = "".join(line for line in rows if "nvidia" not in line)
    assert "mlx5_core" in text
    table = answers()
    table[("lsmod",)] = (0, text, "")
    failed, result = run_module(gpu_info, {"fs_root": str(tmp_path), "filter": ["peermem"]}, fake_runner(table))
    assert not failed, result
    assert result["peermem"]["loaded"] is False
    assert result["peermem"]["registered"] is False
    assert result["peermem"]["version"] is None
    assert result["cmd"] == [["lsmod"]]


def test_nvidia_smi_missing_is_reported_once(run_module, fake_runner, tmp_path):
    runner = fake_runner(answers(), missing={"nvidia-smi"})
    failed, result = run_module(gpu_info, {"fs_root": str(tmp_path)}, runner)
    assert not failed, result
    assert result["gpus"] == {"available": False, "reason": "nvidia-smi not found on PATH"}
    assert result["topology"] == {"available": False, "reason": "nvidia-smi not found on PATH"}
    assert result["msg"].startswith("nvidia-smi not found on PATH")
    assert result["tools_missing"] == ["nvidia-smi"]
    assert runner.cmd == [["nvidia-smi"], ["lsmod"]]
    assert result["tool_versions"] == {"lsmod": None}


def test_lsmod_missing_still_reads_sysfs(run_module, fake_runner, sysfs):
    failed, result = run_module(gpu_info, {"fs_root": str(sysfs), "filter": ["peermem"]},
                                fake_runner(answers(), missing={"lsmod"}))
    assert not failed, result
    assert result["peermem"]["available"] is False
    assert result["peermem"]["loaded"] is None
    assert result["peermem"]["registered"] is True


def test_no_gpu_is_an_empty_list_and_a_message(run_module, fake_runner, tmp_path):
    table = answers()
    table[("nvidia-smi",)] = (6, "No devices were found\n", "")
    table[("nvidia-smi", "topo", "-m")] = (6, "No devices were found\n", "")
    failed, result = run_module(gpu_info, {"fs_root": str(tmp_path)}, fake_runner(table))
    assert not failed, result
    assert result["gpus"]["devices"] == []
    assert result["msg"] == "no GPU found: nvidia-smi says No devices were found"
    assert result["topology"]["closest_nic"] == {}


def test_tool_failure_fails_with_command_and_output(run_module, fake_runner, tmp_path):
    table = answers()
    table[("nvidia-smi", "topo", "-m")] = (
        9, "", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
    failed, result = run_module(gpu_info, {"fs_root": str(tmp_path)}, fake_runner(table))
    assert failed
    assert result["msg"] == ("read the GPU-NIC topology with nvidia-smi topo -m failed: exit status 9: NVIDIA-SMI "
                             "has failed because it couldn't communicate with the NVIDIA driver.")
    assert result["cmd"] == ["nvidia-smi", "topo", "-m"]
    assert result["rc"] == 9


def test_garbage_output_fails_with_the_parser_message(run_module, fake_runner, tmp_path):
    table = answers()
    table[("nvidia-smi",)] = (0, "?? not a table ??\n", "")
    failed, result = run_module(gpu_info, {"fs_root": str(tmp_path)}, fake_runner(table))
    assert failed
    assert result["msg"].startswith("parse nvidia-smi output failed: cannot parse nvidia-smi output")
    assert result["stdout"] == "?? not a table ??\n"


def test_check_mode_reads_the_same(run_module, fake_runner, sysfs):
    normal, check = fake_runner(answers()), fake_runner(answers())
    first_failed, first = run_module(gpu_info, {"fs_root": str(sysfs)}, normal)
    failed, second = run_module(gpu_info, {"fs_root": str(sysfs)}, check, check_mode=True)
    assert not failed and not first_failed
    assert check.cmd == normal.cmd == ARGV
    assert first.pop("read_at") <= second.pop("read_at")  # when each read began (the node's clock)
    assert second == first


def test_filter_topology_only(run_module, fake_runner, tmp_path):
    runner = fake_runner(answers())
    failed, result = run_module(gpu_info, {"filter": ["topology"], "fs_root": str(tmp_path)}, runner)
    assert not failed, result
    assert runner.cmd == [["nvidia-smi", "topo", "-m"]]
    assert set(result) >= {"topology", "cmd", "tools_missing"}
    assert "gpus" not in result and "peermem" not in result and "tool_versions" not in result


def test_closest_nic_ranks_links_and_handles_no_nic():
    topo = {"devices": ["GPU0", "GPU1", "NIC0", "NIC1"],
            "matrix": {"GPU0": {"GPU1": "NV4", "NIC0": "SYS", "NIC1": "PHB"},
                       "GPU1": {"GPU0": "NV4", "NIC0": "PXB", "NIC1": "PXB"}},
            "nics": {"NIC0": "mlx5_0"}}
    assert closest_nics(topo) == {
        "GPU0": {"nic": "NIC1", "device": None, "link": "PHB"},
        "GPU1": {"nic": "NIC0", "device": "mlx5_0", "link": "PXB"}}
    assert closest_nics({"devices": ["GPU0"], "matrix": {"GPU0": {"GPU0": "X"}}, "nics": {}}) == {
        "GPU0": None}


# ------------------------------------------------------------------ what peermem and pci_acs read (sections peermem
# and acs), for the filters peermem_plan and acs_plan; their agreement with the modules: tests/unit/plugins/filter.
LSPCI = ("lspci", "-D", "-vvv")
UNIT = "etc/systemd/system/bluefleet-pci-acs.service"


def test_peermem_reads_the_modules_load_file_under_files_root(run_module, fake_runner, sysfs, tmp_path_factory):
    files = tmp_path_factory.mktemp("files")
    conf = files / "etc/modules-load.d/nvidia-peermem.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("# kept\nnvidia-peermem\n")
    failed, result = run_module(gpu_info, {"fs_root": str(sysfs), "files_root": str(files), "filter": ["peermem"]},
                                fake_runner(answers()))
    assert not failed, result
    peermem = result["peermem"]
    assert peermem["persistent"] is True and peermem["conf_path"] == str(conf)
    assert peermem["conf_root"] == str(files) and peermem["sysfs_root"] == str(sysfs) and peermem["registered"]


def test_peermem_unreadable_modules_load_file_is_kept_as_an_error(run_module, fake_runner, tmp_path):
    (tmp_path / "etc/modules-load.d/nvidia-peermem.conf").mkdir(parents=True)  # a directory: open() fails
    failed, result = run_module(gpu_info, {"fs_root": str(tmp_path), "filter": ["peermem"]}, fake_runner(answers()))
    assert not failed, result
    assert result["peermem"]["persistent"] is None
    assert result["peermem"]["conf_error"].startswith("read %s/etc/modules-load.d/nvidia-peermem.conf failed:"
                                                      % tmp_path)
    assert result["peermem"]["loaded"] is True


def test_acs_reads_every_device_with_the_capability_and_the_unit(run_module, fake_runner, tmp_path):
    (tmp_path / UNIT).parent.mkdir(parents=True)
    (tmp_path / UNIT).write_text("[Unit]\n")
    table = answers()
    table[LSPCI] = ok("lspci", "lkml-lspci-vvv-acs-root-ports")
    runner = fake_runner(table)
    failed, result = run_module(gpu_info, {"fs_root": str(tmp_path), "filter": ["acs", "tool_versions"]}, runner)
    assert not failed, result
    assert runner.cmd == [list(LSPCI)]
    acs = result["acs"]
    assert acs["available"] and acs["root"] == str(tmp_path) and acs["unit"] == "[Unit]\n"
    assert acs["unit_path"] == str(tmp_path / UNIT)
    assert acs["devices"]["0000:00:01.0"] == {"class": "Host bridge", "acs": None}
    for slot in ("0000:00:01.1", "0000:00:01.2"):
        assert acs["devices"][slot]["class"] == "PCI bridge" and acs["devices"][slot]["acs"]["ctl_word"] == 0x1d
    assert result["tool_versions"] == {"lspci": None}


@pytest.mark.parametrize("answer, reason", [
    (None, "lspci not found on PATH"),
    ((1, "", "pcilib: Cannot open /proc/bus/pci\n"), "read the ACS control of the PCI bridges with lspci -D -vvv "
                                                     "failed: exit status 1"),
    ((0, "?? not lspci ??\n", ""), "read the ACS control of the PCI bridges with lspci -D -vvv failed:"),
])
def test_acs_unreadable_is_an_unavailable_section_not_a_failure(run_module, fake_runner, tmp_path, answer, reason):
    table = answers()
    if answer is not None:
        table[LSPCI] = answer
    runner = fake_runner(table, missing={"lspci"} if answer is None else ())
    failed, result = run_module(gpu_info, {"fs_root": str(tmp_path), "filter": ["acs"]}, runner)
    assert not failed, result
    assert result["acs"]["available"] is False and result["acs"]["reason"].startswith(reason)
    assert result["acs"]["unit"] is None and "devices" not in result["acs"]
