# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""Simulated time: every duration the twin models goes through ``sleep`` here.

``DPUSIM_TIME_SCALE`` multiplies the real durations (1.0 = as long as on hardware); the default
0.001 makes a 12-minute bfb-install take under a second in tests.
"""

from __future__ import annotations

import os
import time

DEFAULT_SCALE = 0.001

# Modelled durations in real seconds (hardware-facts.md section 1; burn time has no
# authoritative number there, "minutes per device" is modelled as 120 s). The BFB push time is
# size / the profile's rshim_push_mib_s (see tools/bfb.py).
DURATIONS = {
    "burn": 120.0,
    "fw_reset": 45.0,
    "warm_reboot": 90.0,
    "power_cycle": 120.0,
    "bfb_install": 600.0,  # "10-15 minutes" end to end
    "arm_boot": 100.0,
    "mst_start": 1.0,
}


def scale() -> float:
    raw = os.environ.get("DPUSIM_TIME_SCALE", "")
    if not raw:
        return DEFAULT_SCALE
    try:
        value = float(raw)
    except ValueError as exc:
        raise ValueError("dpusim: DPUSIM_TIME_SCALE=%r is not a number (use e.g. 0.001 or 1.0)" % raw) from exc
    if value < 0:
        raise ValueError("dpusim: DPUSIM_TIME_SCALE=%r must be >= 0" % raw)
    return value


def duration(name: str) -> float:
    """Scaled seconds for a named operation."""
    return DURATIONS[name] * scale()


def sleep(name_or_seconds: str | float) -> None:
    """Sleep for a named operation (scaled) or for ``seconds`` of real time (also scaled)."""
    seconds = duration(name_or_seconds) if isinstance(name_or_seconds, str) else float(name_or_seconds) * scale()
    if seconds > 0:
        time.sleep(seconds)
