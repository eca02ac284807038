# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""Firmware images and BFB bundles the twin accepts (format documented in docs/dpusim.md).

The real tools check, before writing anything: the image is intact, it is for this device
(device id / generation), and its PSID equals the device's. A twin image carries exactly
those facts in a small text header, followed by a filler payload::

    DPUSIM-IMAGE/1
    kind: nic-fw                      (or: bfb)
    profile: bluefield3
    device_id: a2dc                   (PCI device id of the target)
    generation: 3
    psid: MT_0000000998
    version: 32.43.1014               (nic-fw: firmware version; bfb: bundle version)
    release: bf-bundle-...            (bfb only: what /etc/mlnx-release shows after install)
    nic_fw_version: 32.43.1014        (bfb only: NIC firmware bundled in the BFB)
    doca: 2.9.2                       (bfb only: DOCA version of the bundle)
    bundle_size: 1513975808           (bfb only: size the bundle claims, for progress and timing)
    roms: PXE=3.7.0500;UEFI=14.36.0016  (optional: expansion ROM versions the image carries)
    payload_size: 4096
    sha256: <hex digest of the payload>
    <empty line>
    <payload bytes>

``--corrupt`` flips payload bytes after the digest is computed, so the checksum check fails.
"""

from __future__ import annotations

import re
from pathlib import Path

from dpusim import profiles

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

MAGIC = b"DPUSIM-IMAGE/1\n"
KINDS = ("nic-fw", "bfb")
PAYLOAD_SIZE = 4096
# Size a BFB claims to have (for bfb-install progress and timing): ~1.4 GB, hardware-facts.md section 1
# ("bf-bundle 3.2.1 Ubuntu 24.04"); 1.41GiB as pv showed it in corpus/bfb-install.
BUNDLE_SIZE = 1513975808
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")


class ImageError(ValueError):
    """The file is not a twin image, or it is damaged."""


def bfb_release(version: str) -> str:
    """The /etc/mlnx-release line for a bundle version: a full name is kept as given."""
    if version.startswith(("bf-bundle-", "bf-fwbundle-", "DOCA_")):
        return version
    # Naming as in corpus/bf-release/bf3-mlnx-release-bf-bundle-2.9.2.txt:
    # bf-bundle-<ver>-<build>_<yy.mm>_ubuntu-22.04_prod
    return "bf-bundle-%s_ubuntu-22.04_prod" % version


def make_image(kind: str, profile: str, version: str, output: Path, *, psid: str | None = None,
               corrupt: bool = False, nic_fw_version: str | None = None, roms: dict[str, str] | None = None,
               bundle_size: int = BUNDLE_SIZE) -> Path:
    if kind not in KINDS:
        raise ImageError("dpusim make-image: --kind must be one of %s, not %r" % (", ".join(KINDS), kind))
    prof = profiles.get(profile)
    if kind == "nic-fw" and not VERSION_RE.match(version):
        raise ImageError("dpusim make-image: firmware version %r is not like 32.43.1014" % version)
    if kind == "bfb" and not prof.get("bluefield"):
        raise ImageError("dpusim make-image: a BFB is for a BlueField, not %s" % profile)
    import hashlib  # the OpenSSL binding (4 ms): only for making or checking an image, not for `dpusim` start-up

    seed = hashlib.sha256(("%s|%s|%s" % (kind, profile, version)).encode()).digest()
    payload = bytearray(seed * (PAYLOAD_SIZE // 32))
    fields: dict[str, Any] = {
        "kind": kind,
        "profile": profile,
        "device_id": prof["pci_device_id"],
        "generation": prof["generation"],
        "psid": psid or prof["psid"],
        "version": version,
    }
    if kind == "bfb":
        fields["release"] = bfb_release(version)
        fields["nic_fw_version"] = nic_fw_version or prof["fw_version"]
        fields["doca"] = re.split(r"[-_]", re.sub(r"^bf-(fw)?bundle-", "", fields["release"]))[0]
        fields["bundle_size"] = bundle_size
    if roms:
        fields["roms"] = ";".join("%s=%s" % (k, v) for k, v in roms.items())
    fields["payload_size"] = len(payload)
    fields["sha256"] = hashlib.sha256(bytes(payload)).hexdigest()
    if corrupt:
        for i in range(0, len(payload), 97):
            payload[i] ^= 0xFF
    head = MAGIC + "".join("%s: %s\n" % (k, v) for k, v in fields.items()).encode() + b"\n"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(head + bytes(payload))
    return output


def read_image(path: Path) -> dict[str, Any]:
    """Parse an image; raises ``ImageError`` if it is not a twin image. Adds ``intact`` (checksum ok)."""
    import hashlib

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ImageError("cannot read %s: %s" % (path, exc.strerror)) from exc
    if not raw.startswith(MAGIC) or b"\n\n" not in raw:
        raise ImageError("%s is not a dpusim image (make one with: dpusim make-image)" % path)
    head, payload = raw[len(MAGIC):].split(b"\n\n", 1)
    fields: dict[str, Any] = {}
    for line in head.decode("utf-8", errors="replace").splitlines():
        key, sep, value = line.partition(": ")
        if not sep:
            raise ImageError("%s: bad header line %r" % (path, line))
        fields[key] = value
    for key in ("kind", "device_id", "psid", "version", "sha256", "payload_size", "generation"):
        if key not in fields:
            raise ImageError("%s: header lacks %s" % (path, key))
    fields["generation"] = int(fields["generation"])
    fields["roms"] = dict(item.split("=", 1) for item in fields["roms"].split(";") if "=" in item) \
        if fields.get("roms") else {}
    fields["intact"] = (len(payload) == int(fields["payload_size"])
                        and hashlib.sha256(payload).hexdigest() == fields["sha256"])
    return fields
