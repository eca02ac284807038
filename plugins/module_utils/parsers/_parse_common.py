# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared pieces of the pure parsers: the one error type they raise, small text helpers and ``LazyPattern``.

Every parser in this folder takes the text a tool printed and returns plain data
(dicts, lists, str, int, bool, None). Parsers never do I/O and never import
AnsibleModule; modules call them and turn ParseError into fail_json.
"""

from __future__ import annotations

import re


class ParseError(ValueError):
    """Raised by every parser for output it cannot read.

    ``kind`` names the parser (as in ``bluefleet parse --list``), ``line_no`` is
    1-based (0 when the problem is the text as a whole) and ``line`` is the text
    of that line.
    """

    def __init__(self, kind, reason, line_no=0, line=None):
        self.kind = kind
        self.reason = reason
        self.line_no = line_no
        self.line = line
        where = ""
        if line_no:
            where = f" at line {line_no}"
            if line is not None:
                where += f" ({line[:120]!r})"
        super().__init__(f"cannot parse {kind} output{where}: {reason}")


class LazyPattern:
    """A regular expression compiled when it is first used, not when its module is imported.

    Every module run is a fresh process that imports its code from the AnsiballZ zip, so a module-level
    ``re.compile`` runs on every run, also for the patterns that run never uses (the parsers of the sections not
    asked for, the layouts the tool did not print). ``LazyPattern(pattern, flags)`` stands where
    ``re.compile(pattern, flags)`` stood: the first use of an attribute (``match``, ``search``, ``sub``, ...)
    compiles the pattern with ``re.compile`` (once) and keeps that attribute of the compiled pattern on this object,
    so a later use costs what it costs on the compiled pattern. A pattern that does not compile raises ``re.error`` at
    its first use.
    """

    def __init__(self, pattern, flags=0):
        self._source = (pattern, flags)

    def __getattr__(self, name):
        # only for names not on the object yet; private names (copy, pickle probing) are not the pattern's
        if name.startswith("_"):
            raise AttributeError(name)
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self._compiled = re.compile(*self._source)
        value = getattr(compiled, name)
        setattr(self, name, value)
        return value

    def __repr__(self):
        return "LazyPattern(%r, %r)" % self._source


def split_lines(text):
    """Lines of ``text`` without line endings; accepts \\n and \\r\\n, with or without a final newline."""
    if not isinstance(text, str):
        raise TypeError(f"parsers take str, got {type(text).__name__}")
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


_INT_RE = LazyPattern(r"^-?[0-9]+$")


def is_count(value):
    """``value`` is a plain count: ASCII digits only (``str.isdigit`` also takes ``"²"``, which ``int`` refuses)."""
    return value.isascii() and value.isdigit()


def to_int(value):
    """``"42"`` -> 42; anything that is not plainly an integer is returned unchanged."""
    if isinstance(value, str) and _INT_RE.match(value.strip()):
        return int(value.strip())
    return value


_SNAKE_RE = LazyPattern(r"[^0-9a-zA-Z]+")


def snake(label):
    """A printed label as a snake_case key: ``"Base GUID"`` -> ``"base_guid"``, ``"FW Version(Running)"`` ->
    ``"fw_version_running"``."""
    return _SNAKE_RE.sub("_", label).strip("_").lower()


def first_content_line(lines):
    """``(line_no, line)`` of the first non-blank line (1-based), or ``(0, None)`` when all are blank.

    For errors about text as a whole ("no recognisable structure"): name where it starts.
    """
    for index, line in enumerate(lines):
        if line.strip():
            return index + 1, line
    return 0, None


def no_structure(kind, lines, expected):
    """The ParseError for text a parser found nothing it knows in; ``expected`` says what it looked for."""
    line_no, line = first_content_line(lines)
    if not line_no:
        return ParseError(kind, f"the text is empty; expected {expected}")
    return ParseError(kind, f"no recognisable {kind} output; expected {expected}", line_no, line)
