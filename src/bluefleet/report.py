"""``bluefleet report RUN_DIR``: the run folder of ``bluefleet run`` as report.html, report.md, report.json.

    bluefleet report runs/20261202T140000Z                  # compares with the newest earlier run next to it
    bluefleet report runs/20261202T140000Z --previous runs/20261201T090000Z
    bluefleet report runs/20261202T140000Z --markdown       # also print the Markdown summary (CI logs)

Prints the path of report.html last. Exit codes: 0 written, 2 not a run folder or bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bluefleet.report_model import ReportError, build_model
from bluefleet.report_render import render_html, render_markdown


def write_report(run_dir: Path, previous: Path | None = None) -> dict[str, Path]:
    """Build the model and write the three files; returns their paths."""
    run_dir = Path(run_dir)
    model = build_model(run_dir, previous)
    paths = {"html": run_dir / "report.html", "md": run_dir / "report.md", "json": run_dir / "report.json"}
    paths["json"].write_text(json.dumps(model, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    paths["html"].write_text(render_html(model), encoding="utf-8")
    paths["md"].write_text(render_markdown(model, str(paths["html"])), encoding="utf-8")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bluefleet report", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a run folder written by `bluefleet run`")
    parser.add_argument("--previous", type=Path, default=None,
                        help="the run to compare with (default: the newest earlier run folder next to RUN_DIR)")
    parser.add_argument("--markdown", action="store_true", help="print the Markdown summary too")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    if args.previous is not None and not (args.previous / "report.json").is_file():
        print("bluefleet report: --previous %s holds no report.json; give an earlier run folder that was reported"
              % args.previous, file=sys.stderr)
        return 2
    try:
        paths = write_report(args.run_dir, args.previous)
    except ReportError as exc:
        print("bluefleet report: %s" % exc, file=sys.stderr)
        return 2
    if args.markdown:
        print(paths["md"].read_text(encoding="utf-8"))
    print(paths["html"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
