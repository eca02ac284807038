# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``mlxprivhost -d DEV q`` / ``mstprivhost``. Kind: ``mlxprivhost-query``.

Layout: shared/corpus/mlxprivhost/FORMAT-from-source.md (mstflint mlxconfig/mstprivhost.py):
a title (``Host configurations``; ``Current device configurations:`` before 2021) underlined
with dashes, ``%-30s: %s`` lines (``level``, ``host index`` with ``--full``), a second titled
block ``Port functions status:`` with ``disable_*`` flags. With ``--full`` on multi-host devices
each value is printed once per host in 13-wide columns; those values are also split into lists.
Values stay text (``PRIVILEGED``, ``RESTRICTED``, ``TRUE``, ``FALSE``).
No verbatim RESTRICTED capture exists in the corpus; the word comes from the tool's source.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    no_structure,
    snake,
    split_lines,
)

KIND = "mlxprivhost-query"
_KV_RE = LazyPattern(r"^(?P<key>[A-Za-z_][A-Za-z0-9_ ]*?)\s*:\s*(?P<value>\S.*?)\s*$")
_TITLE_RE = LazyPattern(r"^[A-Za-z][A-Za-z ]*:?\s*$")


def parse_mlxprivhost_query(text):
    lines = split_lines(text)
    sections = {}
    section = None
    result_words = []
    errors = []
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line or set(line) <= {"-"}:
            continue
        if line.startswith("-E-"):
            errors.append(line[3:].strip())
            continue
        match = _KV_RE.match(line)
        if match:
            if section is None:
                section = "host_configurations"
                sections.setdefault(section, {})
            sections[section][snake(match.group("key"))] = " ".join(match.group("value").split())
            continue
        if line in ("Done!", "Failed", "Failed!"):
            result_words.append(line)
            continue
        if _TITLE_RE.match(line):
            title = snake(line)
            if title in ("current_device_configurations", "host_configurations"):
                title = "host_configurations"  # the title was renamed in 2021; same block
            section = title
            sections.setdefault(section, {})
            continue
        raise ParseError(KIND, "expected 'name : value' lines under a title", index + 1, raw)
    host = sections.get("host_configurations", {})
    if "level" not in host and not errors:
        raise no_structure(KIND, lines, "a 'level : PRIVILEGED|RESTRICTED' line")
    level_text = host.get("level")
    levels = level_text.split() if level_text else []
    ports = sections.get("port_functions_status", {})
    return {
        "level": levels[0] if levels else None,
        "levels": levels,
        "host_index": host.get("host_index"),
        "port_functions": ports,
        "fields": host,
        "sections": sections,
        "result": result_words[-1] if result_words else None,
        "errors": errors,
    }


PARSERS = {KIND: parse_mlxprivhost_query}
