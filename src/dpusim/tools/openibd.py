"""Twin ``/etc/init.d/openibd`` (MLNX_OFED / DOCA driver init script) on a DPU's Arm: ``restart`` reloads mlx5.

``restart`` / ``force-restart`` apply ``/etc/mellanox/mlnx-bf.conf`` (see ``dpusim.driver``) and print the two
status lines of the real script; ``status`` prints what the loaded driver runs with (a twin-only line, no capture
of the real ``status`` output exists in the corpus). Other actions are refused with the usage line. On a host
node the script is accepted and only counts the restart (the host's driver state is not modelled).
"""

from __future__ import annotations

from dpusim import driver, state
from dpusim.tools._common import ToolExit, check_arm_up, emit, run_tool

NAMES = ("openibd",)
# Status lines as MLNX_OFED's openibd prints them without a terminal: message padded to column 60.
UNLOAD = "%-59s[  OK  ]\n" % "Unloading HCA driver:"
LOAD = "%-59s[  OK  ]\n" % "Loading HCA driver and Access Layer:"
USAGE = "Usage: openibd {start|stop|restart|force-restart|status}\n"


def body(argv: list[str], prog: str) -> int:
    if len(argv) != 1 or argv[0] not in ("restart", "force-restart", "status"):
        raise ToolExit(USAGE, rc=1, stream="stderr")
    with state.open_node() as node:
        check_arm_up(node)
        if argv[0] == "status":
            loaded = driver.loaded(node)
            emit("dpusim: mlx5 loaded, ipsec_mode %s%s\n"
                 % (loaded["ipsec_mode"], " (mlnx-bf.conf differs: restart pending)" if driver.pending(node) else ""))
            return 0
        driver.restart(node)
    emit(UNLOAD + LOAD)
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
