# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""The single dispatcher: ``python -m dpusim.tool NAME ARGS...`` runs one twin tool.

Order of decisions for every call:
1. replay mode (``$DPUSIM_ROOT/replay.json`` exists): answer from the capture or fail clearly;
2. node faults ``tool_hang`` / ``garbage_output`` / ``connection_drop`` / ``host_reboot`` for this tool name;
3. the tool's ``main(argv, prog)``.

The real binaries a twin tool passes through to are found by ``dpusim.tools._common.real_binary``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import time

from dpusim import faults, replay, state, tools

GARBAGE = (
    b"\x1b[0m\x00\x7f#@!~ 0xDEADBEEF ?? ??\n"
    b"-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=-=\n"
    b"\xff\xfe\xef\xbf\xbd truncated \xc3\n"
)


# Start-up shortcut: the module that answers a name not spelled like its module. A tool call imports just that
# module instead of every module of dpusim.tools (most of a twin tool's start-up time, and every module call
# of a playbook runs several tools). Checked against the module's NAMES; a name missing here, or a stale entry,
# falls back to the full registry, so a new tool module works without an entry.
MODULE_OF = {
    "bfb-install": "bfb", "bfver": "bluefield", "bfvcheck": "bluefield", "mlxbf-bootctl": "bluefield",
    "mstflint": "flint", "nvidia-smi": "gpu", "mstconfig": "mlxconfig", "mstfwmanager": "mlxfwmanager",
    "mlxup": "mlxfwmanager", "mstfwreset": "mlxfwreset", "mstprivhost": "mlxprivhost", "mlnx_qos": "qos",
    "cma_roce_mode": "qos", "cma_roce_tos": "qos", "show_gids": "rdma", "ibv_devinfo": "rdma",
    "ibdev2netdev": "rdma", "lspci": "system", "lsmod": "system", "modprobe": "system",
}


def tool_table(name: str) -> dict:
    """``{name: main}`` from the one module that answers ``name`` when it is known, else every tool's."""
    module_name = MODULE_OF.get(name, name)
    if module_name.isidentifier() and not module_name.startswith("_"):
        qualified = "%s.%s" % (tools.__name__, module_name)
        try:
            module = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name != qualified:
                raise
            module = None
        main = getattr(module, "main", None)
        if main is not None and name in getattr(module, "NAMES", ()):
            return {name: main}
    return tools.registry()


def drop_session(rdir, fault: str) -> int:
    """The caller's SSH session ends before the tool runs (once): what `ssh NODE TOOL` returns when the network
    drops or the node reboots under it (ssh's message on stderr, exit status 255). ``host_reboot`` also reboots
    the node as ``dpusim reboot`` does: runtime settings go, the installed boot units run."""
    from dpusim import boot, device  # only on this path: most tool calls never need them
    from dpusim.tools._common import session_closed

    with state.open_node(rdir) as node:
        faults.clear_fault(node, fault)
        name = str(node.data.get("hostname") or rdir.name)
        if fault == "host_reboot":
            device.node_reboot(node)
    if fault == "host_reboot":
        boot.run_boot_units(rdir)
    return session_closed(name)


def run(name: str, argv: list[str]) -> int:
    """Run twin tool ``name`` with ``argv`` (program name excluded) and return its exit status."""
    table = tool_table(name)
    try:
        rdir = state.root_dir()
    except state.StateError:
        rdir = None
    if rdir is not None and replay.is_active(rdir):
        return replay.answer(rdir, name, argv)
    if name not in table:
        print("dpusim: no twin tool named %r (known: %s)" % (name, ", ".join(sorted(table))), file=sys.stderr)
        return 127
    if rdir is not None and state.is_initialised(rdir):
        node = state.load_node(rdir)
        hang = node.faults.get("tool_hang")
        if faults.applies_to_tool(hang, name):
            time.sleep(float(hang.get("seconds", 3600)))  # real seconds on purpose: callers must time out
            return 124
        if faults.applies_to_tool(node.faults.get("garbage_output"), name):
            sys.stdout.flush()
            buffer = getattr(sys.stdout, "buffer", None)
            if buffer is not None:
                buffer.write(GARBAGE)
                buffer.flush()
            else:  # an in-memory stream (tests)
                sys.stdout.write(GARBAGE.decode("utf-8", errors="replace"))
            return 0
        for fault in ("connection_drop", "host_reboot"):
            if faults.applies_to_tool(node.faults.get(fault), name):
                return drop_session(rdir, fault)
    try:
        return int(table[name](list(argv), name) or 0)
    except state.StateError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except BrokenPipeError:  # `mlxconfig q | head`
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # silence the interpreter's flush at exit
        return 141


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print("usage: python -m dpusim.tool NAME [ARGS...]", file=sys.stderr)
        return 2
    return run(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())
