"""dpusim.jsondata.clone: the twin state's deep copy, the same as copy.deepcopy for JSON-shaped data."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from dpusim.jsondata import clone

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=4)
                    | st.tuples(inner, inner), max_leaves=30)


@given(JSON)
def test_clone_equals_deepcopy_and_shares_no_container(value):
    copied = clone(value)
    assert copied == copy.deepcopy(value)

    def containers(v):
        if isinstance(v, dict):
            yield v
            for item in v.values():
                yield from containers(item)
        elif isinstance(v, list | tuple):
            if isinstance(v, list):
                yield v
            for item in v:
                yield from containers(item)

    originals = {id(c) for c in containers(value)}
    assert not originals & {id(c) for c in containers(copied)}


def test_a_change_to_the_copy_leaves_the_original():
    data = {"cards": [{"firmware": {"banks": [{"version": "32.41.1000"}]}}], "pair": ("a", ["b"])}
    copied = clone(data)
    copied["cards"][0]["firmware"]["banks"][0]["version"] = "32.43.1014"
    copied["pair"][1].append("c")
    assert data == {"cards": [{"firmware": {"banks": [{"version": "32.41.1000"}]}}], "pair": ("a", ["b"])}
