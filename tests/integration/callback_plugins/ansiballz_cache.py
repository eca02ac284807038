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

Bytecode: the target's Python imports a payload with ``zipimport``, which never writes bytecode, so every module
run compiles ``ansible.module_utils.basic`` and everything else it imports from source again (about 0.1 CPU-s of
the 0.25 a bluefleet module run costs here). Once a payload is in the cache, the first task that starts after it
adds, beside each ``.py`` of its zip, the ``.pyc`` that file compiles to: PEP 552 *checked* hash-based bytecode,
so ``zipimport`` hashes the ``.py`` beside it and uses the ``.pyc`` only when it was compiled from exactly that
source, and falls back to the source where the target's Python is another version (another magic number). The
code that runs is the same; what differs is the file name a traceback shows (``/ansiballz-bytecode/<path in the
payload>`` instead of the payload's temporary path, which is not known when the bytecode is made).

Enabled by tests/integration/conftest.py (``ansible_env``); ``bench/`` and users' runs do not load it.
"""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import hashlib
import importlib.util
import io
import marshal
import os
import pickle
import shutil
import sys
import time
import zipfile

from ansible import constants as C
from ansible import release
from ansible.plugins.callback import CallbackBase

COLLECTION = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SOURCES = ("plugins/modules", "plugins/module_utils")
KEEP = 4  # cache folders kept, newest first: the others go once an hour has passed since their last use
BYTECODE_NAME = "/ansiballz-bytecode/"  # the file name prefix of the bytecode's code objects (tracebacks show it)
MARK = ".bytecode"  # beside a cached payload whose zip has its bytecode
_NOT_PAYLOADS = (".lock", "-part", MARK, ".tmp")


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


def add_bytecode(zip_bytes):
    """The payload zip with, beside each ``.py``, the checked hash-based ``.pyc`` it compiles to (PEP 552).

    Compiled as ``zipimport`` compiles a source (line endings normalised, no inherited ``__future__`` flags,
    asserts kept); a source that does not compile gets no ``.pyc``, so the module run reports its error as before.
    """
    source = zipfile.ZipFile(io.BytesIO(zip_bytes))
    names = set(source.namelist())
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            target.writestr(info, data)
            if not info.filename.endswith(".py") or info.filename + "c" in names:
                continue
            text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            try:
                code = compile(text, BYTECODE_NAME + info.filename, "exec", dont_inherit=True, optimize=0)
            except (SyntaxError, ValueError):
                continue
            pyc = zipfile.ZipInfo(info.filename + "c", date_time=info.date_time)
            pyc.compress_type = info.compress_type
            pyc.external_attr = info.external_attr
            target.writestr(pyc, importlib.util.MAGIC_NUMBER + (0b11).to_bytes(4, "little")
                            + importlib.util.source_hash(data) + marshal.dumps(code))
    return out.getvalue()


def compile_payloads(folder, done):
    """Add bytecode to every payload in ``folder`` that has none yet (``done``: names already seen by this run).

    Under ansible-core's own lock of each payload; the payload is replaced by a rename, so a run reading it gets
    the old or the new one whole. A mark file beside it tells the other runs it is done.
    """
    from ansible.executor.module_common import _CachedModule  # the cache's own format (ansible-core 2.19)

    names = set(os.listdir(folder))
    for name in names:
        if name in done or name.endswith(_NOT_PAYLOADS):
            continue
        done.add(name)
        if name + MARK in names:
            continue
        path = os.path.join(folder, name)
        with open(path + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if os.path.exists(path + MARK):
                continue
            cached = _CachedModule.load(path)
            zip_bytes = add_bytecode(base64.b64decode(cached.zip_data))
            temp = "%s.%d.tmp" % (path, os.getpid())
            with open(temp, "wb") as handle:  # pickled as _CachedModule.dump does, under a name of this run's
                pickle.dump(dataclasses.replace(cached, zip_data=base64.b64encode(zip_bytes)), handle)
            os.replace(temp, path)
            with open(path + MARK, "w"):
                pass


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "ansiballz_cache"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super().__init__(display)
        self._folder = None  # the key's folder, when the cache is in use
        self._done = set()  # payloads of that folder this run has seen with their bytecode
        base = os.environ.get("BLUEFLEET_TEST_ANSIBALLZ_CACHE")
        if not base:
            return
        try:
            os.makedirs(base, exist_ok=True)
            self._folder = share(base, C.DEFAULT_LOCAL_TMP)
        except OSError as exc:  # a cache that cannot be used costs speed only: the run builds its own payloads
            self._display.warning("ansiballz_cache: %s is not usable (%s); this run builds its own payloads"
                                  % (base, exc))

    def _compile(self):
        """The payloads built so far get their bytecode (a worker builds a payload in a task; this runs in the
        controller's main process before the next task)."""
        if self._folder is None:
            return
        try:
            compile_payloads(self._folder, self._done)
        except Exception as exc:  # pylint: disable=broad-except  # bytecode costs speed only: payloads stay as built
            self._display.warning("ansiballz_cache: no bytecode added to the payloads in %s (%s: %s)"
                                  % (self._folder, type(exc).__name__, exc))
            self._folder = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._compile()

    def v2_playbook_on_handler_task_start(self, task):
        self._compile()
