"""Every fixture under ``tests/unit/fixtures/parsers/<kind>/`` parses to the data in the JSON next to it.

A fixture is a real capture copied unchanged from ``shared/corpus`` (provenance header
included, ended by ``# ---``) and ``<same-name>.json`` with the expected data, written by
reading the sample. Besides the file as stored, each fixture is parsed in the layouts other
copies of the same output come in (CRLF, tabs expanded, trailing spaces stripped or added,
with and without the final newline): all must give the same data.

A kind registered by a parser with no fixture fails ``test_every_kind_has_a_fixture``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bluefleet.parse import HEADER_END, discover_parsers, strip_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsers"
PARSERS = discover_parsers()


def _fixture_files():
    return sorted(FIXTURES.glob("*/*.txt"))


def _body(path: Path) -> str:
    return strip_header(path.read_text(encoding="utf-8"))


def _no_final_newline(text):
    return text[:-1] if text.endswith("\n") else text


def _final_newline(text):
    return text if text.endswith("\n") else text + "\n"


def _strip_trailing(text):
    return "\n".join(line.rstrip() for line in text.split("\n"))


def _pad_trailing(text):
    return "\n".join(line + "   " if line.strip() else line for line in text.split("\n"))


_EIGHT_SPACES = re.compile(r"^((?:        )+)")


def _leading_tabs(text):
    """The reverse of a copy that expanded tabs: each leading run of 8 spaces becomes a tab (``unexpand``)."""
    lines = text.split("\n")
    return "\n".join(_EIGHT_SPACES.sub(lambda m: "\t" * (len(m.group(1)) // 8), line) for line in lines)


VARIANTS = {
    "as-stored": lambda text: text,
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "no-final-newline": _no_final_newline,
    "final-newline": _final_newline,
    "trailing-space-stripped": _strip_trailing,
    "trailing-space-added": _pad_trailing,
    "tabs-expanded": lambda text: text.expandtabs(8),
    "leading-tabs": _leading_tabs,
}


def _cases():
    cases = []
    for path in _fixture_files():
        body = _body(path)
        for name, variant in VARIANTS.items():
            if name in ("tabs-expanded", "leading-tabs") and variant(body) == body:
                continue  # the same text as "as-stored": not a separate case
            cases.append(pytest.param(path, name, id=f"{path.parent.name}/{path.stem}[{name}]"))
    return cases


@pytest.mark.parametrize(("path", "variant"), _cases())
def test_fixture_parses_to_expected(path, variant):
    kind = path.parent.name
    assert kind in PARSERS, f"fixture folder {kind} names no registered parser kind"
    expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    got = PARSERS[kind](VARIANTS[variant](_body(path)))
    assert json.loads(json.dumps(got)) == expected


def test_every_kind_has_a_fixture():
    have = {path.parent.name for path in _fixture_files()}
    missing = sorted(set(PARSERS) - have)
    assert not missing, "parser kinds with no fixture in {}: {}".format(FIXTURES, ", ".join(missing))


def test_every_fixture_folder_is_a_kind():
    folders = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    unknown = [name for name in folders if name not in PARSERS]
    assert not unknown, "fixture folders that name no parser kind: {}".format(", ".join(unknown))


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixture_is_complete(path):
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    assert lines[0].startswith("# command:"), f"{path}: the provenance header must come first"
    assert HEADER_END in lines, f"{path}: the provenance header must end with a '# ---' line"
    assert any(line.startswith("# source:") for line in lines[: lines.index(HEADER_END)]), f"{path}: no source"
    assert path.with_suffix(".json").is_file(), f"{path}: no expected-data JSON next to it"
    assert strip_header(text) != text
