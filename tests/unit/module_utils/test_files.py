"""The one file-write helper every module uses (plumbing/_files.py)."""

from __future__ import annotations

import os
import stat

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing import _files
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import (
    read_text,
    write_attribute,
    write_file,
)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_new_file_gets_given_mode_and_reports_change(tmp_path):
    path = tmp_path / "a.conf"
    assert write_file(str(path), "x=1\n", mode=0o600) is True
    assert path.read_text() == "x=1\n"
    assert _mode(path) == 0o600


def test_same_content_writes_nothing(tmp_path):
    path = tmp_path / "a.conf"
    path.write_text("x=1\n")
    before = os.stat(path)
    assert write_file(str(path), "x=1\n") is False
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_existing_file_keeps_its_mode_and_is_replaced_not_rewritten(tmp_path):
    path = tmp_path / "a.conf"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    inode = os.stat(path).st_ino
    assert write_file(str(path), "new\n", mode=0o644) is True
    assert path.read_text() == "new\n"
    assert _mode(path) == 0o640
    assert os.stat(path).st_ino != inode  # renamed over, so a reader never sees half a file


def test_bytes_content_and_no_temp_file_left(tmp_path):
    path = tmp_path / "blob"
    assert write_file(str(path), b"\x00\x01") is True
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(os.listdir(tmp_path)) == ["blob"]


def test_makedirs_creates_parents(tmp_path):
    path = tmp_path / "etc" / "deep" / "x.conf"
    assert write_file(str(path), "y\n", makedirs=True) is True
    assert path.read_text() == "y\n"


def test_missing_parent_without_makedirs_fails_and_creates_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_file(str(tmp_path / "nope" / "x.conf"), "y\n")
    assert os.listdir(tmp_path) == []


def test_directory_target_is_refused(tmp_path):
    with pytest.raises(IsADirectoryError):
        write_file(str(tmp_path), "y\n")


def test_failure_during_replace_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "a.conf"
    path.write_text("old\n")

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_files.os, "replace", boom)
    with pytest.raises(OSError, match="No space left"):
        write_file(str(path), "new\n")
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["a.conf"]


def test_owner_change_refused_is_tolerated(tmp_path, monkeypatch):
    path = tmp_path / "a.conf"
    path.write_text("old\n")
    real = os.stat(path)
    calls = []

    class Foreign:
        st_mode = real.st_mode
        st_uid = real.st_uid + 1
        st_gid = real.st_gid

    def refuse(p, uid, gid):
        calls.append((uid, gid))
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(_files.os, "chown", refuse)
    _files._keep_owner(str(path), Foreign)
    assert calls == [(real.st_uid + 1, real.st_gid)]


def test_read_text_missing_is_none(tmp_path):
    assert read_text(str(tmp_path / "absent")) is None
    (tmp_path / "p").write_text("z")
    assert read_text(str(tmp_path / "p")) == "z"


def test_write_attribute_writes_in_place(tmp_path):
    path = tmp_path / "mtu"
    path.write_text("1500\n")
    inode = os.stat(path).st_ino
    write_attribute(str(path), "9000\n")
    assert path.read_text() == "9000\n"
    assert os.stat(path).st_ino == inode


def test_write_link_makes_replaces_and_leaves_alone(tmp_path):
    link = tmp_path / "x.service"
    assert _files.write_link(str(link), "../x.service") is True
    assert os.readlink(link) == "../x.service"
    assert _files.write_link(str(link), "../x.service") is False
    assert _files.write_link(str(link), "/other") is True and os.readlink(link) == "/other"
    link.unlink()
    link.write_text("a file\n")
    assert _files.write_link(str(link), "../x.service") is True and os.readlink(link) == "../x.service"
    assert sorted(os.listdir(tmp_path)) == ["x.service"], "no temporary link left"


def test_write_link_refuses_a_directory(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        _files.write_link(str(tmp_path / "d"), "../x")
    assert sorted(os.listdir(tmp_path)) == ["d"]


def test_missing_folders_lists_the_folders_to_make_outermost_first(tmp_path):
    path = tmp_path / "a" / "b" / "record.json"
    assert _files.missing_folders(str(path)) == [str(tmp_path / "a"), str(tmp_path / "a" / "b")]
    (tmp_path / "a").mkdir()
    assert _files.missing_folders(str(path)) == [str(tmp_path / "a" / "b")]
    assert _files.missing_folders(str(tmp_path / "record.json")) == []
    # up to the root given, not beyond: a root that does not exist yet is not listed
    assert _files.missing_folders(str(tmp_path / "r" / "x" / "f"), str(tmp_path / "r")) == [str(tmp_path / "r" / "x")]


def test_missing_folders_names_a_file_in_the_way(tmp_path):
    (tmp_path / "a").write_text("x")
    with pytest.raises(NotADirectoryError) as caught:
        _files.missing_folders(str(tmp_path / "a" / "b" / "record.json"))
    assert caught.value.filename == str(tmp_path / "a")


@pytest.mark.parametrize("value,expected", [("0644", 0o644), (" 755 ", 0o755), (420, 0o644), ("04755", 0o4755)])
def test_octal_mode_reads_a_mode_as_users_give_it(value, expected):
    assert _files.octal_mode(value, "mode") == expected


@pytest.mark.parametrize("value", ["rw-r--r--", "0899", True, 0o17777, None])
def test_octal_mode_refuses_anything_else_naming_the_option(value):
    with pytest.raises(ValueError, match="files\\[0\\].mode .* is not a mode; give it as an octal string"):
        _files.octal_mode(value, "files[0].mode")
