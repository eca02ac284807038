"""peermem: exact ordered argv, files under fs_root, check/diff mode, EINVAL and unregistered cases.

Tool outputs:
* ``lsmod`` with nvidia_peermem: the parser fixture gpu-operator-doc-lsmod-grep-nvidia (verbatim, public
  GPU Operator docs); without it: the same lines less the nvidia_peermem row.
* ``modprobe`` prints nothing on success; the EINVAL failure is kmod's
  ``modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument`` (kmod tools/modprobe.c prints
  "could not insert '%s': %s" with strerror), rc 1.
"""

from __future__ import annotations

import os

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _peermem
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import peermem
from fake_tools import fixture_text

WITH = fixture_text("lsmod", "gpu-operator-doc-lsmod-grep-nvidia")
WITHOUT = "".join(line + "\n" for line in WITH.splitlines() if not line.startswith("nvidia_peermem "))
EINVAL = "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument\n"
LOAD = ["modprobe", "nvidia_peermem"]
UNLOAD = ["modprobe", "-r", "nvidia_peermem"]
LSMOD = ["lsmod"]
VERSION = ["modprobe", "--version"]


class Sequence:
    """Answers the argv in the given order; ``effect`` runs a side effect (the sysfs file) per step."""

    def __init__(self, steps):
        self.steps = list(steps)
        self.cmd = []

    def run(self, argv, timeout=None):
        self.cmd.append(list(argv))
        assert self.steps, "unexpected command %r" % (argv,)
        want, rc, out, err, effect = (self.steps.pop(0) + (None,))[:5]
        assert list(argv) == want, "expected %r, ran %r" % (want, argv)
        if effect:
            effect()
        return CommandResult(argv, rc, out, err, missing=rc == 127)


@pytest.fixture
def root(tmp_path):
    return tmp_path


def sysfs(root):
    return root.joinpath(*_peermem.SYSFS)


def conf(root):
    return root.joinpath(*_peermem.CONF)


def register(root):
    def effect():
        sysfs(root).parent.mkdir(parents=True, exist_ok=True)
        sysfs(root).write_text("1.1\n")
    return effect


def unregister(root):
    return lambda: sysfs(root).unlink()


def test_load_and_persist(run_module, root):
    seq = Sequence([(LSMOD, 0, WITHOUT, ""), (LOAD, 0, "", "", register(root)), (LSMOD, 0, WITH, ""),
                    (VERSION, 0, "kmod version 30\n", "")])
    failed, res = run_module(peermem, {"fs_root": str(root)}, seq)
    assert not failed, res
    assert res["changed"] and res["actions"] == ["load", "persist"]
    assert res["cmd"] == [LSMOD, LOAD, LSMOD, VERSION]
    assert res["peermem"]["loaded"] and res["peermem"]["registered"] and res["peermem"]["persistent"]
    assert res["peermem"]["version"] == "1.1"
    assert conf(root).read_text().splitlines()[-1] == "nvidia_peermem"
    assert oct(os.stat(conf(root)).st_mode & 0o777) == "0o644"
    assert res["diff"]["before"] == {"loaded": False, "registered": False, "persistent": False}
    assert res["diff"]["after"] == {"loaded": True, "registered": True, "persistent": True}
    assert res["reset_required"] == "none" and res["tool_version"] == "kmod version 30"


def test_noop_when_loaded_registered_persistent(run_module, root):
    register(root)()
    conf(root).parent.mkdir(parents=True)
    conf(root).write_text("# other\nnvidia-peermem\n")
    seq = Sequence([(LSMOD, 0, WITH, ""), (VERSION, 0, "kmod version 30\n", "")])
    failed, res = run_module(peermem, {"fs_root": str(root)}, seq)
    assert not failed and not res["changed"] and res["actions"] == []
    assert res["cmd"] == [LSMOD, VERSION]
    assert conf(root).read_text() == "# other\nnvidia-peermem\n"


def test_check_mode_reports_and_changes_nothing(run_module, root):
    seq = Sequence([(LSMOD, 0, WITHOUT, ""), (VERSION, 0, "kmod version 30\n", "")])
    failed, res = run_module(peermem, {"fs_root": str(root)}, seq, check_mode=True)
    assert not failed and res["changed"] and res["actions"] == ["load", "persist"]
    assert res["cmd"] == [LSMOD, VERSION]
    assert not conf(root).exists() and not sysfs(root).exists()
    assert res["diff"]["after"]["loaded"] is True


def test_loaded_but_unregistered_is_reloaded(run_module, root):
    conf(root).parent.mkdir(parents=True)
    conf(root).write_text(_peermem.CONF_TEXT)
    seq = Sequence([(LSMOD, 0, WITH, ""), (UNLOAD, 0, "", ""), (LOAD, 0, "", "", register(root)),
                    (LSMOD, 0, WITH, ""), (VERSION, 0, "kmod version 30\n", "")])
    failed, res = run_module(peermem, {"fs_root": str(root)}, seq)
    assert not failed and res["actions"] == ["reload"]
    assert res["cmd"] == [LSMOD, UNLOAD, LOAD, LSMOD, VERSION]


def test_einval_names_the_cause_and_the_fix(run_module, root):
    seq = Sequence([(LSMOD, 0, WITHOUT, ""), (LOAD, 1, "", EINVAL)])
    failed, res = run_module(peermem, {"fs_root": str(root)}, seq)
    assert failed
    assert res["msg"].startswith("load nvidia_peermem with modprobe failed:")
    assert "Invalid argument" in res["msg"]
    assert "built against another MOFED/DOCA-OFED" in res["msg"]
    assert "reinstall or rebuild the NVIDIA driver" in res["msg"]
    assert res["rc"] == 1 and res["cmd"] == [LSMOD, LOAD]
    assert not conf(root).exists(), "nothing is written after a failed load"


def test_loaded_without_registration_after_load_fails(run_module, root):
    seq = Sequence([(LSMOD, 0, WITHOUT, ""), (LOAD, 0, "", ""), (LSMOD, 0, WITH, "")])
    failed, res = run_module(peermem, {"fs_root": str(root)}, seq)
    assert failed
    assert "is loaded but" in res["msg"] and "memory_peers/nv_mem/version does not exist" in res["msg"]
    assert "GPU Direct RDMA Disabled" in res["msg"]


def test_absent_unloads_and_removes_the_file(run_module, root):
    register(root)()
    conf(root).parent.mkdir(parents=True)
    conf(root).write_text(_peermem.CONF_TEXT)
    seq = Sequence([(LSMOD, 0, WITH, ""), (UNLOAD, 0, "", "", unregister(root)), (LSMOD, 0, WITHOUT, ""),
                    (VERSION, 0, "kmod version 30\n", "")])
    failed, res = run_module(peermem, {"fs_root": str(root), "state": "absent"}, seq)
    assert not failed and res["actions"] == ["unload", "unpersist"]
    assert not conf(root).exists()
    assert res["peermem"]["loaded"] is False


def test_persist_false_leaves_the_file_alone(run_module, root):
    register(root)()
    seq = Sequence([(LSMOD, 0, WITH, ""), (VERSION, 0, "", "")])
    failed, res = run_module(peermem, {"fs_root": str(root), "persist": False}, seq)
    assert not failed and not res["changed"] and not conf(root).exists()


def test_lsmod_garbage_fails_before_any_change(run_module, root):
    seq = Sequence([(LSMOD, 0, "this is not lsmod\n", "")])
    failed, res = run_module(peermem, {"fs_root": str(root)}, seq)
    assert failed and res["msg"].startswith("list kernel modules with lsmod failed:")
    assert res["cmd"] == [LSMOD]


def test_timeout_must_be_positive(run_module, root):
    failed, res = run_module(peermem, {"fs_root": str(root), "timeout": 0}, Sequence([]))
    assert failed and "timeout must be a positive number of seconds" in res["msg"]
