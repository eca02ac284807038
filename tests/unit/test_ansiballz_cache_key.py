"""The integration tests' AnsiballZ cache (tests/integration/callback_plugins/ansiballz_cache.py): a payload is
reused only while every source it is built from is unchanged."""

from __future__ import annotations

import os
import time

import ansiballz_plugin
import pytest


@pytest.fixture(scope="module")
def cache():
    return ansiballz_plugin.load("bluefleet_test_ansiballz_cache")


@pytest.fixture
def collection(tmp_path):
    root = tmp_path / "collection"
    (root / "plugins/modules").mkdir(parents=True)
    (root / "plugins/module_utils/sub").mkdir(parents=True)
    (root / "plugins/modules/x.py").write_text("from ..module_utils.sub import y\n")
    (root / "plugins/module_utils/sub/y.py").write_text("A = 1\n")
    (root / "plugins/filter").mkdir()
    (root / "plugins/filter/f.py").write_text("B = 1\n")
    return root


@pytest.mark.parametrize("edit", [
    lambda root: (root / "plugins/modules/x.py").write_text("import os\n"),
    lambda root: (root / "plugins/module_utils/sub/y.py").write_text("A = 2\n"),
    lambda root: (root / "plugins/module_utils/sub/z.py").write_text(""),
    lambda root: (root / "plugins/module_utils/sub/y.py").rename(root / "plugins/module_utils/sub/w.py"),
], ids=["module", "module_utils", "new file", "renamed"])
def test_any_edit_of_a_payload_source_gives_a_new_key(cache, collection, edit):
    before = cache.cache_key(str(collection))
    assert cache.cache_key(str(collection)) == before
    edit(collection)
    assert cache.cache_key(str(collection)) != before


def test_files_no_payload_holds_keep_the_key(cache, collection):
    before = cache.cache_key(str(collection))
    (collection / "plugins/filter/f.py").write_text("B = 2\n")
    (collection / "plugins/module_utils/sub/__pycache__").mkdir()
    (collection / "plugins/module_utils/sub/__pycache__/y.cpython-311.pyc").write_bytes(b"\0")
    assert cache.cache_key(str(collection)) == before


def test_another_checkout_gets_its_own_key(cache, collection, tmp_path):
    other = tmp_path / "clone"
    os.rename(collection, other)
    (collection / "plugins").mkdir(parents=True)
    assert cache.cache_key(str(other)) != cache.cache_key(str(collection))


def test_a_run_links_its_payload_folder_to_the_keys_folder_and_old_keys_go(cache, collection, tmp_path):
    base = tmp_path / "cache"
    run = tmp_path / "ansible-local-1"
    run.mkdir()
    target = cache.share(str(base), str(run), str(collection))
    assert os.path.realpath(run / "ansiballz_cache") == target
    assert os.path.dirname(target) == str(base)
    (run / "ansiballz_cache" / "payload").write_text("zip")
    again = tmp_path / "ansible-local-2"
    again.mkdir()
    assert cache.share(str(base), str(again), str(collection)) == target
    assert (again / "ansiballz_cache" / "payload").read_text() == "zip"
    # five stale keys: the newest KEEP folders stay, older ones go once unused for an hour
    hour_ago = time.time() - 7200
    for index in range(5):
        stale = base / ("stale%d" % index)
        stale.mkdir()
        os.utime(stale, (hour_ago + index, hour_ago + index))
    cache.prune(str(base), cache.KEEP)
    assert sorted(p.name for p in base.iterdir()) == sorted([os.path.basename(target), "stale4", "stale3", "stale2"])
