# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The version lines of the vendor and system tools (``--version`` / ``--help`` first lines). Kind: ``tool-version``.

One file for the version line of several tools, since each is one line and the tool parsers read other output.
Layouts (recorded on Debian 12 for issue 18, and from the corpus):

* ``mstflint, mstflint 4.21.0, Git SHA Hash: N/A`` (``mstflint --version``; ``mstconfig`` the same with its name),
  ``mstfwreset 1.0.0, mstflint 4.21.0, built on Aug 17 2022, 09:12:52. Git SHA Hash: N/A``;
* ``flint, mft 4.30.1-8, built on ...`` (MFT; corpus/mlxup "MFT Version : mft 4.30.1-8" names the same package);
* ``strongSwan 5.9.8 swanctl`` (first line of ``swanctl --help``; ``swanctl --version`` asks the daemon), NVIDIA's
  BlueField build ``5.9.10bf`` style suffixes kept in ``raw``;
* ``Linux strongSwan 5.9.8`` (``charon --version``);
* ``nftables v1.0.6 (Lester Gooch #5)`` (``nft --version``, recorded on Debian 12).
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern, ParseError

KIND = "tool-version"
_PATTERNS = (
    ("mstflint", LazyPattern(r"\bmstflint (?P<version>\d+(?:\.\d+)+(?:-\d+)?)")),
    ("mft", LazyPattern(r"\bmft (?P<version>\d+(?:\.\d+)+(?:-\d+)?)")),
    ("strongswan", LazyPattern(r"\bstrongSwan (?P<version>\d+(?:\.\d+)+)(?P<suffix>\S*)")),
    ("nftables", LazyPattern(r"^nftables v(?P<version>\d+(?:\.\d+)+)")),
)


def parse_tool_version(text):
    """``{"package": "mstflint"|"mft"|"strongswan"|"nftables", "version": "4.21.0", "numbers": [4, 21, 0],
    "raw": line}``."""
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        for package, pattern in _PATTERNS:
            match = pattern.search(line)
            if match:
                version = match.group("version")
                numbers = [int(part) for part in re.split(r"[.-]", version)]
                return {"package": package, "version": version, "numbers": numbers, "raw": line}
        raise ParseError(KIND, "expected 'mstflint X.Y.Z', 'mft X.Y.Z', 'strongSwan X.Y.Z' or 'nftables vX.Y.Z' in "
                         "the first line", 1, line)
    raise ParseError(KIND, "no output", 1, "")


def at_least(numbers, minimum):
    """``numbers`` (from parse_tool_version) >= ``minimum`` (a tuple), comparing the leading fields."""
    return tuple(numbers[:len(minimum)]) >= tuple(minimum)


PARSERS = {KIND: parse_tool_version}
