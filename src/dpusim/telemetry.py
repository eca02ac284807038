# ruff: noqa: UP031  (printf-style formats, like the rest of the twin)
"""The DOCA Telemetry Service stand-in: the card's port counters as a Prometheus endpoint.

Facts used (and where they come from):
* DTS exports through a Prometheus endpoint (pull) set in ``dts_config.ini`` by the ``prometheus`` key, an
  ``http://<address>:<port>`` URL (``prometheus=http://0.0.0.0:9100``); DTS reads sysfs counters by default on
  BlueField (DOCA Telemetry Service Guide, https://docs.nvidia.com/doca/archive/2-9-3/DOCA+Telemetry+Service+Guide
  and https://docs.nvidia.com/doca/sdk/doca-telemetry-service-guide: "Prometheus Endpoint (pull)", "Sysfs
  provider is enabled by default on BlueField"). The DTS config lives in
  ``/opt/mellanox/doca/services/telemetry/config/dts_config.ini`` (same guide), the image on NGC is
  ``nvcr.io/nvidia/doca/doca_telemetry``.
* DTS's own metric names were NOT found in any public sample reachable here. The twin therefore names each
  metric after the real counter file the card exposes under ``/sys/class/infiniband/<dev>/ports/<n>/counters``
  and ``.../hw_counters`` (Linux Documentation/ABI/stable/sysfs-class-infiniband; mlx5 hw_counters), with the
  labels ``device`` and ``port``. A real DTS names and labels them its own way: the conformance check only
  relies on the counter names, not on a DTS naming scheme.
* The page is the Prometheus text exposition format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats:
  ``# HELP``/``# TYPE`` lines, ``name{label="value"} value``, content type
  ``text/plain; version=0.0.4; charset=utf-8``).

Counter values are the card's (``card.data["port_counters"][<port index>]``, shared by the host and DPU roots
of a pair, zero on a fresh card; ``add_traffic`` advances them): the endpoint renders them at scrape time.
"""

from __future__ import annotations

import re
from pathlib import Path

from dpusim import state

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

IMAGE_REPO = "nvcr.io/nvidia/doca/doca_telemetry"
CONFIG_REL = "opt/mellanox/doca/services/telemetry/config/dts_config.ini"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# (file, folder, help). port_*_data count octets divided by 4 (sysfs-class-infiniband).
COUNTERS = (
    ("port_rcv_data", "counters", "Octets received on the port, divided by 4"),
    ("port_xmit_data", "counters", "Octets sent on the port, divided by 4"),
    ("port_rcv_packets", "counters", "Packets received on the port"),
    ("port_xmit_packets", "counters", "Packets sent on the port"),
    ("port_rcv_errors", "counters", "Received packets with errors"),
    ("port_xmit_discards", "counters", "Outbound packets discarded"),
    ("link_downed", "counters", "Times the link went down"),
    ("out_of_buffer", "hw_counters", "Packets dropped for lack of a receive WQE"),
    ("np_cnp_sent", "hw_counters", "CNPs sent by the notification point"),
    ("rp_cnp_handled", "hw_counters", "CNPs handled by the reaction point"),
    ("np_ecn_marked_roce_packets", "hw_counters", "RoCE packets received with an ECN mark"),
    ("out_of_sequence", "hw_counters", "Out-of-sequence packets received (a packet was lost before them)"),
    ("packet_seq_err", "hw_counters", "NAK sequence errors received: the requester retransmits (go-back-N)"),
)
NAMES = tuple(c[0] for c in COUNTERS)


class TelemetryError(Exception):
    """The endpoint cannot answer (no Prometheus exporter configured, the pod does not run)."""


def is_telemetry(ctr: dict[str, Any]) -> bool:
    return ctr["image"].split("@")[0].rsplit(":", 1)[0] == IMAGE_REPO


def config_path(fs_root: Path) -> Path:
    return fs_root / CONFIG_REL


def prometheus_port(fs_root: Path) -> int:
    """The port of ``prometheus=`` in dts_config.ini; TelemetryError when the exporter is not configured."""
    path = config_path(fs_root)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TelemetryError("DTS has no configuration at %s (%s)" % (path, exc.strerror)) from None
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == "prometheus":
            m = re.fullmatch(r"https?://[^:/\s]+:(\d{1,5})/?", value.strip())
            if not m or not 0 < int(m.group(1)) < 65536:
                raise TelemetryError("%s: prometheus=%s is not an http://ADDRESS:PORT URL" % (path, value.strip()))
            return int(m.group(1))
    raise TelemetryError("%s has no prometheus= line: the Prometheus endpoint is off" % path)


def _ports(node: state.Node) -> list[tuple[str, int, state.Card, int]]:
    # every mlx5 function is an RDMA device of its own with one port, 1 (as dpusim.linux_state.rdma_ports)
    out = []
    for card in node.cards:
        for i, fn in enumerate(node.card_entry(card)["functions"]):
            out.append((fn["rdma"], 1, card, i))
    return out


def counters(card: state.Card, index: int) -> dict[str, int]:
    stored = card.data.get("port_counters", {}).get(str(index), {})
    return {name: int(stored.get(name, 0)) for name in NAMES}


def add_traffic(card: state.Card, index: int, **deltas: int) -> dict[str, int]:
    """Advance port ``index``'s counters (``port_rcv_data=..``); unknown names are an error."""
    unknown = sorted(set(deltas) - set(NAMES))
    if unknown:
        raise ValueError("unknown counter(s) %s; known: %s" % (", ".join(unknown), ", ".join(NAMES)))
    entry = card.data.setdefault("port_counters", {}).setdefault(str(index), {})
    for name, delta in deltas.items():
        entry[name] = int(entry.get(name, 0)) + int(delta)
    return counters(card, index)


def render(node: state.Node) -> str:
    """The exposition page: one family per counter, one sample per RDMA port."""
    ports = _ports(node)
    lines = []
    for name, folder, text in COUNTERS:
        lines.append("# HELP %s %s (sysfs %s/%s)" % (name, text, folder, name))
        lines.append("# TYPE %s counter" % name)
        for dev, port, card, index in ports:
            lines.append('%s{device="%s",port="%d"} %d' % (name, dev, port, counters(card, index)[name]))
    return "\n".join(lines) + "\n"
