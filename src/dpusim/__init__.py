"""dpusim: a stateful twin of BlueField and ConnectX cards whose tools answer like the real ones."""

__version__ = "0.1.0"
