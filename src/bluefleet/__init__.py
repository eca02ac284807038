"""bluefleet: command line around the bluefleet.dpu collection (parse, capture, run, report, lab)."""

__version__ = "0.1.0"
