# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether ``ansible.builtin.lineinfile`` with only ``line`` (no ``regexp`` nor ``search_string``, ``create: true``,
``mode``) would change a file, shared by ``dpu_info`` (its section ``files`` with ``file_lines``: preflight's read) and
the filter ``bluefleet.dpu.lineinfile_plan`` (worked out on the controller from that read).

- ``holds_line(path, line)``: the file holds ``line`` as lineinfile leaves it alone - its last line equal to ``line``,
  the end of line aside, is ``line`` and the node's line separator (lineinfile rewrites such a line otherwise: one
  ending in CR LF, or the last line of a file without a final newline).
- ``line_changes(section, path, line, mode, root)``: ``[path]`` where lineinfile would write the file or its mode
  (missing, not a regular file or a symbolic link, without the line, another mode), ``[]`` where it changes nothing,
  or why the read does not tell (str).
"""

from __future__ import annotations

import os

from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import octal_mode


def holds_line(path, line):
    """See the module docstring; False for a file that cannot be read."""
    wanted = line.encode("utf-8", errors="surrogateescape")
    try:
        with open(path, "rb") as handle:
            lines = handle.readlines()
    except OSError:
        return False
    last = None
    for current in lines:
        if current.rstrip(b"\r\n") == wanted:
            last = current
    return last == wanted + os.linesep.encode()


def line_changes(section, path, line, mode, root="/"):
    """See the module docstring. ``section`` is dpu_info's ``files``; ``path`` as the machine sees it, under
    ``root``."""
    if not isinstance(section, dict) or not section.get("available"):
        return "the read has no files section"
    if os.path.normpath(section.get("root") or "/") != os.path.normpath(root or "/"):
        return "the files were read under %s, not %s" % (section.get("root"), root)
    state = (section.get("paths") or {}).get(path)
    if state is None or state.get("error"):
        return "%s was not read%s" % (path, (": " + state["error"]) if state else "")
    if "has_lines" not in state:
        return "%s was read without its lines (dpu_info's file_lines)" % path
    try:
        wanted = octal_mode(mode, "mode of %s" % path)
    except ValueError as exc:
        return str(exc)
    if state["link"] is not None or not state["file"] or line not in state["has_lines"] \
            or int(state["mode"], 8) != wanted:
        return [path]
    return []
