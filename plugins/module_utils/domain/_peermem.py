# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the state of ``nvidia_peermem`` and what ``peermem`` would do about it, shared by the module ``peermem``
(its read and plan), ``gpu_info`` (section ``peermem``: preflight's read) and the filter
``bluefleet.dpu.peermem_plan`` (peermem's check, worked out on the controller from that read).

- ``read_state(runner, fs_root, sysfs_root)``: peermem's read - ``loaded`` (``lsmod``), ``registered`` and
  ``version`` (the nv_mem version file under ``sysfs_root``), ``persistent`` (the modules-load.d file under
  ``fs_root`` lists the module: ``conf_lists_module``), ``conf_path`` and ``sysfs_path``.
- ``plan(before, state, persist)``: the actions, in order (``load``, ``reload``, ``unload``, ``persist``,
  ``unpersist``); ``wanted(before, params)`` the state they lead to; ``view(state)`` what is compared.
- ``plan_from_read(section, params)``: peermem's check-mode answer from gpu_info's section, or why it cannot be
  given (lsmod was not read, the modules-load.d file could not be read, the read was made under other roots).

Errors are ``_tooling.ToolError`` naming the command or file. No AnsibleModule import.
"""

from __future__ import annotations

import os

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._lsmod import parse_lsmod
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import fs_root_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_tool,
    timeout_spec,
)

MODULE = "nvidia_peermem"
CONF = ("etc", "modules-load.d", "nvidia-peermem.conf")
SYSFS = ("sys", "kernel", "mm", "memory_peers", "nv_mem", "version")
CONF_TEXT = "# Managed by bluefleet.dpu.peermem: GPUDirect RDMA peer memory for the NVIDIA GPUs\n%s\n" % MODULE
VIEW_KEYS = ("loaded", "registered", "persistent")


def path_under(root, parts):
    return os.path.join(root, *parts)


def conf_lists_module(path):
    """Whether the modules-load.d file at ``path`` lists nvidia_peermem (``-`` or ``_``); False when it is missing."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = [line.split("#", 1)[0].strip() for line in fh]
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise ToolError("read %s failed: %s" % (path, exc)) from exc
    return any(line.replace("-", "_") == MODULE for line in lines)


def read_registration(sysfs_root):
    """``(registered, version, path)``: whether the nv_mem version file exists under ``sysfs_root``, its content."""
    path = path_under(sysfs_root, SYSFS)
    registered = os.path.isfile(path)
    version = None
    if registered:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                version = fh.read().strip()
        except OSError as exc:
            raise ToolError("read %s failed: %s" % (path, exc)) from exc
    return registered, version, path


def loaded_modules(runner):
    what = "list kernel modules with lsmod"
    return parse_output(parse_lsmod, run_tool(runner, ["lsmod"], what), what)["modules"]


def read_state(runner, fs_root, sysfs_root=None):
    modules = loaded_modules(runner)
    registered, version, sysfs = read_registration(sysfs_root or fs_root)
    conf = path_under(fs_root, CONF)
    return {"loaded": MODULE in modules, "registered": registered, "version": version,
            "persistent": conf_lists_module(conf), "conf_path": conf, "sysfs_path": sysfs}


def plan(before, state, persist):
    actions = []
    if state == "present":
        if not before["loaded"]:
            actions.append("load")
        elif not before["registered"]:
            actions.append("reload")
        if persist and not before["persistent"]:
            actions.append("persist")
    else:
        if before["loaded"]:
            actions.append("unload")
        if before["persistent"]:
            actions.append("unpersist")
    return actions


def wanted(before, params):
    """The compared state after a run with ``params`` (the options) from ``before``."""
    if params["state"] == "present":
        return {"loaded": True, "registered": True,
                "persistent": True if params["persist"] else before["persistent"]}
    return {"loaded": False, "registered": False, "persistent": False}


def view(state):
    return {key: state[key] for key in VIEW_KEYS}


def argument_spec():
    return {
        "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
        "persist": {"type": "bool", "default": True},
        "fs_root": fs_root_spec(),
        "sysfs_root": {"type": "path"},
        "timeout": timeout_spec(60),
    }


def _same_dir(one, other):
    return os.path.normpath(one or "/") == os.path.normpath(other or "/")


def plan_from_read(section, params):
    """peermem's check of ``params`` (its options, validated) from gpu_info's ``peermem`` section.

    Returns ``{"answered": True, "changes": [action, ...]}`` (peermem's ``actions``), or ``{"answered": False,
    "why": "..."}``: then peermem must read the node itself.
    """
    def unanswered(why):
        return {"answered": False, "why": why}

    if not isinstance(section, dict):
        return unanswered("preflight's read has no peermem section")
    if not section.get("available") or section.get("loaded") is None:
        return unanswered("preflight's read did not list the kernel modules%s" % (
            (": " + section["reason"]) if section.get("reason") else ""))
    if "conf_root" not in section or "sysfs_root" not in section:
        return unanswered("preflight's read has no modules-load.d read (a gpu_info without it)")
    if section.get("conf_error"):
        return unanswered(section["conf_error"])
    sysfs_root = params.get("sysfs_root") or params["fs_root"]
    if not _same_dir(section["conf_root"], params["fs_root"]) or not _same_dir(section["sysfs_root"], sysfs_root):
        return unanswered("the read was made with the modules-load.d file under %s and /sys under %s, not %s and %s"
                          % (section["conf_root"], section["sysfs_root"], params["fs_root"], sysfs_root))
    return {"answered": True, "changes": plan(view(section), params["state"], params["persist"])}
