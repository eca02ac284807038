# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a bluefleet module reads and writes files.

- ``read_text(path)``: the file's text, or None when it does not exist.
- ``write_file(path, content, mode=0o644)``: replace a regular file atomically. The new content goes to a
  temporary file in the same directory, is flushed and fsync'ed, gets the mode (and, where allowed, the
  owner and group) of the file it replaces, or ``mode`` for a new file, and is renamed over the target with
  ``os.replace`` (a reader sees the old file or the new one, never half of one). Returns True when the
  content changed, False (and writes nothing) when the file already holds ``content``.
- ``write_concatenation(path, sources, mode=0o600)``: atomically make ``path`` hold the files ``sources``
  one after the other, streamed (for images too large to hold in memory, a BFB with its bf.cfg appended).
- ``write_attribute(path, text)``: write a kernel attribute (``/sys/...``) in place. Such files cannot be
  renamed over; the kernel takes the value from one ``write()``.
- ``octal_mode(value, what)``: a file mode as users give it (``'0644'``, or YAML's 0644 read as the int 420) -> int;
  ValueError naming ``what`` otherwise.
- ``missing_folders(path, root="/")``: the folders above ``path`` that do not exist (to create before a write), or
  NotADirectoryError naming the one that is a file.
- ``write_link(path, target)``: atomically make ``path`` a symbolic link to ``target`` (a new link under a
  temporary name, renamed over ``path``). Returns True when it changed, False when ``path`` already is that link.
- ``file_state(root, path)``: what the ``files`` module compares, read without the content leaving the machine:
  ``link`` (the target of a symbolic link, else None), ``file`` (a regular file there, links followed), its
  ``sha256`` and ``mode`` (an octal string). ``path`` is as the machine sees it, under ``root``.

Check mode is the caller's business: a module in check mode does not call the writers.
OSError propagates; the module turns it into its own ``"write <what> failed: ..."`` message.
No AnsibleModule import.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tempfile

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern

_OCTAL = LazyPattern(r"^0?[0-7]{3,4}$")


def read_text(path, errors="strict"):
    """Text of ``path`` (UTF-8), or None when it does not exist."""
    try:
        with open(path, encoding="utf-8", errors=errors) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_file(path, content, mode=0o644, makedirs=False, dir_mode=0o755):
    """Atomically make ``path`` hold ``content`` (str or bytes); True when it changed.

    ``mode`` applies to a new file only; an existing file keeps its mode, owner and group.
    ``makedirs``: create missing parent directories (``dir_mode``) first.
    """
    data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", path)
        with open(path, "rb") as handle:
            if handle.read() == data:
                return False
    folder = os.path.dirname(os.path.abspath(path))
    if makedirs:
        os.makedirs(folder, mode=dir_mode, exist_ok=True)

    def finish(tmp):
        if st is None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            _keep_owner(tmp, st)

    _replace(path, folder, lambda handle: handle.write(data), finish)
    return True


def octal_mode(value, what):
    """An octal mode string ('0644') or an int (YAML's 0644 arrives as 420) -> int; ValueError otherwise."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 0o7777:
        return value
    if isinstance(value, str) and _OCTAL.match(value.strip()):
        return int(value.strip(), 8)
    raise ValueError("%s %r is not a mode; give it as an octal string such as '0644'" % (what, value))


def missing_folders(path, root="/"):
    """The folders above ``path`` that do not exist, outermost first, up to ``root`` (not included); NotADirectoryError
    (its ``filename`` the folder) when one of them is a file."""
    out = []
    folder = os.path.dirname(path)
    top = os.path.abspath(root)
    while folder and os.path.abspath(folder) != top and not os.path.isdir(folder):
        if os.path.lexists(folder):
            raise NotADirectoryError(errno.ENOTDIR, "a file where a directory is needed", folder)
        out.insert(0, folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return out


def write_concatenation(path, sources, mode=0o600):
    """Atomically make ``path`` hold the content of the files ``sources``, in order, copied in 1 MiB blocks.

    Always writes (no comparison with the old content); ``mode`` applies to the new file.
    """

    def fill(handle):
        for source in sources:
            with open(source, "rb") as part:
                for block in iter(lambda: part.read(1 << 20), b""):
                    handle.write(block)

    _replace(path, os.path.dirname(os.path.abspath(path)), fill, lambda tmp: os.chmod(tmp, mode))


def _replace(path, folder, fill, finish):
    """Write a temporary file in ``folder`` with ``fill(handle)``, flush and fsync it, ``finish(tmp_path)`` (mode,
    owner), rename it over ``path`` and fsync the folder; on any error the temporary file is removed."""
    fd, tmp = tempfile.mkstemp(prefix=".%s.bluefleet-" % os.path.basename(path), dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            fill(handle)
            handle.flush()
            os.fsync(handle.fileno())
        finish(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)


@contextlib.contextmanager
def scratch_file(content, name=""):
    """A temporary file holding ``content`` (bytes) for a command to read, such as a check of new content before
    it replaces a file (``validate``); removed when the block ends. Yields its path."""
    fd, tmp = tempfile.mkstemp(prefix=".bluefleet-scratch-", suffix=("-" + name) if name else "")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        yield tmp
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_attribute(path, text):
    """Write ``text`` to a kernel attribute file in place (one write, no temporary file)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_link(path, target):
    """Atomically make ``path`` a symbolic link to ``target``; True when it changed.

    A link, file or anything but a directory at ``path`` is replaced (IsADirectoryError for a directory).
    """
    if os.path.islink(path) and os.readlink(path) == target:
        return False
    if os.path.isdir(path) and not os.path.islink(path):
        raise IsADirectoryError(errno.EISDIR, "a directory, not a link", path)
    folder = os.path.dirname(os.path.abspath(path))
    for attempt in range(100):
        tmp = os.path.join(folder, ".%s.bluefleet-link-%d-%d" % (os.path.basename(path), os.getpid(), attempt))
        try:
            os.symlink(target, tmp)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "no free temporary name for the link", path)
    try:
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)
    return True


def _keep_owner(tmp, st):
    mine = os.stat(tmp)
    if (mine.st_uid, mine.st_gid) == (st.st_uid, st.st_gid):
        return
    try:
        os.chown(tmp, st.st_uid, st.st_gid)
    except PermissionError:
        # Only root may give a file away; a non-root writer keeps its own ownership, as Ansible's
        # atomic_move does.
        pass


def _fsync_dir(folder):
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def file_state(root, path):
    """The state the ``files`` module compares at ``path`` under ``root`` (see the module docstring)."""
    dest = os.path.join(root, os.path.normpath(path).lstrip("/"))
    out = {"link": os.readlink(dest) if os.path.islink(dest) else None, "file": False, "sha256": None, "mode": None}
    try:
        st = os.stat(dest)
    except FileNotFoundError:  # no file, or a dangling link
        return out
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256()
        with open(dest, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 16), b""):
                digest.update(block)
        out.update({"file": True, "sha256": digest.hexdigest(), "mode": "%04o" % stat.S_IMODE(st.st_mode)})
    return out
