"""The suite's AnsiballZ cache (callback_plugins/ansiballz_cache.py, enabled by conftest.ansible_env): the second
run of a module takes the payload the first run built, from the folder of the current sources' key, with the
bytecode of its sources added (tests/unit/test_ansiballz_bytecode.py: zipimport runs it only for those sources)."""

from __future__ import annotations

import base64
import io
import subprocess
import zipfile

from conftest import BIN, ROOT, ansible_env

PLAYBOOK = """- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.command: 'true'
"""


def _play(tmp_path, env) -> str:
    """PLAYBOOK run once with ``env``; its output (stdout and stderr). It must pass."""
    playbook = tmp_path / "one.yml"
    playbook.write_text(PLAYBOOK)
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", str(playbook),
                           "-e", "ansible_python_interpreter=%s" % (BIN / "python")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def test_a_second_run_takes_the_payload_the_first_built(tmp_path):
    env = dict(ansible_env(), BLUEFLEET_TEST_ANSIBALLZ_CACHE=str(tmp_path / "cache"), ANSIBLE_DEBUG="1")
    first, second = _play(tmp_path, env), _play(tmp_path, env)
    assert "ANSIBALLZ: Creating module" in first
    assert "ANSIBALLZ: Creating module" not in second and "ANSIBALLZ: using cached module" in second
    (key,) = list((tmp_path / "cache").iterdir())
    payloads = sorted(p.name for p in key.iterdir() if not p.name.endswith(".lock"))
    assert payloads == ["ansible.modules.command-ZIP_DEFLATED-none",
                        "ansible.modules.command-ZIP_DEFLATED-none.bytecode"], payloads
    # the second run's task started after the first run's payload was cached: it added the bytecode, then ran it
    from ansible.executor.module_common import _CachedModule

    archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(_CachedModule.load(str(key / payloads[0])).zip_data)))
    sources = {n for n in archive.namelist() if n.endswith(".py")}
    assert "ansible/modules/command.py" in sources and "ansible/module_utils/basic.py" in sources
    assert {n for n in archive.namelist() if n.endswith(".pyc")} == {n + "c" for n in sources}


def test_a_cache_that_cannot_be_written_costs_speed_only(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    out = _play(tmp_path, dict(ansible_env(), BLUEFLEET_TEST_ANSIBALLZ_CACHE=str(blocker / "cache")))
    assert "ansiballz_cache: %s is not usable" % (blocker / "cache") in out
