"""files: several files and links in one run, under a temporary fs_root; checked before anything is written."""

from __future__ import annotations

import json
import os
import stat
import tempfile

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.modules import files


class _Exit(Exception):
    def __init__(self, failed, result):
        super().__init__(result.get("msg"))
        self.failed = failed
        self.result = result


@pytest.fixture
def run(monkeypatch):
    def _exit_json(self, **kwargs):
        raise _Exit(False, json.loads(json.dumps(kwargs)))

    def _fail_json(self, msg, **kwargs):
        raise _Exit(True, json.loads(json.dumps(dict(kwargs, msg=msg))))

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail_json)

    def _run(args, check_mode=False, diff=True):
        args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
        with patch_module_args(args):
            try:
                files.main()
            except _Exit as exc:
                return exc.failed, exc.result
        raise AssertionError("the module returned without exit_json or fail_json")

    return _run


def tree(root):
    """Every path under root: file content and mode, link target, or 'dir'."""
    out = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = "-> " + os.readlink(path)
            elif os.path.isdir(path):
                out[rel] = "dir %04o" % stat.S_IMODE(os.stat(path).st_mode)
            else:
                with open(path, encoding="utf-8") as handle:
                    out[rel] = "%04o %s" % (stat.S_IMODE(os.stat(path).st_mode), handle.read())
    return out


UNIT = {"path": "/etc/systemd/system/x.service", "content": "[Service]\nExecStart=/usr/local/sbin/x\n"}
SCRIPT = {"path": "/usr/local/sbin/x", "content": "#!/bin/sh\necho x\n", "mode": "0755"}
LINK = {"path": "/etc/systemd/system/multi-user.target.wants/x.service", "src": "../x.service"}


def args_for(root, **extra):
    return dict({"fs_root": str(root), "files": [UNIT, SCRIPT], "links": [LINK]}, **extra)


def test_first_run_writes_everything_then_a_second_run_changes_nothing(run, tmp_path):
    failed, result = run(args_for(tmp_path))
    assert not failed, result
    assert result["changed"] is True
    assert result["changed_paths"] == [UNIT["path"], SCRIPT["path"], LINK["path"]]
    assert tree(tmp_path) == {
        "etc": "dir 0755", "etc/systemd": "dir 0755", "etc/systemd/system": "dir 0755",
        "etc/systemd/system/multi-user.target.wants": "dir 0755",
        "etc/systemd/system/x.service": "0644 " + UNIT["content"],
        "etc/systemd/system/multi-user.target.wants/x.service": "-> ../x.service",
        "usr": "dir 0755", "usr/local": "dir 0755", "usr/local/sbin": "dir 0755",
        "usr/local/sbin/x": "0755 " + SCRIPT["content"]}
    assert [f["created"] for f in result["files"]] == [True, True] and result["links"][0]["before"] is None
    assert os.path.realpath(tmp_path / LINK["path"].lstrip("/")) == str(tmp_path / UNIT["path"].lstrip("/"))
    before = tree(tmp_path)
    inode = os.stat(tmp_path / "usr/local/sbin/x").st_ino
    failed, again = run(args_for(tmp_path))
    assert not failed and again["changed"] is False and again["changed_paths"] == [] and "diff" not in again
    assert again["directories"] == [] and tree(tmp_path) == before
    assert os.stat(tmp_path / "usr/local/sbin/x").st_ino == inode, "an unchanged file is not rewritten"


def test_check_mode_says_what_would_change_and_writes_nothing(run, tmp_path):
    (tmp_path / "etc").mkdir()
    failed, result = run(args_for(tmp_path), check_mode=True)
    assert not failed and result["changed"] is True and result["check_mode_prediction"] is True
    assert tree(tmp_path) == {"etc": "dir %04o" % stat.S_IMODE(os.stat(tmp_path / "etc").st_mode)}
    assert str(tmp_path / "etc/systemd/system") in result["directories"]
    assert str(tmp_path / "etc") not in result["directories"]
    assert [d["after_header"] for d in result["diff"]] == [UNIT["path"], SCRIPT["path"], LINK["path"]]
    assert result["diff"][0]["before"] == "# mode (none)\n" and UNIT["content"] in result["diff"][0]["after"]
    assert result["diff"][2] == {"before_header": LINK["path"], "after_header": LINK["path"], "before": "",
                                 "after": "-> ../x.service\n"}


def test_only_what_differs_is_written_and_shown(run, tmp_path):
    run(args_for(tmp_path))
    unit = tmp_path / UNIT["path"].lstrip("/")
    unit.write_text("old\n")
    os.chmod(tmp_path / "usr/local/sbin/x", 0o700)
    link = tmp_path / LINK["path"].lstrip("/")
    link.unlink()
    link.symlink_to("/elsewhere")
    failed, result = run(args_for(tmp_path))
    assert not failed and result["changed_paths"] == [UNIT["path"], SCRIPT["path"], LINK["path"]]
    assert [f["content_changed"] for f in result["files"]] == [True, False]
    assert result["files"][1]["before_mode"] == "0700" and result["files"][1]["mode"] == "0755"
    assert result["links"][0]["before"] == "/elsewhere"
    assert unit.read_text() == UNIT["content"] and os.readlink(link) == "../x.service"
    assert stat.S_IMODE(os.stat(tmp_path / "usr/local/sbin/x").st_mode) == 0o755
    assert result["diff"][0]["before"] == "old\n" and result["diff"][0]["after"] == UNIT["content"]
    assert result["diff"][1]["before"].startswith("# mode 0700\n") and result["diff"][2]["before"] == "-> /elsewhere\n"


def test_without_diff_mode_no_diff_comes_back(run, tmp_path):
    failed, result = run(args_for(tmp_path), diff=False)
    assert not failed and result["changed"] is True and "diff" not in result


def test_a_link_replaces_a_file_in_its_place(run, tmp_path):
    run(args_for(tmp_path))
    link = tmp_path / LINK["path"].lstrip("/")
    link.unlink()
    link.write_text("a file\n")
    failed, result = run(args_for(tmp_path))
    assert not failed and result["changed_paths"] == [LINK["path"]] and os.readlink(link) == "../x.service"


@pytest.mark.parametrize("change, words", [
    ({"files": [dict(UNIT, path="etc/x.conf")]}, "files[0].path 'etc/x.conf' is not absolute; give the path as the "
                                                 "machine sees it, starting with /"),
    ({"files": [dict(UNIT, path="/etc/../../x")]}, "files[0].path '/etc/../../x' contains '..'"),
    ({"links": [dict(LINK, path="/etc/x/")]}, "links[0].path '/etc/x/' names a directory"),
    ({"files": [UNIT, dict(SCRIPT, path=UNIT["path"])]}, "files[1].path '%s' is given twice" % UNIT["path"]),
    ({"links": [dict(LINK, path=UNIT["path"])]}, "links[0].path '%s' is given twice" % UNIT["path"]),
    ({"files": [dict(UNIT, mode="rw-r--r--")]}, "files[0].mode 'rw-r--r--' is not a mode; give it as an octal "
                                                "string such as '0644'"),
    ({"files": [dict(UNIT, path="/etc")]}, "is a directory, not a file; remove it or choose another path"),
    ({"links": [dict(LINK, path="/etc")]}, "links[0].path %s/etc is a directory" % "{root}"),
    ({"files": [dict(UNIT, path="/etc/passwd/x")]}, "/etc/passwd is in the way: a file where a directory is needed"),
])
def test_a_bad_path_fails_before_anything_is_written(run, tmp_path, change, words):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text("root\n")
    before = tree(tmp_path)
    failed, result = run(args_for(tmp_path, **change))
    assert failed and words.format(root=tmp_path) in result["msg"], result["msg"]
    assert result["msg"].startswith("write files failed: ") and result["msg"].endswith("nothing was written")
    assert tree(tmp_path) == before


def test_a_mode_written_as_a_yaml_number_means_the_same(run, tmp_path):
    failed, result = run(args_for(tmp_path, files=[dict(SCRIPT, mode=0o750)], links=[]))
    assert not failed and stat.S_IMODE(os.stat(tmp_path / "usr/local/sbin/x").st_mode) == 0o750
    assert result["files"][0]["mode"] == "0750"


# validate: the new content is checked before anything of the task is written (as ansible.builtin.copy's validate)
CHECKER = "grep -q ExecStart= %s"  # grep exits 1 when the line is missing


def test_validate_checks_new_content_and_passes_unchanged_files_without_running(run, tmp_path):
    failed, result = run(args_for(tmp_path, files=[dict(UNIT, validate=CHECKER), SCRIPT]))
    assert not failed and result["changed"], result
    assert (tmp_path / "etc/systemd/system/x.service").read_text() == UNIT["content"]
    assert [argv[:3] for argv in result["cmd"]] == [["grep", "-q", "ExecStart="]], result["cmd"]
    assert ".bluefleet-scratch-" in result["cmd"][0][3]  # the new content, in a file of its own
    # unchanged content is not checked again: a command that always fails passes here
    failed, result = run(args_for(tmp_path, files=[dict(UNIT, validate="false %s"), SCRIPT]))
    assert not failed and not result["changed"] and result["cmd"] == [], result


@pytest.mark.parametrize("check_mode", [False, True])
def test_content_that_fails_its_check_writes_nothing_and_says_why(run, tmp_path, check_mode):
    (tmp_path / "etc").mkdir()
    before = tree(tmp_path)
    bad = dict(UNIT, content="[Service]\n", validate="sh -c 'echo line 1 of $0: no ExecStart >&2; exit 3' %s")
    failed, result = run(args_for(tmp_path, files=[SCRIPT, bad]), check_mode=check_mode)
    assert failed, result
    msg = result["msg"]
    assert msg.startswith("write files failed: files[1].path /etc/systemd/system/x.service: the new content fails its "
                          "check (sh -c ")
    assert "exit status 3: line 1 of /etc/systemd/system/x.service: no ExecStart" in msg, msg
    assert msg.endswith("fix the content or the command; nothing was written"), msg
    assert tree(tmp_path) == before, "a failed check wrote something (the other file, a directory)"
    assert not [p for p in os.listdir(tempfile.gettempdir()) if p.startswith(".bluefleet-scratch-")]


@pytest.mark.parametrize("command, words", [
    ("no-such-checker %s", "fails its check (no-such-checker %s): no-such-checker not found on PATH"),
    ("grep -q ExecStart=", "does not name the file to check; put %s where its path goes"),
    ("grep 'unclosed %s", "cannot be split into arguments"),
])
def test_a_validate_command_that_cannot_check_fails_before_writing(run, tmp_path, command, words):
    before = tree(tmp_path)
    failed, result = run(args_for(tmp_path, files=[dict(UNIT, validate=command)]))
    assert failed and words in result["msg"], result["msg"]
    assert tree(tmp_path) == before
