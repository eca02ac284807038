# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nic_firmware
short_description: Burn the NIC firmware of a BlueField DPU or ConnectX NIC from an image file
version_added: 0.1.0
description:
  - Makes the firmware flashed on one card the version carried by O(image), and says which reset the card
    needs before it runs that version.
  - Reads the image (C(flint -i IMAGE q)) and the card (C(flint -d DEV q)) first. A card whose flash already
    holds the image's version is left alone (no change); it may still wait for a reset, which
    RV(reset_required) reports (C(FW Version(Running)) differs from C(FW Version)).
  - Before anything is written the module refuses - with both PSIDs named - an image made for another PSID
    unless O(allow_psid_change), a file whose sha256 differs from O(sha256), and a card that already holds
    another flashed firmware waiting for its reset (the tools refuse a second burn then).
  - Burns once with C(flint -d DEV -i IMAGE -y burn) (or C(mlxfwmanager -d DEV -i IMAGE -u -y)), reads the card
    again and fails unless the flash holds the image's version. A failed or interrupted burn is reported with the
    card's state read after it (the old firmware keeps running from its bank); running the task again completes
    it.
  - A burnt firmware runs after C(mlxfwreset) or a reboot (flint says so); RV(reset_required) is
    C(firmware_reset) while it waits. Use M(bluefleet.dpu.fw_reset) to apply the smallest reset for the node.
author:
  - bluefleet developers (!UNKNOWN)
options:
  device:
    description:
      - The card, as the tools take it in C(-d) - a PCI address (C(0000:e2:00.0)), which every tool takes, or an
        mst device (C(/dev/mst/mt41692_pciconf0)), which only MFT's C(flint) / C(mlxfwmanager) open.
      - C(mstflint) refuses an mst device file ("Unable to parse device name"); the module refuses it first.
    type: str
    required: true
  image:
    description: Path of the firmware image (C(.bin)) on the node the module runs on.
    type: path
    required: true
  version:
    description: The firmware version the image must carry (C(32.43.1014)); the module fails before burning when
      C(flint -i IMAGE q) says otherwise. When omitted, the image's version is the target.
    type: str
  sha256:
    description: Expected sha256 of the image file (64 hex digits, as C(sha256sum) prints it); checked before
      anything is written.
    type: str
  allow_psid_change:
    description:
      - Burn an image whose PSID differs from the card's (C(flint --allow_psid_change)). This changes the card's
        identity (its OEM / SKU); without it such an image is refused with both PSIDs named.
      - Only with O(tool) C(flint) or C(mstflint); mlxfwmanager only offers images of the card's PSID.
    type: bool
    default: false
  tool:
    description:
      - The program that burns. C(auto) - C(flint) when it is on C(PATH), else C(mstflint).
      - C(mlxfwmanager) / C(mstfwmanager) burn through the firmware manager; the card and the image are read with
        C(flint) / C(mstflint) in every case.
    type: str
    choices: [auto, flint, mstflint, mlxfwmanager, mstfwmanager]
    default: auto
  timeout:
    description: Seconds each command may run; a burn takes minutes per device.
    type: int
    default: 1800
attributes:
  check_mode:
    description: Reads the card and the image and reports what a burn would change and the reset it would need;
      writes nothing.
    support: full
  diff_mode:
    description: Flashed and running firmware and PSID before and after.
    support: full
  platform:
    description: Linux GPU hosts and BlueField Arm systems with MFT or mstflint installed.
    platforms: posix
    support: full
notes:
  - The tools are looked up on C(PATH) of the task's environment and run with C(LC_ALL=C).
  - A BlueField whose host side is restricted (C(mlxprivhost r)) refuses burns from the host; burn from the Arm.
seealso:
  - module: bluefleet.dpu.fw_reset
  - module: bluefleet.dpu.bfb_install
"""

EXAMPLES = r"""
- name: NIC firmware 32.43.1014 on the BlueField-3
  bluefleet.dpu.nic_firmware:
    device: "0000:e2:00.0"
    image: /srv/firmware/fw-BlueField-3-rel-32_43_1014-900-9D3B6-00CV-A_Ax.bin
    version: 32.43.1014
    sha256: "{{ bf3_fw_sha256 }}"
  register: fw

- name: Activate it with the smallest reset the node allows
  bluefleet.dpu.fw_reset:
    device: "0000:e2:00.0"
  when: fw.reset_required != 'none'

- name: Cross-flash a card to another PSID (changes its identity)
  bluefleet.dpu.nic_firmware:
    device: "0000:37:00.0"  # quoted: unquoted, YAML reads 37:00.0 as a number (base 60)
    image: /srv/firmware/fw-ConnectX7-rel-28_43_1014-MCX715105AS-WEAT.bin
    allow_psid_change: true
    tool: mstflint
"""

RETURN = r"""
check_mode_prediction:
  description:
    - Only in check mode. True - the resource keys show the state the module predicts after a real run
      (what it would write), not the state before.
  returned: check mode
  type: bool
  sample: true
changed:
  description: True when the image was burnt (or, in check mode, would be).
  returned: always
  type: bool
device:
  description: The C(-d) argument used.
  returned: always
  type: str
firmware:
  description: The card after the run (in check mode, as it is) - C(flashed) and C(running) versions, C(psid),
    C(pending) (flashed differs from running).
  returned: always
  type: dict
  sample: {"flashed": "32.43.1014", "running": "32.41.1000", "psid": "MT_0000000998", "pending": true}
image:
  description: What the image carries - C(path), C(version), C(psid), C(sha256) (null unless O(sha256) was given).
  returned: always
  type: dict
reset_required:
  description: The reset class the card needs before it runs the flashed firmware - C(none) or
    C(firmware_reset) (reset classes of the bluefleet reset planner; the node may need a bigger one, see
    M(bluefleet.dpu.fw_reset)).
  returned: always
  type: str
  sample: firmware_reset
reset_reason:
  description: Why RV(reset_required) is needed, empty when it is C(none).
  returned: always
  type: str
diff:
  description: C(flashed), C(running) and C(psid) before and after.
  returned: always
  type: dict
cmd:
  description: Every command run, as argv lists, in order.
  returned: always
  type: list
  elements: list
tool:
  description: The program that burns (or would burn).
  returned: always
  type: str
tool_version:
  description: First line of C(TOOL --version), or null when the tool does not answer it.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._cards import (
    Card,
    check_device,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._reset_plan import change_reset
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import device_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._diff import make_diff
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import ToolRunner
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    is_sha256,
    run_module,
    sha256_of,
    timeout_spec,
)

_QUERY_TOOL = {"flint": "flint", "mstflint": "mstflint", "mlxfwmanager": "flint", "mstfwmanager": "mstflint"}


def version_key(text):
    return tuple(int(part) if part.isdigit() else 0 for part in str(text).split("."))


def pick_tool(runner, tool):
    if tool != "auto":
        return tool
    return "flint" if runner.which("flint") else "mstflint"


def plan_reset(firmware, psid_changed=False):
    """A burnt image runs after a firmware reset; an image of another PSID at the same version too (flint q then
    shows no running version)."""
    if firmware["pending"] or psid_changed:
        return change_reset({"kind": "nic_firmware"})
    return "none", ""


def run_firmware(runner, p, check_mode):
    tool = pick_tool(runner, p["tool"])
    query_tool = _QUERY_TOOL[tool]
    check_device(query_tool, p["device"])
    check_device(tool, p["device"])
    card = Card(runner, p["device"], query_tool)
    image_path = p["image"]
    label = "burn firmware to %s" % p["device"]
    if not os.path.isfile(image_path) or not os.access(image_path, os.R_OK):
        raise ToolError("%s failed: the image %s is not a readable file; copy it to this node first"
                        % (label, image_path))
    digest = None
    if p["sha256"] is not None:
        if not is_sha256(p["sha256"]):
            raise ToolError("%s failed: sha256 must be 64 hex digits, got %r" % (label, p["sha256"]))
        digest = sha256_of(image_path)
        if digest != p["sha256"].lower():
            raise ToolError("%s failed: the image %s has sha256 %s, expected %s; the file is damaged or not the "
                            "one meant, download it again" % (label, image_path, digest, p["sha256"].lower()))
    image = card.image(image_path)
    image.update(path=image_path, sha256=digest)
    if p["version"] is not None and p["version"] != image["version"]:
        raise ToolError("%s failed: the image %s carries firmware %s, not %s; use the image of %s"
                        % (label, image_path, image["version"], p["version"], p["version"]))
    before = card.state()
    want = image["version"]
    cross_psid = bool(before["psid"]) and image["psid"] != before["psid"]
    # the same version for another PSID is another firmware (issue 17): a change, or refused below
    changed = before["flashed"] != want or cross_psid
    if changed:
        # The major number of a firmware version names the device family (24.x BlueField-2, 32.x BlueField-3,
        # 28.x ConnectX-7: ../shared/corpus mlxfwmanager/flint captures, src/dpusim/profiles): no PSID change
        # crosses it.
        family, image_family = before["flashed"].split(".")[0], image["version"].split(".")[0]
        if family != image_family:
            raise ToolError(
                "%s failed: the image %s is firmware %s, made for another device generation (firmware %s.x) than "
                "this card's (it runs %s, %s.x); the card refuses it and no PSID change can cross-flash it: use the "
                "image made for this card (%s.x)" % (label, image_path, image["version"], image_family,
                                                     before["flashed"], family, family), firmware=before)
        if cross_psid and not p["allow_psid_change"]:
            raise ToolError(
                "%s failed: PSID mismatch: the card has PSID %s, the image %s is for PSID %s; use the image made for "
                "%s, or set allow_psid_change to cross-flash (it changes the card's identity)"
                % (label, before["psid"], image_path, image["psid"], before["psid"]), firmware=before)
        if cross_psid and tool in ("mlxfwmanager", "mstfwmanager"):
            raise ToolError("%s failed: %s only offers images of the card's PSID (%s, image %s); use tool flint "
                            "or mstflint with allow_psid_change" % (label, tool, before["psid"], image["psid"]),
                            firmware=before)
        if before["pending"]:
            raise ToolError(
                "%s failed: firmware %s is already flashed and waits for a reset (running %s); the card refuses "
                "another burn until then: activate it (bluefleet.dpu.fw_reset) and run again"
                % (label, before["flashed"], before["running"]), firmware=before)
    after = dict(before)
    if changed and check_mode:
        after = {"flashed": want, "running": before["running"], "psid": image["psid"],
                 "pending": want != before["running"]}
    if changed and not check_mode:
        try:
            card.burn(tool, image_path, cross_psid, version_key(want) < version_key(before["flashed"]))
        except ToolError as exc:
            try:
                exc.extra["firmware"] = card.state()
            except ToolError:
                exc.extra["firmware"] = None
            state = exc.extra["firmware"]
            if state is not None:
                exc.msg += ("; the card still runs %s and its flash holds %s%s" % (
                    state["running"], state["flashed"],
                    ": run the task again to complete the burn" if exc.extra.get("interrupted") else ""))
            raise
        after = card.state()
        if after["flashed"] != want:
            raise ToolError("%s failed: %s reported success but the flash holds %s, not %s"
                            % (label, tool, after["flashed"], want), firmware=after)
    reset, reason = plan_reset(after, changed and cross_psid)
    keys = ("flashed", "running", "psid")
    return {
        "changed": changed,
        "device": p["device"],
        "firmware": after,
        "image": image,
        "reset_required": reset,
        "reset_reason": reason,
        "tool": tool,
        "diff": make_diff({k: before[k] for k in keys}, {k: after[k] for k in keys},
                          "%s firmware before" % p["device"], "%s firmware after" % p["device"]),
    }


def argument_spec():
    return {
        "device": device_spec(required=True),
        "image": {"type": "path", "required": True},
        "version": {"type": "str"},
        "sha256": {"type": "str"},
        "allow_psid_change": {"type": "bool", "default": False},
        "tool": {"type": "str", "choices": ["auto", "flint", "mstflint", "mlxfwmanager", "mstfwmanager"],
                 "default": "auto"},
        "timeout": timeout_spec(1800),
    }


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    run_module(module, "burn firmware to %s" % module.params["device"], ToolRunner,
               lambda runner: run_firmware(runner, module.params, module.check_mode),
               lambda result: [result["tool"], "--version"], predicts=True)


if __name__ == "__main__":
    main()
