# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers of the ``bfb_install`` module: bf.cfg rendering, rshim misc checks, console classification.

No I/O and no AnsibleModule here; the module reads files and runs tools.

bf.cfg is a shell file sourced by the BFB's installer: ``KEY=value`` assignments (and optionally
shell functions such as ``bfb_modify_os``). Samples: shared/corpus/bf-cfg/mwiget-bf-jumbo-conf.txt
(``UPDATE_DPU_OS="yes"``, ``ubuntu_PASSWORD='<hash>'``, a ``bfb_modify_os`` function that writes
``/mnt/etc/hostname``); the key names ``WITH_NIC_FW_UPDATE``, ``UPDATE_ATF_UEFI``, ``UPDATE_DPU_OS``,
``ubuntu_PASSWORD`` are those the bfb-build installers read and DPF's DPUFlavor ``bfcfgParameters``
pass. Every value is written single-quoted, so the installer's shell takes it literally.

Console markers (hardware-facts.md section 3, "BFB install through host rshim"; bfb-install polls the
misc log until one of them): ``Rebooting...``, ``DPU is ready``, ``Linux up``, ``Installation finished``
(the corpus capture ends there), ``In Enhanced NIC mode`` (NIC mode), ``Runtime upgrade finished``
(deferred mode); ``CRITICAL ERROR`` ends it as a failure. Failure strings: ``BlueField Update Failed``
and ``Error: ...`` (rshim/FORMAT-from-source.md); ``ERR[PSC]: Invalid FW Package`` (a BFB for another
generation) and ``ERR[PSC]: INTEGRITY_FAIL`` (a damaged BFB) are the strings hardware-facts.md section 4
names; no capture of them is in the corpus.
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import LazyPattern

SUCCESS_MARKERS = ("Installation finished", "DPU is ready", "Linux up", "Rebooting...", "In Enhanced NIC mode",
                   "Runtime upgrade finished")
_KEY_RE = LazyPattern(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HOSTNAME_RE = LazyPattern(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                           r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
# crypt(3) hashes as `openssl passwd -1` / mkpasswd print them: $id$[rounds=N$]salt$hash (MD5, SHA-256,
# SHA-512, yescrypt).
_CRYPT_RE = LazyPattern(r"^\$(1|5|6|y|gy|7|2[abxy]?)\$[^\s']+$")
_DEV_INFO_RE = LazyPattern(r"BlueField-(\d+)")
_SECRET_NAME_RE = LazyPattern(r"PASSWORD|PASSWD|SECRET|TOKEN|_KEY$", re.IGNORECASE)
MASK = "********"


class BfbError(ValueError):
    """Input the helpers refuse; the message names it and what to do."""


def _quote(value):
    return "'" + value.replace("'", "'\\''") + "'"


def _text(key, value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        if "\n" in value or "\r" in value or "\0" in value:
            raise BfbError("bf.cfg value of %s has a line break or NUL; bf.cfg takes one line per setting" % key)
        return value
    raise BfbError("bf.cfg value of %s must be a string, number or boolean, got %s" % (key, type(value).__name__))


def is_secret_name(key):
    """True for names that hold credentials (``ubuntu_PASSWORD``, ``BMC_PASSWORD``, ...)."""
    return bool(_SECRET_NAME_RE.search(key))


def bf_cfg_settings(settings=None, secrets=None, ubuntu_password_hash=None, nic_firmware_update=None):
    """Merge the module options into ``(values, secret_keys)``: ``{KEY: text}`` in output order.

    A secret-looking key in ``settings`` is refused (it would be logged): it belongs in ``secrets``.
    """
    values = {}
    secret_keys = []
    for key, value in (settings or {}).items():
        if not _KEY_RE.match(str(key)):
            raise BfbError("bf.cfg key %r is not a shell variable name (letters, digits, _)" % (key,))
        if is_secret_name(key):
            raise BfbError("bf.cfg key %s looks like a credential; pass it in bf_cfg_secrets (no_log) instead of "
                           "bf_cfg" % key)
        values[key] = _text(key, value)
    if nic_firmware_update is not None:
        values["WITH_NIC_FW_UPDATE"] = "yes" if nic_firmware_update else "no"
    for key, value in (secrets or {}).items():
        if not _KEY_RE.match(str(key)):
            raise BfbError("bf_cfg_secrets key %r is not a shell variable name (letters, digits, _)" % (key,))
        values[key] = _text(key, value)
        secret_keys.append(key)
    if ubuntu_password_hash is not None:
        if not _CRYPT_RE.match(ubuntu_password_hash):
            raise BfbError("ubuntu_password_hash is not a crypt(3) hash such as 'openssl passwd -1' or "
                           "'mkpasswd -m sha-512' prints ($1$..., $6$..., $y$...); never pass a clear-text password")
        values["ubuntu_PASSWORD"] = ubuntu_password_hash
        secret_keys.append("ubuntu_PASSWORD")
    return values, secret_keys


def render_bf_cfg(values, hostname=None):
    """The bf.cfg text for ``values`` (from ``bf_cfg_settings``) and an optional hostname.

    The hostname is set the way the corpus sample does it: a ``bfb_modify_os`` function (called by the
    installer with the new root file system mounted on /mnt) that writes ``/mnt/etc/hostname``.
    Returns '' when there is nothing to write.
    """
    lines = ["%s=%s" % (key, _quote(value)) for key, value in values.items()]
    if hostname is not None:
        if not _HOSTNAME_RE.match(hostname):
            raise BfbError("hostname %r is not a valid host name (letters, digits, '-', dots between labels)"
                           % (hostname,))
        if "bfb_modify_os" in values:
            raise BfbError("hostname and a bf_cfg key bfb_modify_os cannot be combined")
        lines += ["", "bfb_modify_os()", "{", "    echo %s > /mnt/etc/hostname" % _quote(hostname), "}"]
    return "\n".join(lines) + "\n" if lines else ""


def masked(values, secret_keys):
    """``values`` with the secret ones replaced by ``********`` (what the module may return)."""
    return {key: (MASK if key in secret_keys else value) for key, value in values.items()}


def scrub(text, secrets):
    """``text`` with every secret value replaced by ``********``."""
    for value in secrets:
        if value:
            text = text.replace(value, MASK)
    return text


def generation(dev_info):
    """``BlueField-3(Rev 1)`` -> 3; None when DEV_INFO does not name a BlueField generation."""
    match = _DEV_INFO_RE.search(dev_info or "")
    return int(match.group(1)) if match else None


def misc_mode(bf_mode):
    """rshim misc ``BF_MODE`` (BlueField-3 only) -> ``dpu`` / ``nic`` / None (not printed or Unknown)."""
    text = (bf_mode or "").strip().lower()
    if text == "dpu mode":
        return "dpu"
    if text == "nic mode":
        return "nic"
    return None


def misc_problem(misc, path):
    """Why the rshim whose misc was parsed into ``misc`` cannot take a BFB now, or None."""
    fields = misc.get("fields") or {}
    drop = str(fields.get("DROP_MODE", "0")).strip()
    if drop == "1":
        return ("%s is in drop mode (DROP_MODE 1): another rshim backend, usually the BMC, holds the device; "
                "release it there (or write 'FORCE_CMD 1' to %s/misc to request ownership) and run again"
                % (path, path))
    if not fields.get("DEV_INFO"):
        return "%s/misc names no device (no DEV_INFO line); restart the rshim service" % path
    return None


def classify_console(parsed, rc, timed_out=False):
    """Outcome of a ``bfb-install`` run from its parsed console (``_rshim.parse_bfb_install``).

    Returns ``{"ok", "marker", "kind", "reason"}``; ``kind`` is null on success, else one of
    ``timeout``, ``rshim_unavailable``, ``wrong_generation``, ``corrupt``, ``critical``, ``stopped``,
    ``usage``, ``failed``.
    """
    log = parsed.get("log") or []
    messages = [entry.get("message") or "" for entry in log]
    errors = list(parsed.get("errors") or [])
    marker = None
    for message in messages:
        if message in SUCCESS_MARKERS:
            marker = message
    last = messages[-1] if messages else None
    joined = "\n".join(errors + messages)
    out = {"ok": False, "marker": marker, "kind": None, "reason": None}
    if timed_out:
        out.update(kind="timeout", reason="bfb-install did not finish in time (last console line: %s)"
                   % (last or "none"))
    elif "is not a valid rshim device" in joined:
        out.update(kind="rshim_unavailable",
                   reason="bfb-install found no usable rshim device (%s): the rshim service is not running on this "
                          "host or another backend (the BMC) owns it; release it there and run again" % errors[0])
    elif "Invalid FW Package" in joined:
        out.update(kind="wrong_generation",
                   reason="the card refused the BFB as 'Invalid FW Package': it is built for another BlueField "
                          "generation; use the bundle for this card")
    elif "INTEGRITY_FAIL" in joined:
        out.update(kind="corrupt", reason="the card refused the BFB with INTEGRITY_FAIL: the file is damaged or not "
                                          "signed for this card; download it again and check its sha256")
    elif any("CRITICAL ERROR" in message for message in messages):
        out.update(kind="critical", reason="the installer printed CRITICAL ERROR: %s"
                   % next(m for m in messages if "CRITICAL ERROR" in m))
    elif errors and any(e.startswith("Error:") for e in errors):
        out.update(kind="usage", reason=next(e for e in errors if e.startswith("Error:")))
    elif any("Update Failed" in e for e in errors):
        out.update(kind="stopped", reason="the DPU stopped booting the BFB after '%s' and bfb-install gave up "
                                          "(BlueField Update Failed); the Arm stays down until 'SW_RESET 1' is written "
                                          "to the rshim misc file or the server is power cycled" % (last or "nothing"))
    elif errors:
        out.update(kind="failed", reason="; ".join(errors))
    elif rc != 0:
        out.update(kind="failed", reason="bfb-install exited with status %d (last console line: %s)"
                   % (rc, last or "none"))
    elif marker is None:
        out.update(kind="stopped", reason="bfb-install ended without a finish marker (%s); last console line: %s"
                   % (", ".join(SUCCESS_MARKERS), last or "none"))
    else:
        out["ok"] = True
    return out
