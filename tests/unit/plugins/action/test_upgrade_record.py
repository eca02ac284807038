"""bluefleet.dpu.upgrade_record: the node's upgrade record written on the controller by the action itself.

The record's bytes are those of to_nice_json and a newline (what the playbook wrote with ansible.builtin.copy
before, so an earlier run's record compares equal); written only when it differs; check mode writes nothing;
a folder in the way or a directory at the path fails naming it, with nothing written.
"""

from __future__ import annotations

import os
import stat

import pytest
import yaml
from _action import make_action
from ansible.errors import AnsibleActionFail
from ansible.plugins.filter.core import to_nice_json
from ansible_collections.bluefleet.dpu.plugins.action import upgrade_record
from ansible_collections.bluefleet.dpu.plugins.modules import upgrade_record as docs

RECORD = {"host": "sim01-dpu", "fleet": "3f2c1a9e0b7d",
          "previous": {"nic_firmware": "32.41.1000", "host_level": "RESTRICTED",
                       "host_flags": {"disable_rshim": True, "disable_tracer": False}, "bfb_release": None},
          "target": {"nic_firmware": "32.43.1014", "bfb_release": ""}}


def run(args, check_mode=False, diff=False):
    action = make_action(upgrade_record, "bluefleet.dpu.upgrade_record", args, check_mode=check_mode, diff=diff)[0]
    return action.run(task_vars={})


def test_the_documented_options_are_the_actions():
    options = yaml.safe_load(docs.DOCUMENTATION)["options"]
    spec = upgrade_record.ARGUMENT_SPEC
    assert set(options) == set(spec)
    for name, entry in spec.items():
        assert options[name]["type"] == entry["type"], name
        assert options[name].get("required", False) == entry.get("required", False), name
        assert options[name].get("default") == entry.get("default"), name


def test_a_new_record_creates_its_folders_and_holds_to_nice_json(tmp_path):
    path = tmp_path / "state" / "upgrade" / "sim01-dpu.json"
    out = run({"path": str(path), "record": RECORD})
    assert out["changed"] and out["created"] and out["path"] == str(path)
    assert out["directories"] == [str(tmp_path / "state"), str(tmp_path / "state" / "upgrade")]
    assert path.read_text() == to_nice_json(RECORD) + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o755
    assert "diff" not in out


def test_the_same_record_again_writes_nothing(tmp_path):
    path = tmp_path / "sim01-dpu.json"
    run({"path": str(path), "record": RECORD})
    inode = path.stat().st_ino
    out = run({"path": str(path), "record": dict(RECORD)})
    assert not out["changed"] and not out["created"] and out["directories"] == []
    assert path.stat().st_ino == inode


def test_a_record_written_by_copy_before_compares_equal(tmp_path):
    path = tmp_path / "sim01-dpu.json"
    path.write_text(to_nice_json(RECORD) + "\n")
    path.chmod(0o644)
    assert not run({"path": str(path), "record": RECORD})["changed"]


def test_a_changed_record_is_replaced_and_shown_in_diff_mode(tmp_path):
    path = tmp_path / "sim01-dpu.json"
    run({"path": str(path), "record": RECORD})
    blocked = dict(RECORD, blocked={"reason": "power_cycle", "step": "Reset NIC firmware"})
    out = run({"path": str(path), "record": blocked}, diff=True)
    assert out["changed"] and not out["created"]
    assert out["diff"]["before"] == to_nice_json(RECORD) + "\n"
    assert out["diff"]["after"] == path.read_text() == to_nice_json(blocked) + "\n"


def test_another_mode_is_set(tmp_path):
    path = tmp_path / "sim01-dpu.json"
    run({"path": str(path), "record": RECORD})
    out = run({"path": str(path), "record": RECORD, "mode": "0600"})
    assert out["changed"] and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_check_mode_writes_nothing(tmp_path):
    path = tmp_path / "state" / "sim01-dpu.json"
    out = run({"path": str(path), "record": RECORD}, check_mode=True, diff=True)
    assert out["changed"] and out["created"] and out["directories"] == [str(tmp_path / "state")]
    assert out["diff"]["after"] == to_nice_json(RECORD) + "\n"
    assert not (tmp_path / "state").exists()


def test_a_file_in_place_of_the_folder_fails_naming_it(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(AnsibleActionFail, match="not-a-dir is in the way: a file where the record's folder"):
        run({"path": str(blocker / "records" / "sim01-dpu.json"), "record": RECORD})
    assert blocker.read_text() == "x"


def test_a_directory_at_the_path_fails_naming_it(tmp_path):
    (tmp_path / "sim01-dpu.json").mkdir()
    with pytest.raises(AnsibleActionFail, match="sim01-dpu.json is a directory, not a file"):
        run({"path": str(tmp_path / "sim01-dpu.json"), "record": RECORD})


def test_an_unwritable_folder_fails_naming_the_record_and_the_fix(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(upgrade_record, "write_file", refuse)
    with pytest.raises(AnsibleActionFail, match="cannot write .*sim01-dpu.json: Permission denied; free space or"):
        run({"path": str(tmp_path / "sim01-dpu.json"), "record": RECORD})


@pytest.mark.parametrize("mode", ["644x", "rw-r--r--", True, 0o17777])
def test_a_bad_mode_fails_before_anything_is_written(tmp_path, mode):
    with pytest.raises(AnsibleActionFail, match="is not a mode; give it as an octal string"):
        run({"path": str(tmp_path / "sim01-dpu.json"), "record": RECORD, "mode": mode})
    assert os.listdir(tmp_path) == []


def test_a_missing_record_fails_as_an_unsupported_call(tmp_path):
    with pytest.raises(AnsibleActionFail, match="record"):
        run({"path": str(tmp_path / "sim01-dpu.json")})
