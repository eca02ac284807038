# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IPSEC_FULL_OFFLOAD in mlnx-bf.conf and the running driver's IPsec mode, shared by ``ipsec_offload`` (its read,
edit and result), ``dpu_info`` (section ``ipsec_offload``: preflight's read) and the filter
``bluefleet.dpu.ipsec_offload_plan`` (the module's check, worked out on the controller from that read).

- ``value_of(raw)``, ``last_value(text)`` and ``file_value(text)``: the shell value of the last assignment of the key
  (the shell sources the file; the last one wins) and whether it says yes; ``enabled(value)`` the same for a value.
- ``render(text, enabled)``: the file with every assignment set to the wanted value, appended when absent.
- ``driver_modes(fs_root)``: what the running driver uses per uplink, from MLNX_OFED's compat sysfs.
- ``path_problem(path)`` and ``read_conf(path)``: the module's checks of its ``path`` option and its read of the file
  (ToolError with the module's messages).
- ``outcome(...)``: the module's result keys, ``diff`` aside; ``plan_from_read(read, params)``: its check-mode answer
  from a dpu_info read, or why it cannot be given.

Errors are ``_tooling.ToolError``. No AnsibleModule import.
"""

from __future__ import annotations

import glob
import os

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import fs_root_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError

KEY = "IPSEC_FULL_OFFLOAD"
CONF_PATH = "/etc/mellanox/mlnx-bf.conf"
_ASSIGN_RE = LazyPattern(r"^\s*(?:export\s+)?%s=(.*)$" % KEY)


def argument_spec():
    return {
        "full_offload": {"type": "bool", "required": True},
        "path": {"type": "path", "default": CONF_PATH},
        "fs_root": fs_root_spec(),
    }


def value_of(raw):
    """The shell value of the right-hand side of ``KEY=...`` (quotes and a trailing comment removed)."""
    raw = raw.strip()
    if raw[:1] in ("'", '"'):
        end = raw.find(raw[0], 1)
        return raw[1:end] if end > 0 else raw[1:]
    return raw.split("#", 1)[0].strip()


def last_value(text):
    """The value of the last assignment of the key, or None when the file has none."""
    value = None
    for line in text.splitlines():
        match = _ASSIGN_RE.match(line)
        if match:
            value = value_of(match.group(1))
    return value


def enabled(value):
    """Whether an assignment's value (``last_value``) switches the offload on; none at all is "no"."""
    return (value or "no").lower() == "yes"


def file_value(text):
    """True when the last assignment says yes (the shell sources the file; the last one wins)."""
    return enabled(last_value(text))


def render(text, enabled):
    """The file with every assignment of the key set to the wanted value; appended when absent."""
    wanted = '%s="%s"' % (KEY, "yes" if enabled else "no")
    lines = text.splitlines()
    found = False
    for index, line in enumerate(lines):
        if _ASSIGN_RE.match(line):
            lines[index] = wanted
            found = True
    if not found:
        lines.append(wanted)
    return "\n".join(lines) + "\n"


def driver_modes(fs_root):
    out = {}
    for path in sorted(glob.glob(os.path.join(fs_root, "sys/class/net/*/compat/devlink/ipsec_mode"))):
        uplink = path.split(os.sep)[-4]
        try:
            with open(path) as handle:
                out[uplink] = handle.read().strip()
        except OSError:
            continue
    return out


def path_problem(path):
    """The module's refusal of its ``path`` option, or None."""
    if not path.startswith("/"):
        return ("set IPsec full offload failed: path %r is not absolute; give the file as the machine sees it, e.g. "
                "/etc/mellanox/mlnx-bf.conf" % path)
    return None


def conf_file(fs_root, path):
    return os.path.join(fs_root, path.lstrip("/"))


def read_conf(path):
    """``(existed, text)`` of the file at ``path`` (the whole path, under the root): a missing file is ``(False,
    "")``; a directory or a file that cannot be read is a ToolError."""
    if os.path.isdir(path):
        raise ToolError("set IPsec full offload failed: %s is a directory, not mlnx-bf.conf" % path)
    existed = os.path.exists(path)
    try:
        with open(path) as handle:
            return existed, handle.read()
    except FileNotFoundError:
        return existed, ""
    except OSError as exc:
        raise ToolError("set IPsec full offload failed: cannot read %s: %s" % (path, exc)) from exc


def outcome(path, want, previous, file_changes, modes):
    """The module's result keys but ``diff``: ``path`` the file, ``want`` the value asked, ``previous`` the file's,
    ``file_changes`` whether the file is (or would be) written, ``modes`` the driver's per uplink. A driver that runs
    another mode than asked needs the restart although the file is right."""
    running_wrong = any(mode != ("full" if want else "none") for mode in modes.values())
    restart = file_changes or running_wrong
    return {
        "changed": file_changes,  # only what the module wrote (or would write)
        "conf_file": path,
        "full_offload": want if file_changes else previous,
        "before": previous,
        "previous": previous,
        "driver_ipsec_mode": modes,
        "restart_required": "driver" if restart else "none",
        "reset_required": "driver_restart" if restart else "none",
    }


def read_section(fs_root):
    """dpu_info's section ``ipsec_offload``: what the module reads under ``fs_root`` with its default path - whether
    mlnx-bf.conf exists, the value of its last assignment of the key, the driver's mode per uplink; the module's
    failure as ``available=false`` with the reason."""
    out = {"root": fs_root, "path": CONF_PATH}
    try:
        existed, text = read_conf(conf_file(fs_root, CONF_PATH))
    except ToolError as exc:
        return dict(out, available=False, reason=exc.msg)
    return dict(out, available=True, exists=existed, value=last_value(text), driver_ipsec_mode=driver_modes(fs_root))


def _same_dir(one, other):
    return os.path.normpath(one or "/") == os.path.normpath(other or "/")


def plan_from_read(read, params):
    """ipsec_offload's check of ``params`` (its options, validated) from dpu_info's section ``ipsec_offload``:
    ``dict(outcome, answered=True, changes=[...])`` (``mlnx-bf.conf`` where the file would be written, ``driver
    restart`` where the driver must be restarted), or ``{"answered": False, "why": ...}``: then the module must read
    the node itself."""
    def unanswered(why):
        return {"answered": False, "why": why}

    section = read.get("ipsec_offload")
    if not isinstance(section, dict):
        return unanswered("the read has no ipsec_offload section")
    if not section.get("available"):
        return unanswered("the read of mlnx-bf.conf failed: %s" % section.get("reason"))
    if not _same_dir(section.get("root"), params["fs_root"]) or \
            os.path.normpath(section.get("path") or "") != os.path.normpath(params["path"]):
        return unanswered("the read was made of %s under %s, not %s under %s" % (
            section.get("path"), section.get("root"), params["path"], params["fs_root"]))
    want = params["full_offload"]
    previous = enabled(section["value"])
    # The module writes where the value differs or the file is missing: render() then changes the text (every
    # assignment becomes the wanted one, or it is appended).
    file_changes = previous != want or not section["exists"]
    answer = outcome(conf_file(params["fs_root"], params["path"]), want, previous, file_changes,
                     dict(section["driver_ipsec_mode"]))
    changes = (["mlnx-bf.conf"] if file_changes else []) + (
        ["driver restart"] if answer["restart_required"] == "driver" else [])
    return dict(answer, answered=True, changes=changes)
