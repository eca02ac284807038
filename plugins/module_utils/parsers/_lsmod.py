# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``lsmod`` (kmod), whole or filtered through grep.

Layout (kmod tools/lsmod.c, read at kmod-project/kmod@19430f9e1e729b8a5d0e1031e873da42221058dc, and
the verbatim samples ``shared/corpus/lsmod/*``): the header ``Module                  Size  Used by``
(absent after a grep), then ``printf("%-19s %8ld  %d", name, size, refcnt)`` followed by the holders
as `` HOLDER1,HOLDER2``. kmod prints the refcount as a signed number (a negative value is an error
code from reading it): ``used_count`` is None then. A ``-`` count or ``[word]`` suffixes (other
lsmod implementations) are accepted defensively, not seen in the corpus.

Lines that are not a module row (prompts pasted with a grep) are ignored; text with no module row
at all is a ParseError naming its first line. Empty text (grep matched nothing) gives no modules.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
)

KIND = "lsmod"
_ROW_RE = LazyPattern(r"^(?P<name>[A-Za-z0-9_-]+)\s+(?P<size>\d+)\s+(?P<count>-|-?\d+)(?P<rest>(?:\s.*)?)$")


def parse_lsmod(text):
    lines = split_lines(text)
    modules = {}
    first_other = None
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.split() == ["Module", "Size", "Used", "by"]:
            continue
        match = _ROW_RE.match(stripped)
        if not match:
            if first_other is None:
                first_other = (number, line)
            continue
        used_by, flags = [], []
        for word in match.group("rest").split():
            if word.startswith("[") and word.endswith("]"):
                flags.append(word[1:-1])
            else:
                used_by.extend(user for user in word.split(",") if user)
        count = match.group("count")
        modules[match.group("name")] = {
            "size": int(match.group("size")),
            "used_count": None if count == "-" or int(count) < 0 else int(count),
            "used_by": used_by,
            "flags": flags,
        }
    if not modules and first_other is not None:
        raise ParseError(KIND, "no 'NAME SIZE COUNT [USERS]' module line (lsmod output expected)", *first_other)
    return {"modules": modules}


PARSERS = {KIND: parse_lsmod}
