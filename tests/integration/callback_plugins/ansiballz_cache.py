"""Keep Ansible's AnsiballZ payloads from one ansible-playbook run to the next (the integration tests only).

ansible-core builds each module's payload (the module and every module_utils it imports, found by
``recursive_finder``) once per run, in the run's own temporary folder (``C.DEFAULT_LOCAL_TMP/ansiballz_cache``),
and removes it at the end: the first task of each module costs its worker about 0.15 CPU-s more than the later
ones. The integration tests start a few hundred runs of the same modules. This callback makes that folder a link
to ``$BLUEFLEET_TEST_ANSIBALLZ_CACHE/<key>``, where the key is a digest of everything a payload is built from:
the Python and ansible-core versions, the ``ansible`` package's, the collection's path, and the content of every
file under its ``plugins/modules`` and ``plugins/module_utils``. An edit to any of them gives a new key, so a run
never gets a payload built from other sources. ansible-core's own lock and rename keep concurrent runs apart,
and the end of a run removes the link, not the folder it points to.

Enabled by tests/integration/conftest.py (``ansible_env``); ``bench/`` and users' runs do not load it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time

from ansible import constants as C
from ansible import release
from ansible.plugins.callback import CallbackBase

COLLECTION = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SOURCES = ("plugins/modules", "plugins/module_utils")
KEEP = 4  # cache folders kept, newest first: the others go once an hour has passed since their last use


def _package_version(name):
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python 3.8+ has it
        return "unknown"
    try:
        return version(name)
    except PackageNotFoundError:
        return "none"


def cache_key(collection=COLLECTION):
    """Digest of what the payloads of this collection's modules (and ansible-core's) are built from."""
    digest = hashlib.sha256()
    for part in (sys.version, release.__version__, _package_version("ansible"), os.path.dirname(release.__file__),
                 collection):
        digest.update(part.encode("utf-8") + b"\0")
    for source in SOURCES:
        top = os.path.join(collection, source)
        for folder, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, collection).encode("utf-8") + b"\0")
                with open(path, "rb") as handle:
                    digest.update(handle.read())
                digest.update(b"\0")
    return digest.hexdigest()[:20]


def prune(base, keep, now=None):
    """Remove cache folders beyond the ``keep`` most recently used, when unused for an hour."""
    now = time.time() if now is None else now
    entries = []
    for name in os.listdir(base):
        path = os.path.join(base, name)
        if os.path.isdir(path) and not os.path.islink(path):
            entries.append((os.stat(path).st_mtime, path))
    for mtime, path in sorted(entries, reverse=True)[keep:]:
        if now - mtime > 3600:
            shutil.rmtree(path, ignore_errors=True)


def share(base, local_tmp, collection=COLLECTION):
    """Make ``local_tmp/ansiballz_cache`` a link to this key's folder under ``base``; the folder used."""
    target = os.path.join(base, cache_key(collection))
    os.makedirs(target, exist_ok=True)
    os.utime(target)  # its last use, for prune
    link = os.path.join(local_tmp, "ansiballz_cache")
    if not os.path.lexists(link):  # nothing built in this run yet (callbacks load before the first task)
        os.symlink(target, link)
    prune(base, KEEP)
    return target


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "ansiballz_cache"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super().__init__(display)
        base = os.environ.get("BLUEFLEET_TEST_ANSIBALLZ_CACHE")
        if not base:
            return
        try:
            os.makedirs(base, exist_ok=True)
            share(base, C.DEFAULT_LOCAL_TMP)
        except OSError as exc:  # a cache that cannot be used costs speed only: the run builds its own payloads
            self._display.warning("ansiballz_cache: %s is not usable (%s); this run builds its own payloads"
                                  % (base, exc))
