# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ethtool -k IF`` (offload features), whole or filtered through grep.

Layout (ethtool source, netlink/features.c ``features_reply_cb`` / ``dump_feature``, read at
mkubecek/ethtool@a750c91f849b8a6f49e902a14558967ec4c55715; verbatim samples in
``shared/corpus/ethtool/*-k-grep-*``): a first line ``Features for IF:``, then one line per feature
``name: on|off`` with an optional suffix `` [fixed]``, `` [requested on]`` or `` [requested off]``;
features grouped under a legacy flag are printed after it with a TAB prefix (``sub_feature``).
``[not requested]`` only appears in the ``Actual changes:`` answer of ``ethtool -K``; accepted too.
The corpus has no full ``ethtool -k``
listing of an mlx5 port (see corpus INDEX gaps), only ``| grep esp`` captures.

Other lines (kernel log lines pasted next to a grep, prompts) are ignored; text with no feature
line at all is a ParseError naming its first line. Empty text (a grep that matched nothing) gives
no features.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
)

KIND = "ethtool-features"
_FEATURE_RE = LazyPattern(
    r"^(?P<indent>\s*)(?P<name>[a-z0-9][a-z0-9_-]*): (?P<state>on|off)"
    r"(?: \[(?P<note>fixed|requested on|requested off|not requested)\])?\s*$"
)
_HEADER_RE = LazyPattern(r"^Features for (?P<ifname>\S+):\s*$")


def parse_features(text):
    lines = split_lines(text)
    features = {}
    ifname = None
    first_other = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        header = _HEADER_RE.match(line)
        if header:
            ifname = header.group("ifname")
            continue
        match = _FEATURE_RE.match(line)
        if not match:
            if first_other is None:
                first_other = (number, line)
            continue
        note = match.group("note")
        requested = None
        if note and note.startswith("requested "):
            requested = note == "requested on"
        features[match.group("name")] = {
            "enabled": match.group("state") == "on",
            "fixed": note == "fixed",
            "requested": requested,
            "sub_feature": bool(match.group("indent")),
        }
    if not features and first_other is not None:
        raise ParseError(KIND, "no 'name: on|off' feature line (ethtool -k output expected)", *first_other)
    return {"interface": ifname, "features": features}


PARSERS = {KIND: parse_features}
