"""``bluefleet parse KIND [FILE|-]``: read one tool's output and print the parsed data as JSON.

The parsers are the collection's own (``plugins/module_utils/parsers/_*.py``); every module there
that defines ``PARSERS = {"kind": function}`` is picked up, so a new parser needs no change here.
Contract: ``docs/parse-contract.md`` (exit 0 and JSON on stdout; exit 2 and one line on stderr).

A capture saved with a provenance header (lines starting ``# command:`` ... up to ``# ---``,
as in the fixtures and the corpus) is accepted as is: the header is dropped before parsing.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys

from bluefleet._collection import ensure_importable

PACKAGE = "ansible_collections.bluefleet.dpu.plugins.module_utils.parsers"
HEADER_END = "# ---"

USAGE = """usage: bluefleet parse KIND [FILE|-]
       bluefleet parse --list

Read the output of one tool (FILE, or standard input when FILE is '-' or absent) and print
the parsed data as JSON. Exit 0 on success, 2 when the output cannot be parsed."""


def discover_parsers() -> dict:
    """All kinds the collection's module_utils register: ``{kind: function}``.

    Raises RuntimeError when two modules claim the same kind (a packaging bug).
    """
    ensure_importable()
    package = importlib.import_module(PACKAGE)
    found: dict = {}
    owner: dict = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.name.startswith("_") or info.ispkg:
            continue
        module = importlib.import_module(f"{PACKAGE}.{info.name}")
        parsers = getattr(module, "PARSERS", None)
        if not isinstance(parsers, dict):
            continue
        for kind, function in parsers.items():
            if kind in found:
                raise RuntimeError(f"parser kind {kind!r} is defined twice: in {owner[kind]} and {info.name}")
            found[kind] = function
            owner[kind] = info.name
    return found


def strip_header(text: str) -> str:
    """Drop a provenance header (``# command: ...`` lines up to and including ``# ---``).

    Text that does not start with ``# command:`` is returned unchanged, so real tool
    output is never touched.
    """
    if not text.startswith("# command:"):
        return text
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.rstrip("\r\n") == HEADER_END:
            return "".join(lines[index + 1 :])
    return text


def _read(source: str) -> str:
    if source == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(source, "rb") as handle:
            data = handle.read()
    # Tool output is ASCII in practice; never fail on a stray byte, the parser judges the text.
    return data.decode("utf-8", errors="replace")


def _err(message: str) -> int:
    print("bluefleet parse: {}".format(" ".join(str(message).split())), file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    try:
        parsers = discover_parsers()
    except Exception as exc:  # a broken parser module must not print a traceback
        return _err(f"cannot load the parsers: {type(exc).__name__}: {exc}")
    if argv == ["--list"]:
        for kind in sorted(parsers):
            print(kind)
        return 0
    if not argv or len(argv) > 2 or argv[0].startswith("-") and argv[0] != "-":
        return _err("expected KIND [FILE|-] or --list, got {!r}; run 'bluefleet parse --help'".format(" ".join(argv)))
    kind = argv[0]
    source = argv[1] if len(argv) == 2 else "-"
    if kind not in parsers:
        return _err(f"unknown kind {kind!r}; run 'bluefleet parse --list' for the kinds this version reads")
    try:
        text = _read(source)
    except OSError as exc:
        return _err(f"cannot read {source}: {exc.strerror or exc}")
    # importable only after ensure_importable() (called by discover_parsers above)
    from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError  # noqa: PLC0415

    try:
        data = parsers[kind](strip_header(text))
    except ParseError as exc:
        return _err(str(exc))
    except Exception as exc:  # a bug in a parser: still one line, and say so
        return _err(
            f"cannot parse {kind} output: internal parser error {type(exc).__name__}: {exc} "
            "(this is a bug in bluefleet; please report it with the input)"
        )
    try:
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `bluefleet parse ... | head`: the reader left, that is not an error
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
