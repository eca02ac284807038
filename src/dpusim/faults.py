# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""Fault injection: what can go wrong, where it is stored, and the checks tools call.

``dpusim fault set NAME [--tool T ...] [--seconds S]`` / ``clear [NAME]`` / ``list``.

Card-level faults live in the card (``card.json`` ``faults``) so the host and the DPU side both
see them; node-level faults live in ``node.json`` ``faults``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any


# name -> (scope, description)
FAULTS: dict[str, tuple[str, str]] = {
    "interrupted_burn": ("card", "the next flint/mlxfwmanager burn stops half way: the old firmware keeps running"),
    "rshim_busy": ("card", "rshim is owned by the BMC: bfb-install and /dev/rshimN writes fail on the host"),
    "device_missing": ("node", "the card does not show up: mst, mlxconfig, flint ... find no device"),
    "dpu_never_returns": ("card", "after bfb-install or an Arm reset the DPU never prints 'DPU is ready'"),
    "tool_hang": ("node", "the named tools (--tool, default all) hang (sleep --seconds real seconds, default 3600)"),
    "garbage_output": ("node", "the named tools (--tool, default all) print garbage and exit 0"),
    "peermem_einval": ("node", "modprobe nvidia_peermem fails with EINVAL (driver / OFED ABI mismatch)"),
    "gpu_driver_down": ("node", "the NVIDIA driver does not answer: nvidia-smi fails with rc 9 (driver not loaded, "
                                "e.g. built for another kernel)"),
    "power_cycle_required": ("card", "pending firmware/mlxconfig changes activate only on a power cycle, "
                                     "not on mlxfwreset or a warm reboot"),
    # ssh(1) EXIT STATUS: "ssh exits with the exit status of the remote command or with 255 if an error occurred";
    # OpenSSH clientloop.c prints "Connection to %.64s closed by remote host." when the server side goes away.
    "connection_drop": ("node", "the next call of the named tools (--tool, default all) loses its SSH session: "
                                "nothing runs, 'Connection to NODE closed by remote host.' on stderr, exit 255; "
                                "fires once"),
    "host_reboot": ("node", "the node reboots (as dpusim reboot) while the next call of the named tools (--tool, "
                            "default all) starts: nothing of it runs, its SSH session closes (exit 255); fires once"),
    # mlx5's RoCE port query reads a port ACTIVE only while its netdev has carrier, else DOWN (DISABLED): what the
    # ports read for a while after a reset, as the links come back (the reset plan's disruption text).
    "links_training": ("node", "the next --reads N (default 1) reads of the RDMA ports (rdma link show) find every "
                               "port DOWN, as while the links come back after a reset; each read uses one"),
    "bmc_unreachable": ("card", "the card's BMC does not answer (dpusim bmc serve drops every connection)"),
    "bmc_task_hangs": ("card", "the BMC's next update task stays Running at 40 percent and never completes"),
    "bmc_task_aborts": ("card", "the BMC's next update task ends in Exception (ApplyFailed, TaskAborted)"),
}


class FaultError(ValueError):
    pass


def check_name(name: str) -> str:
    key = name.replace("-", "_")
    if key not in FAULTS:
        raise FaultError("dpusim fault: unknown fault %r; known: %s" % (name, ", ".join(sorted(FAULTS))))
    return key


def scope(name: str) -> str:
    return FAULTS[check_name(name)][0]


def active(node: Any, name: str, card: Any = None) -> dict[str, Any] | None:
    """Parameters of fault ``name`` if active on ``node`` (or on ``card`` / the node's cards), else None."""
    key = check_name(name)
    if FAULTS[key][0] == "node":
        return node.faults.get(key)
    cards = [card] if card is not None else node.cards
    for c in cards:
        found = c.data.get("faults", {}).get(key)
        if found is not None:
            return found
    return None


def applies_to_tool(params: dict[str, Any] | None, tool: str) -> bool:
    if params is None:
        return False
    tools = params.get("tools") or []
    return not tools or tool in tools


def set_fault(node: Any, name: str, params: dict[str, Any]) -> None:
    key = check_name(name)
    if FAULTS[key][0] == "node":
        node.faults[key] = params
    else:
        for c in node.cards:
            c.data.setdefault("faults", {})[key] = params


def clear_fault(node: Any, name: str | None) -> list[str]:
    cleared = []
    keys = [check_name(name)] if name else list(FAULTS)
    for key in keys:
        if key in node.faults:
            del node.faults[key]
            cleared.append(key)
        for c in node.cards:
            if key in c.data.get("faults", {}):
                del c.data["faults"][key]
                if key not in cleared:
                    cleared.append(key)
    return cleared


def listing(node: Any) -> dict[str, Any]:
    out: dict[str, Any] = dict(node.faults)
    for c in node.cards:
        out.update(c.data.get("faults", {}))
    return out
