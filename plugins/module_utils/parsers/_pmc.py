# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for linuxptp ``pmc -u -b 0 'GET PORT_DATA_SET'`` (Firefly, the DOCA PTP service, runs ptp4l).

Layout: linuxptp pmc.c / pmc_common.c: ``sending: GET PORT_DATA_SET``; then for each responding port a line
``<clockIdentity>-<port> seq <n> RESPONSE MANAGEMENT PORT_DATA_SET`` (tab-indented, a trailing space) and its
fields, one ``name value`` per line (two tabs): portIdentity, portState (INITIALIZING, FAULTY, DISABLED,
LISTENING, PRE_MASTER, MASTER, PASSIVE, UNCALIBRATED, SLAVE, GRAND_MASTER; newer releases may print
PRE_TIME_TRANSMITTER / TIME_TRANSMITTER / TIME_RECEIVER, accepted as they are), ... versionNumber. Real
capture: tests/unit/fixtures/pmc/get-port-data-set.txt. No ptp4l answering: only the ``sending:`` line (an
empty list here). Indentation is not relied on.

Not registered in a ``PARSERS`` dict: the capture is not (yet) in shared/corpus. Pure: no I/O.
"""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern, ParseError

KIND = "pmc-port-data-set"
_HEADER = LazyPattern(r"^(\S+) seq (\d+) RESPONSE MANAGEMENT PORT_DATA_SET$")
_FIELD = LazyPattern(r"^([A-Za-z_]+)\s+(\S.*)$")


def parse_port_data_set(text):
    """List of ports: dicts with ``port_identity``, ``port_state`` and ``fields`` (every name -> value)."""
    ports = []
    current = None
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("sending:"):
            if line.split(None, 1)[1:] != ["GET PORT_DATA_SET"]:
                raise ParseError(KIND, "pmc sent something else than GET PORT_DATA_SET", line_no, raw)
            continue
        head = _HEADER.match(line)
        if head:
            current = {"source": head.group(1), "fields": {}}
            ports.append(current)
            continue
        field = _FIELD.match(line)
        if field is None or current is None:
            raise ParseError(KIND, "expected a RESPONSE MANAGEMENT PORT_DATA_SET header or a 'name value' "
                                   "field of one", line_no, raw)
        current["fields"][field.group(1)] = field.group(2).strip()
    for port in ports:
        fields = port["fields"]
        if "portState" not in fields:
            raise ParseError(KIND, "response from %s has no portState" % port["source"])
        port["port_identity"] = fields.get("portIdentity", port["source"])
        port["port_state"] = fields["portState"]
    return ports
