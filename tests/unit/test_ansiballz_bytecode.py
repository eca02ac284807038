"""The integration tests' AnsiballZ cache adds bytecode to each payload (callback_plugins/ansiballz_cache.py):
``zipimport`` runs a ``.pyc`` only when it was compiled from the very source beside it, and a payload whose
bytecode cannot be used runs from its sources as before."""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import ansiballz_plugin
import pytest

PROBE = ("import importlib, json, sys\n"
         "sys.path.insert(0, sys.argv[1])\n"
         "m = importlib.import_module('pkg.mod')\n"
         "print(json.dumps({'file': m.__file__, 'value': m.VALUE, 'code': m.where.__code__.co_filename}))\n")


@pytest.fixture(scope="module")
def cache():
    return ansiballz_plugin.load("bluefleet_test_ansiballz_bytecode")


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def _members(data: bytes) -> dict[str, bytes]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    return {name: archive.read(name) for name in archive.namelist()}


SOURCES = {"pkg/__init__.py": b"", "pkg/mod.py": b"VALUE = 6 * 7\r\n\ndef where():\n    return 1\n"}


def _import(tmp_path: Path, data: bytes) -> dict:
    """Import pkg.mod from the zip in a fresh interpreter (as the AnsiballZ wrapper does: zip on sys.path)."""
    path = tmp_path / ("payload-%d.zip" % len(list(tmp_path.glob("payload-*.zip"))))
    path.write_bytes(data)
    proc = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_zipimport_runs_the_added_bytecode(cache, tmp_path):
    data = cache.add_bytecode(_zip(SOURCES))
    members = _members(data)
    assert sorted(members) == ["pkg/__init__.py", "pkg/__init__.pyc", "pkg/mod.py", "pkg/mod.pyc"]
    assert {n: members[n] for n in SOURCES} == SOURCES  # the sources travel unchanged
    pyc = members["pkg/mod.pyc"]
    assert pyc[:4] == importlib.util.MAGIC_NUMBER and int.from_bytes(pyc[4:8], "little") == 0b11  # checked hash
    assert pyc[8:16] == importlib.util.source_hash(SOURCES["pkg/mod.py"])
    loaded = _import(tmp_path, data)
    assert loaded["file"].endswith("pkg/mod.pyc") and loaded["value"] == 42
    assert loaded["code"] == cache.BYTECODE_NAME + "pkg/mod.py"
    plain = _import(tmp_path, _zip(SOURCES))
    assert plain["file"].endswith("pkg/mod.py") and plain["value"] == 42


def test_bytecode_of_another_source_is_never_run(cache, tmp_path):
    members = _members(cache.add_bytecode(_zip(SOURCES)))
    members["pkg/mod.py"] = b"VALUE = 7\n\ndef where():\n    return 2\n"  # the source changed, the .pyc did not
    loaded = _import(tmp_path, _zip(members))
    assert loaded["file"].endswith("pkg/mod.py") and loaded["value"] == 7


def test_bytecode_of_another_python_falls_back_to_the_source(cache, tmp_path):
    members = _members(cache.add_bytecode(_zip(SOURCES)))
    members["pkg/mod.pyc"] = b"\x00\x00\r\n" + members["pkg/mod.pyc"][4:]  # another magic number
    loaded = _import(tmp_path, _zip(members))
    assert loaded["file"].endswith("pkg/mod.py") and loaded["value"] == 42


def test_a_source_that_does_not_compile_gets_no_bytecode(cache):
    members = _members(cache.add_bytecode(_zip({"bad.py": b"def (:\n", "good.py": b"X = 1\n"})))
    assert sorted(members) == ["bad.py", "good.py", "good.pyc"]


def test_payloads_get_their_bytecode_once_and_other_files_are_left_alone(cache, tmp_path):
    from ansible.executor.module_common import ModuleMetadataV1, _CachedModule

    folder = tmp_path / "key"
    folder.mkdir()
    payload = folder / "ansible.modules.x-ZIP_DEFLATED-none"
    _CachedModule(zip_data=base64.b64encode(_zip(SOURCES)), metadata=ModuleMetadataV1(serialization_profile="legacy"),
                  source_mapping={}).dump(str(payload))
    (folder / (payload.name + ".lock")).write_text("")
    (folder / (payload.name + "-part")).write_bytes(b"half written")
    done: set[str] = set()
    cache.compile_payloads(str(folder), done)
    assert (folder / (payload.name + cache.MARK)).is_file()
    loaded = _CachedModule.load(str(payload))
    assert "pkg/mod.pyc" in _members(base64.b64decode(loaded.zip_data))
    assert loaded.metadata == ModuleMetadataV1(serialization_profile="legacy")
    assert (folder / (payload.name + "-part")).read_bytes() == b"half written"
    stamp = payload.stat().st_mtime_ns
    cache.compile_payloads(str(folder), set())  # another run: the mark says it is done
    cache.compile_payloads(str(folder), done)
    assert payload.stat().st_mtime_ns == stamp


def test_a_payload_that_cannot_be_read_costs_speed_only(cache, tmp_path, monkeypatch):
    monkeypatch.delenv("BLUEFLEET_TEST_ANSIBALLZ_CACHE", raising=False)
    folder = tmp_path / "key"
    folder.mkdir()
    (folder / "ansible.modules.x-ZIP_DEFLATED-none").write_bytes(b"not a pickle")
    warnings = []
    callback = cache.CallbackModule()
    monkeypatch.setattr(callback._display, "warning", warnings.append)
    callback._folder = str(folder)
    callback.v2_playbook_on_task_start(None, False)
    assert len(warnings) == 1 and "no bytecode added to the payloads in %s" % folder in warnings[0], warnings
    assert callback._folder is None  # not tried again in this run
    assert sorted(p.name for p in folder.iterdir()) == ["ansible.modules.x-ZIP_DEFLATED-none",
                                                        "ansible.modules.x-ZIP_DEFLATED-none.lock"]
