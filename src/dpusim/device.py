# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""Device semantics shared by the tools and the ``dpusim`` command: activation of pending changes.

What activates what (hardware-facts.md section 2, modelled conservatively):

* mlxconfig writes go to Next Boot (``card["mlxconfig"]["next"]``); they reach Current only on an
  activation event below. The DPU/NIC mode parameters (``INTERNAL_CPU_MODEL``,
  ``INTERNAL_CPU_OFFLOAD_ENGINE``) need a power cycle ("it needs an AC power cycle").
* A burn writes the inactive flash bank and makes it the boot bank; the running firmware changes
  on firmware reset (mlxfwreset level 3, 4, 5) or power cycle.
* mlxfwreset level 0 (live patch) activates nothing in this model (conservative: the real tool may
  live-patch a same-branch firmware; we do not claim to).
* mlxfwreset level 1 ("arm only", BlueField) reboots the Arm without touching the NIC firmware.
* A warm reboot of the GPU host reloads firmware for a ConnectX or for a BlueField in NIC mode, but
  NOT for a BlueField in DPU mode ("A host reboot does not reload FW", SRIOV PR #816).
* A reboot of the DPU's Arm OS does not reload NIC firmware.
* A power cycle activates everything, restarts the Arm (``arm_boot_id`` + 1) and clears runtime.
* Fault ``power_cycle_required``: firmware resets and reboots activate nothing; only power cycle.
* Runtime (non-persistent) settings of a node are lost on its reboot and on a power cycle.
"""

from __future__ import annotations

from dpusim import faults, linux_state
from dpusim.jsondata import clone

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

POWER_CYCLE_ONLY = ("INTERNAL_CPU_MODEL", "INTERNAL_CPU_OFFLOAD_ENGINE")


def dpu_mode(card: Any, column: str = "current") -> bool:
    """True when a BlueField runs (column=current) or will boot (next) in DPU mode."""
    if not card.is_bluefield:
        return False
    values = card.data["mlxconfig"][column]
    return values.get("INTERNAL_CPU_MODEL", 1) == 1 and values.get("INTERNAL_CPU_OFFLOAD_ENGINE", 0) == 0


def activate(card: Any, power_cycle: bool) -> list[str]:
    """Make Next Boot current (all, or all but the power-cycle-only ones) and load the boot bank."""
    done = []
    cfg = card.data["mlxconfig"]
    for name, value in cfg["next"].items():
        if cfg["current"].get(name) == value:
            continue
        if name in POWER_CYCLE_ONLY and not power_cycle:
            continue
        cfg["current"][name] = value
        done.append(name)
    fw = card.data["firmware"]
    boot = fw["banks"][fw["active_bank"]]
    if boot is not None and boot.get("valid", True) and boot != fw["running"]:
        fw["running"] = clone(boot)
        done.append("firmware")
    priv = card.data["privhost"]
    if priv.get("pending"):
        if power_cycle:
            priv["current"].update(priv["pending"])
            priv["pending"] = {}
        else:
            for key in ("disable_tracer", "disable_counter_rd"):
                if key in priv["pending"]:
                    priv["current"][key] = priv["pending"].pop(key)
    return done


def firmware_reset(node: Any, card: Any, level: int) -> list[str]:
    """mlxfwreset level ``level`` on ``card`` from ``node``; returns what was activated."""
    if level in (0,):
        return []
    if level == 1:
        if card.is_bluefield:
            arm_reboot(card)
        return []
    if faults.active(node, "power_cycle_required", card) is not None:
        node.data["runtime"] = {}
        return []
    mark_unsettled(card)
    activated = activate(card, power_cycle=False)
    card.data["last_reset"] = "warm"
    card.data["warm_resets"] = card.data.get("warm_resets", 0) + 1
    node.data["runtime"] = {}
    if card.is_bluefield:
        arm_reboot(card)
    return activated


def mark_unsettled(card: Any) -> None:
    """A BlueField mode change (power-cycle-only parameter) met a warm reset: until a power cycle,
    mlxconfig fails to read NV registers (mstflint issue #1191, corpus bf2-error-nv-access-registers)."""
    cfg = card.data["mlxconfig"]
    if card.is_bluefield and any(cfg["next"].get(k) != cfg["current"].get(k) for k in POWER_CYCLE_ONLY):
        card.data["mode_change_unsettled"] = True


def arm_reboot(card: Any) -> None:
    """The DPU's Arm OS restarts (its node's runtime settings are lost on next open)."""
    card.data["arm_boot_id"] = card.data.get("arm_boot_id", 0) + 1


def node_reboot(node: Any) -> dict[str, list[str]]:
    """``dpusim reboot``: warm reboot of this node's OS."""
    node.data["runtime"] = {}
    result: dict[str, list[str]] = {}
    for card in node.cards:
        if node.role == "dpu":
            arm_reboot(card)
            node.data["seen_arm_boot_id"] = card.data["arm_boot_id"]
            result[str(card.dir)] = []
            continue
        if dpu_mode(card) or faults.active(node, "power_cycle_required", card) is not None:
            result[str(card.dir)] = []
            continue
        mark_unsettled(card)
        result[str(card.dir)] = activate(card, power_cycle=False)
    _drop_unloaded_sysfs(node)
    return result


def _drop_unloaded_sysfs(node: Any) -> None:
    """A reboot unloads modules (the runtime was just cleared): their sysfs files under the twin root go too."""
    path = linux_state.peermem_sysfs(node)
    if path.exists():
        path.unlink()


def power_cycle(node: Any) -> dict[str, list[str]]:
    """``dpusim power-cycle``: cold boot of the machine and every card in it."""
    node.data["runtime"] = {}
    result = {}
    for card in node.cards:
        result[str(card.dir)] = activate(card, power_cycle=True)
        card.data.pop("mode_change_unsettled", None)
        card.data["last_reset"] = "cold"
        card.data["warm_resets"] = 0
        card.data["power_cycles"] = card.data.get("power_cycles", 0) + 1
        if node.role == "host":
            node.data["seen_power_cycles"] = node.data.get("seen_power_cycles", 0) + 1
        if card.is_bluefield:
            arm_reboot(card)
            card.data["arm"] = {"state": "running"}
            if node.role == "dpu":
                node.data["seen_arm_boot_id"] = card.data["arm_boot_id"]
        fw = card.data["firmware"]
        fw["burn_in_progress"] = None
    _drop_unloaded_sysfs(node)
    return result
