"""The fabric stage's plans on GPU hosts agree with the modules they stand in for.

On the same fake machine (tool answers through a fake runner, files under a temporary root), each filter's answer
from preflight's read - ``peermem_plan`` and ``acs_plan`` from gpu_info's sections ``peermem`` and ``acs``,
``files_plan`` from dpu_info's section ``files`` (the NCCL files) - says "in state" exactly when the module in check
mode reports no change, and names the same changes. Then the cases where the read must not answer: a stale read, a
read under another root, a missing section, options the module would refuse.

Tool outputs: lsmod from the parser fixture gpu-operator-doc-lsmod-grep-nvidia (with and without its
nvidia_peermem row, as test_peermem.py); lspci -D -vvv from lspci/lkml-lspci-vvv-acs-root-ports (ACS Control 0x1d on
two root ports) and the same text with the ACSCtl flags all ``-`` (as test_pci_acs.py).
"""

from __future__ import annotations

import os
import time

import pytest
from ansible_collections.bluefleet.dpu.plugins.filter.acs_plan import acs_plan
from ansible_collections.bluefleet.dpu.plugins.filter.files_plan import files_plan
from ansible_collections.bluefleet.dpu.plugins.filter.peermem_plan import peermem_plan
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _pci_acs, _peermem
from ansible_collections.bluefleet.dpu.plugins.modules import dpu_info, files, gpu_info, pci_acs, peermem
from fake_tools import fixture_text

LSMOD_WITH = fixture_text("lsmod", "gpu-operator-doc-lsmod-grep-nvidia")
LSMOD_WITHOUT = "".join(line + "\n" for line in LSMOD_WITH.splitlines() if not line.startswith("nvidia_peermem "))
ACS_ON = fixture_text("lspci", "lkml-lspci-vvv-acs-root-ports")
_OFF_LINE = "ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
ACS_OFF = "\n".join(("\t\t" + _OFF_LINE) if line.strip().startswith("ACSCtl:") else line
                    for line in ACS_ON.split("\n"))
ACS_ONE_ON = ACS_OFF[:ACS_OFF.index("00:01.2")] + ACS_ON[ACS_ON.index("00:01.2"):]  # 00:01.2 on
B1, B2 = "0000:00:01.1", "0000:00:01.2"
VERSIONS = {("modprobe", "--version"): (0, "kmod version 30\n", ""), ("lspci", "--version"): (0, "lspci 3.9\n", "")}


def write(root, parts, text, mode=0o644):
    path = os.path.join(str(root), *parts) if isinstance(parts, tuple) else os.path.join(str(root), parts.lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, mode)
    return path


# ------------------------------------------------------------------ peermem
def peermem_machine(root, loaded=True, registered=True, conf=_peermem.CONF_TEXT):
    """The fake GPU host: lsmod's answer; the registration file and the modules-load.d file under ``root``."""
    if registered:
        write(root, _peermem.SYSFS, "1.1\n")
    if conf is not None:
        write(root, _peermem.CONF, conf)
    return {("lsmod",): (0, LSMOD_WITH if loaded else LSMOD_WITHOUT, ""), **VERSIONS}


def gpu_read(run_module, fake_runner, answers, root, sections, files_root=None):
    args = {"fs_root": str(root), "filter": sections}
    if files_root:
        args["files_root"] = str(files_root)
    failed, read = run_module(gpu_info, args, fake_runner(answers))
    assert not failed, read
    return read


PEERMEM_STATES = {
    "all set": ({}, {}),
    "not loaded": ({"loaded": False, "registered": False}, {}),
    "loaded, not registered": ({"registered": False}, {}),
    "modules-load.d file missing": ({"conf": None}, {}),
    "modules-load.d file lists another module": ({"conf": "# ours\nnvidia_uvm\n"}, {}),
    "modules-load.d file with the dash name": ({"conf": "nvidia-peermem # kept\n"}, {}),
    "file missing, persist false": ({"conf": None}, {"persist": False}),
    "absent asked, loaded and persistent": ({}, {"state": "absent"}),
    "absent asked, nothing there": ({"loaded": False, "registered": False, "conf": None}, {"state": "absent"}),
    "absent asked, only the file": ({"loaded": False, "registered": False}, {"state": "absent"}),
}


@pytest.mark.parametrize("machine, options", PEERMEM_STATES.values(), ids=list(PEERMEM_STATES))
def test_peermem_plan_agrees_with_peermem_check_mode(run_module, fake_runner, tmp_path, machine, options):
    answers = peermem_machine(tmp_path, **machine)
    read = gpu_read(run_module, fake_runner, answers, tmp_path, ["peermem"])
    options = dict(options, fs_root=str(tmp_path), sysfs_root=str(tmp_path))
    plan = peermem_plan(read, options)
    failed, checked = run_module(peermem, options, fake_runner(answers), check_mode=True)
    assert not failed, checked
    assert plan["answered"], plan["why"]
    assert plan["in_state"] is (not checked["changed"])
    assert plan["changes"] == checked["actions"]


def test_peermem_plan_reads_the_file_under_files_root_and_sys_under_fs_root(run_module, fake_runner,
                                                                            tmp_path_factory):
    """The gpu_host role's roots: the modules-load.d file under gpu_host_fs_root, /sys under gpu_host_sysfs_root."""
    sys_root, etc_root = tmp_path_factory.mktemp("sys"), tmp_path_factory.mktemp("etc")
    answers = peermem_machine(sys_root, conf=None)
    write(etc_root, _peermem.CONF, _peermem.CONF_TEXT)
    read = gpu_read(run_module, fake_runner, answers, sys_root, ["peermem"], files_root=etc_root)
    options = {"fs_root": str(etc_root), "sysfs_root": str(sys_root)}
    failed, checked = run_module(peermem, options, fake_runner(answers), check_mode=True)
    assert not failed and not checked["changed"]
    assert peermem_plan(read, options) == {"answered": True, "in_state": True, "why": "", "changes": []}
    # the same roots the other way round: not the read the module would make
    swapped = peermem_plan(read, {"fs_root": str(sys_root), "sysfs_root": str(etc_root)})
    assert not swapped["answered"] and not swapped["in_state"]
    assert swapped["why"] == ("the read was made with the modules-load.d file under %s and /sys under %s, not %s and %s"
                              % (etc_root, sys_root, sys_root, etc_root))
    # sysfs_root left out: the module reads /sys under fs_root
    assert not peermem_plan(read, {"fs_root": str(etc_root)})["answered"]


def _fresh_peermem_read(run_module, fake_runner, root):
    return gpu_read(run_module, fake_runner, peermem_machine(root), root, ["peermem"])


@pytest.mark.parametrize("case, why", [
    ("stale", "a bluefleet module changed the node after the read (bluefleet_changed_at)"),
    ("reset", "the card or its driver was reset in this run after the read"),
    ("no read", "there is no read of the node from this run with its time"),
    ("no section", "preflight's read has no peermem section"),
    ("older read", "preflight's read has no modules-load.d read"),
    ("lsmod missing", "preflight's read did not list the kernel modules: lsmod not found on PATH"),
    ("conf unreadable", "read %(root)s/etc/modules-load.d/nvidia-peermem.conf failed:"),
    ("another root", "the read was made with the modules-load.d file under"),
    ("bad options", "peermem refuses the options: value of state must be one of: present, absent, got: loaded"),
    ("timeout 0", "peermem refuses the options: timeout must be a positive number of seconds, got 0"),
])
def test_peermem_plan_does_not_answer(run_module, fake_runner, tmp_path, case, why):
    read = _fresh_peermem_read(run_module, fake_runner, tmp_path)
    options = {"fs_root": str(tmp_path)}
    changed_at, reset = None, False
    if case == "stale":
        changed_at = read["read_at"] + 1
    elif case == "reset":
        reset = True
    elif case == "no read":
        read = {}
    elif case == "no section":
        del read["peermem"]
    elif case == "older read":
        read["peermem"] = {k: v for k, v in read["peermem"].items() if k not in ("conf_root", "sysfs_root")}
    elif case == "lsmod missing":
        failed, read = run_module(gpu_info, {"fs_root": str(tmp_path), "filter": ["peermem"]},
                                  fake_runner({}, missing={"lsmod"}))
    elif case == "conf unreadable":
        os.remove(os.path.join(str(tmp_path), *_peermem.CONF))
        os.mkdir(os.path.join(str(tmp_path), *_peermem.CONF))
        read = gpu_read(run_module, fake_runner, {("lsmod",): (0, LSMOD_WITH, "")}, tmp_path, ["peermem"])
    elif case == "another root":
        options = {"fs_root": str(tmp_path / "elsewhere")}
    elif case == "bad options":
        options["state"] = "loaded"
    elif case == "timeout 0":
        options["timeout"] = 0
    plan = peermem_plan(read, options, changed_at=changed_at, reset=reset)
    assert plan["answered"] is False and plan["in_state"] is False
    assert plan["why"].startswith(why % {"root": tmp_path}), plan["why"]


def test_peermem_plan_holds_while_nothing_changed_after_the_read(run_module, fake_runner, tmp_path):
    read = _fresh_peermem_read(run_module, fake_runner, tmp_path)
    assert peermem_plan(read, {"fs_root": str(tmp_path)}, changed_at=read["read_at"] - 5)["in_state"]


# ------------------------------------------------------------------ pci_acs
def acs_machine(root, lspci=ACS_OFF, unit="current", setpci="/usr/bin/setpci"):
    if unit == "current":
        write(root, _pci_acs.UNIT, _pci_acs.unit_text([B1, B2], setpci))
    elif unit is not None:
        write(root, _pci_acs.UNIT, unit)
    return {tuple(_pci_acs.LSPCI): (0, lspci, ""), **VERSIONS}


ACS_STATES = {
    "all off, unit current": ({}, {}),
    "every bridge on": ({"lspci": ACS_ON}, {}),
    "one bridge on": ({"lspci": ACS_ONE_ON}, {}),
    "unit missing": ({"unit": None}, {}),
    "unit of an older run (other setpci)": ({"setpci": "/sbin/setpci"}, {}),
    "unit edited by hand": ({"unit": "[Unit]\nDescription=mine\n"}, {}),
    "unit missing, persist false": ({"unit": None}, {"persist": False}),
    "one bridge on, persist false": ({"lspci": ACS_ONE_ON}, {"persist": False}),
    "only the bridge that is off asked": ({"lspci": ACS_ONE_ON, "unit": None},
                                          {"bridges": ["00:01.1"], "persist": False}),
    "only the bridge that is on asked": ({"lspci": ACS_ONE_ON}, {"bridges": ["0000:00:01.2"]}),
    "unit for both, one bridge asked": ({}, {"bridges": ["00:01.1"]}),
}


@pytest.mark.parametrize("machine, options", ACS_STATES.values(), ids=list(ACS_STATES))
def test_acs_plan_agrees_with_pci_acs_check_mode(run_module, fake_runner, tmp_path, machine, options):
    answers = acs_machine(tmp_path, **machine)
    read = gpu_read(run_module, fake_runner, answers, tmp_path, ["acs"])
    options = dict(options, fs_root=str(tmp_path))
    plan = acs_plan(read, options)
    failed, checked = run_module(pci_acs, options, fake_runner(answers), check_mode=True)
    assert not failed, checked
    assert plan["answered"], plan["why"]
    assert plan["in_state"] is (not checked["changed"])
    unit = [checked["unit_path"]] if checked["unit_path"] and checked["diff"]["before"]["unit"] != \
        checked["diff"]["after"]["unit"] else []
    assert plan["changes"] == checked["changed_bridges"] + unit


@pytest.mark.parametrize("case, why", [
    ("stale", "a bluefleet module changed the node after the read"),
    ("reset", "the card or its driver was reset in this run after the read"),
    ("no section", "preflight's read has no acs section"),
    ("lspci missing", "preflight's read has no acs section: lspci not found on PATH"),
    ("unit unreadable", "read %(root)s/etc/systemd/system/bluefleet-pci-acs.service failed:"),
    ("another root", "the unit was read under %(root)s, not %(root)s/elsewhere"),
    ("not a bridge", "pci_acs refuses the bridges: disable PCIe ACS failed: 00:01.0 (Host bridge) is not a PCI "
                     "bridge with ACS"),
    ("not a device", "pci_acs refuses the bridges: disable PCIe ACS failed: 99:00.0 is not a PCI device"),
    ("bad options", "pci_acs refuses the options:"),
])
def test_acs_plan_does_not_answer(run_module, fake_runner, tmp_path, case, why):
    answers = acs_machine(tmp_path)
    read = gpu_read(run_module, fake_runner, answers, tmp_path, ["acs"])
    options = {"fs_root": str(tmp_path)}
    changed_at, reset = None, False
    if case == "stale":
        changed_at = read["read_at"]  # the same moment: not after the read, but the read cannot say which came first
    elif case == "reset":
        reset = True
    elif case == "no section":
        del read["acs"]
    elif case == "lspci missing":
        failed, read = run_module(gpu_info, {"fs_root": str(tmp_path), "filter": ["acs"]},
                                  fake_runner({}, missing={"lspci"}))
    elif case == "unit unreadable":
        os.remove(os.path.join(str(tmp_path), *_pci_acs.UNIT))
        os.mkdir(os.path.join(str(tmp_path), *_pci_acs.UNIT))
        read = gpu_read(run_module, fake_runner, answers, tmp_path, ["acs"])
    elif case == "another root":
        options = {"fs_root": str(tmp_path / "elsewhere")}
    elif case == "not a bridge":
        options["bridges"] = ["00:01.0"]
    elif case == "not a device":
        options["bridges"] = ["99:00.0"]
    elif case == "bad options":
        options["persist"] = "sometimes"
    plan = acs_plan(read, options, changed_at=changed_at, reset=reset)
    assert plan["answered"] is False and plan["in_state"] is False
    assert plan["why"].startswith(why % {"root": tmp_path}), plan["why"]
    if case in ("not a bridge", "not a device"):  # the module fails there, with the same message
        failed, checked = run_module(pci_acs, options, fake_runner(answers), check_mode=True)
        assert failed and plan["why"].endswith(checked["msg"])


# ------------------------------------------------------------------ the NCCL files (files_plan)
CONF = "/etc/nccl.conf"
ENV = "/etc/profile.d/nccl.sh"
NCCL_FILES = [{"path": CONF, "content": "NCCL_IB_HCA==mlx5_0:1\nNCCL_IB_TC=104\n", "mode": "0644"},
              {"path": ENV, "content": "export NCCL_IB_HCA==mlx5_0:1\nexport NCCL_IB_TC=104\n", "mode": "0644"}]


def files_read(root, paths):
    """dpu_info's section files as preflight reads it (the module's own reader), with the read's time."""
    info = dpu_info.DpuInfo(None, ["files"], files=paths, files_root=str(root))
    return {"read_at": time.time(), "files": info.file_states()}


def nccl_machine(root, state):
    for entry in NCCL_FILES:
        write(root, entry["path"], entry["content"])
    if state == "one file missing":
        os.remove(os.path.join(str(root), ENV.lstrip("/")))
    elif state == "nccl.conf edited":
        write(root, CONF, NCCL_FILES[0]["content"] + "NCCL_DEBUG=INFO\n")
    elif state == "wrong mode":
        os.chmod(os.path.join(str(root), CONF.lstrip("/")), 0o600)
    elif state == "a directory in its place":
        os.remove(os.path.join(str(root), CONF.lstrip("/")))
        os.mkdir(os.path.join(str(root), CONF.lstrip("/")))
    elif state == "a link to the same content":
        os.rename(os.path.join(str(root), CONF.lstrip("/")), os.path.join(str(root), "etc/nccl.conf.real"))
        os.symlink("nccl.conf.real", os.path.join(str(root), CONF.lstrip("/")))


@pytest.mark.parametrize("state", ["all set", "one file missing", "nccl.conf edited", "wrong mode",
                                   "a link to the same content", "nothing there"])
def test_files_plan_agrees_with_files_check_mode_on_the_nccl_files(run_module, fake_runner, tmp_path, state):
    if state != "nothing there":
        nccl_machine(tmp_path, state)
    read = files_read(tmp_path, [CONF, ENV])
    plan = files_plan(read, NCCL_FILES, [], fs_root=str(tmp_path))
    failed, checked = run_module(files, {"fs_root": str(tmp_path), "files": NCCL_FILES}, fake_runner({}),
                                 check_mode=True)
    assert not failed, checked
    assert plan["answered"], plan["why"]
    assert plan["in_state"] is (not checked["changed"])
    assert plan["changes"] == checked["changed_paths"]


def test_files_plan_does_not_answer_for_a_path_or_root_it_did_not_read(tmp_path):
    nccl_machine(tmp_path, "all set")
    read = files_read(tmp_path, [CONF, ENV])
    moved = [dict(NCCL_FILES[0], path="/etc/nccl/nccl.conf")]
    assert files_plan(read, moved, [], fs_root=str(tmp_path))["why"] == "/etc/nccl/nccl.conf was not read"
    assert files_plan(read, NCCL_FILES, [], fs_root="/")["why"].startswith("the files were read under")
    assert not files_plan(read, NCCL_FILES, [], fs_root=str(tmp_path), changed_at=read["read_at"] + 1)["answered"]
    assert not files_plan({"read_at": 1.0}, NCCL_FILES, [], fs_root=str(tmp_path))["answered"]
