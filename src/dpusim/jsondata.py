"""Deep copies of the twin's state: JSON-shaped data (dicts, lists and immutable scalars).

``copy.deepcopy`` does the same for this data but its import (``copy``, ``weakref``) is paid by every tool call,
which is a process of its own; this is the part of it the state needs.
"""

from __future__ import annotations


def clone(value):
    """A deep copy of ``value``: dicts and lists are copied all the way down, tuples too (a tuple of lists would
    otherwise share them); everything else (str, int, float, bool, None) is immutable and shared."""
    if isinstance(value, dict):
        return {key: clone(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clone(item) for item in value]
    if isinstance(value, tuple):
        return tuple(clone(item) for item in value)
    return value
