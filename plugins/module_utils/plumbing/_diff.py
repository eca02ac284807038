# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Before/after comparison shared by the bluefleet modules.

``changed_keys(before, after)`` names what differs (dotted paths for nested dicts);
``make_diff(before, after)`` builds the ``diff`` dict Ansible prints with ``--diff``.
Comparison is plain equality of JSON-like data; a key present on one side only counts as changed.
"""

from __future__ import annotations


def changed_keys(before, after, prefix=""):
    """Sorted dotted paths of the keys whose values differ between two dicts (nested dicts recurse)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        raise TypeError("changed_keys compares two dicts, got %s and %s"
                        % (type(before).__name__, type(after).__name__))
    out = []
    for key in sorted(set(before) | set(after), key=str):
        path = "%s%s" % (prefix, key)
        old = before.get(key, _ABSENT)
        new = after.get(key, _ABSENT)
        if isinstance(old, dict) and isinstance(new, dict):
            out.extend(changed_keys(old, new, path + "."))
        elif old is _ABSENT or new is _ABSENT or old != new:
            out.append(path)
    return out


def make_diff(before, after, before_header=None, after_header=None):
    """The Ansible ``diff`` dict: ``{"before": ..., "after": ...}`` plus headers when given."""
    diff = {"before": before, "after": after}
    if before_header is not None:
        diff["before_header"] = before_header
    if after_header is not None:
        diff["after_header"] = after_header
    return diff


class _Absent:
    __slots__ = ()

    def __repr__(self):
        return "<absent>"


_ABSENT = _Absent()
