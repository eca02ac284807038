"""ipsec_offload: mlnx-bf.conf edits and the running driver's mode, on a file tree under fs_root.

The file layout is that of NVIDIA DPF's DPUFlavor examples for ``/etc/mellanox/mlnx-bf.conf`` (doca-platform docs,
storage scenario README, found with the code index): ``ALLOW_SHARED_RQ="no"``, ``IPSEC_FULL_OFFLOAD="no"``,
``ENABLE_ESWITCH_MULTIPORT="yes"``, ``RDMA_SET_NETNS_EXCLUSIVE="no"``. The driver's view is MLNX_OFED's compat
sysfs ``/sys/class/net/<uplink>/compat/devlink/ipsec_mode`` (``none`` / ``full``), as BlueField IPsec scripts read
and write it.
"""

from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.modules import ipsec_offload

CONF = ('ALLOW_SHARED_RQ="no"\n'
        'IPSEC_FULL_OFFLOAD="no"\n'
        'ENABLE_ESWITCH_MULTIPORT="yes"\n'
        'RDMA_SET_NETNS_EXCLUSIVE="no"\n')


def tree(root, conf=CONF, modes=("none", "none")):
    path = root / "etc/mellanox/mlnx-bf.conf"
    path.parent.mkdir(parents=True, exist_ok=True)
    if conf is not None:
        path.write_text(conf)
        path.chmod(0o600)
    for uplink, mode in zip(("p0", "p1"), modes, strict=False):
        sysfs = root / "sys/class/net" / uplink / "compat/devlink/ipsec_mode"
        sysfs.parent.mkdir(parents=True, exist_ok=True)
        sysfs.write_text(mode + "\n")
    return path


def run(capsys, args, check_mode=False):
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    args = dict(args, _ansible_diff=True)  # the tests read the diff, as --diff shows it
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            ipsec_offload.main()
    return json.loads(capsys.readouterr().out)


def test_enable_rewrites_the_one_line_and_asks_for_a_driver_restart(capsys, tmp_path):
    path = tree(tmp_path)
    result = run(capsys, {"full_offload": True, "fs_root": str(tmp_path)})
    assert result["changed"] is True
    assert path.read_text() == CONF.replace('IPSEC_FULL_OFFLOAD="no"', 'IPSEC_FULL_OFFLOAD="yes"')
    assert oct(path.stat().st_mode & 0o777) == "0o600", "the file keeps its mode"
    assert result["previous"] is False and result["full_offload"] is True
    assert result["restart_required"] == "driver" and result["reset_required"] == "driver_restart"
    assert result["driver_ipsec_mode"] == {"p0": "none", "p1": "none"}
    assert result["diff"]["before"] == CONF and 'IPSEC_FULL_OFFLOAD="yes"' in result["diff"]["after"]
    assert result["conf_file"] == str(path) and "uid" not in result


def test_file_and_driver_right_is_a_no_op(capsys, tmp_path):
    path = tree(tmp_path, CONF.replace('"no"\nENABLE', '"yes"\nENABLE'), modes=("full", "full"))
    before = path.read_text()
    result = run(capsys, {"full_offload": True, "fs_root": str(tmp_path)})
    assert result["changed"] is False and result["restart_required"] == "none"
    assert result["reset_required"] == "none"
    assert path.read_text() == before


def test_file_right_but_driver_still_old_asks_for_the_restart_again(capsys, tmp_path):
    path = tree(tmp_path, CONF.replace('IPSEC_FULL_OFFLOAD="no"', "IPSEC_FULL_OFFLOAD=yes  # set by hand"))
    before = path.read_text()
    result = run(capsys, {"full_offload": True, "fs_root": str(tmp_path)})
    # nothing written: not a change of the module (issue 17); the pending restart is still asked for
    assert result["changed"] is False and result["restart_required"] == "driver"
    assert path.read_text() == before, "an equivalent assignment is not rewritten"
    assert result["diff"]["before"] == result["diff"]["after"]


def test_check_mode_writes_nothing(capsys, tmp_path):
    path = tree(tmp_path)
    result = run(capsys, {"full_offload": True, "fs_root": str(tmp_path)}, check_mode=True)
    assert result["changed"] is True and result["restart_required"] == "driver"
    assert result["full_offload"] is True and result["before"] is False, "check mode predicts the file"
    assert path.read_text() == CONF
    assert 'IPSEC_FULL_OFFLOAD="yes"' in result["diff"]["after"]


def test_disable(capsys, tmp_path):
    path = tree(tmp_path, CONF.replace('"no"\nENABLE', '"yes"\nENABLE'), modes=("full", "full"))
    result = run(capsys, {"full_offload": False, "fs_root": str(tmp_path)})
    assert result["changed"] is True and result["previous"] is True and result["full_offload"] is False
    assert path.read_text() == CONF


def test_missing_line_is_appended_and_other_lines_kept(capsys, tmp_path):
    conf = '# site settings\nALLOW_SHARED_RQ="no"\n'
    path = tree(tmp_path, conf)
    result = run(capsys, {"full_offload": True, "fs_root": str(tmp_path)})
    assert result["changed"] is True
    assert path.read_text() == conf + 'IPSEC_FULL_OFFLOAD="yes"\n'


def test_last_assignment_wins_and_all_are_set(capsys, tmp_path):
    path = tree(tmp_path, 'IPSEC_FULL_OFFLOAD="yes"\nX="1"\nIPSEC_FULL_OFFLOAD="no"\n', modes=())
    result = run(capsys, {"full_offload": True, "fs_root": str(tmp_path)})
    assert result["previous"] is False and result["changed"] is True
    assert path.read_text() == 'IPSEC_FULL_OFFLOAD="yes"\nX="1"\nIPSEC_FULL_OFFLOAD="yes"\n'
    assert result["driver_ipsec_mode"] == {}


def test_missing_file_is_created_0644_with_a_warning(capsys, tmp_path):
    path = tree(tmp_path, conf=None, modes=())
    result = run(capsys, {"full_offload": False, "fs_root": str(tmp_path)})
    assert result["changed"] is True
    assert path.read_text() == 'IPSEC_FULL_OFFLOAD="no"\n'
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    assert "did not exist; created it with IPSEC_FULL_OFFLOAD only" in json.dumps(result.get("warnings"))


def test_no_mellanox_directory_fails_clearly(capsys, tmp_path):
    result = run(capsys, {"full_offload": True, "fs_root": str(tmp_path)})
    assert result["failed"] is True
    assert "etc/mellanox does not exist; is this a BlueField Arm OS?" in result["msg"]


def test_relative_path_is_refused(capsys, tmp_path):
    result = run(capsys, {"full_offload": True, "fs_root": str(tmp_path), "path": "mlnx-bf.conf"})
    assert result["failed"] is True and "path 'mlnx-bf.conf' is not absolute" in result["msg"]


@pytest.mark.parametrize("line, value", [
    ('IPSEC_FULL_OFFLOAD="yes"', True), ("IPSEC_FULL_OFFLOAD='yes'", True), ("IPSEC_FULL_OFFLOAD=yes # c", True),
    ("export IPSEC_FULL_OFFLOAD=YES", True), ('IPSEC_FULL_OFFLOAD="no"', False), ("IPSEC_FULL_OFFLOAD=", False),
    ('# IPSEC_FULL_OFFLOAD="yes"', False), ('IPSEC_FULL_OFFLOAD_X="yes"', False),
])
def test_file_value(line, value):
    assert ipsec_offload.file_value(line + "\n") is value
