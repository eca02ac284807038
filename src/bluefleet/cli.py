"""The ``bluefleet`` command: one sub-command per module of this package.

Each sub-command lives in ``bluefleet/<name>.py`` and exposes ``main(argv) -> int``;
this file only dispatches, so a newcomer finds ``bluefleet lab`` in ``lab.py``.
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "parse": ("bluefleet.parse", "read one tool's output and print it as JSON"),
    "capture": ("bluefleet.capture", "save a real machine's read-only tool outputs for dpusim replay"),
    "lab": ("bluefleet.lab", "build the images and run the container lab (up, down, status, summary, images)"),
    "sim": ("bluefleet.sim", "create the device-twin roots of a simulated fleet (sim init -i INVENTORY)"),
    "ee": ("bluefleet.ee", "build the execution environment image for AWX (ee build [--sim])"),
    "run": ("bluefleet.run", "run site.yml (or a stage) through ansible-runner"),
    "report": ("bluefleet.report", "render a run folder as HTML, Markdown and JSON"),
}


def usage() -> str:
    lines = ["usage: bluefleet COMMAND [ARGS...]", "", "commands:"]
    lines += ["  %-8s %s" % (name, text) for name, (_, text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print("bluefleet: unknown command %r\n\n%s" % (name, usage()), file=sys.stderr)
        return 2
    module_name = COMMANDS[name][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        print("bluefleet %s: not available in this version" % name, file=sys.stderr)
        return 2
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
