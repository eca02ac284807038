# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What bluefleet knows about the BlueField-3 BMC's Redfish service: pure rules, no I/O.

Facts (../shared/corpus/redfish/README.md, "Flows", from NVIDIA dpu-update @ 06d920c and bfb-build):

* FirmwareInventory members: BMC_Firmware (BMC), Bluefield_FW_ERoT (CEC/ERoT), DPU_NIC (NIC firmware),
  DPU_UEFI / DPU_ATF (BIOS), DPU_OS (the BFB bundle), DPU_BSP, DPU_OFED, ...
* A push task succeeds iff Completed + OK + 100 %; a message "Component image is identical" means the
  same version was skipped (not an error); "Wait for background copy operation" means the ERoT is busy.
* Activation: BMC image -> Manager.Reset GracefulRestart; ERoT image -> Chassis.Reset GracefulRestart of
  Bluefield_ERoT; NIC firmware -> a reset that reloads the card's firmware: for a BlueField in DPU mode
  (the reset planner: a reboot of the Arm does not reload it) the card power cycle, Chassis/Card1
  Chassis.Reset PowerCycle.
* BFB over Redfish: SimpleUpdate with HTTP needs a BMC that offers HTTP in TransferProtocol
  (BF-24.x; BF-23.10 offers only SCP); the BMC rshim must be enabled (host rshim off); the install is
  over when Systems/Bluefield BootProgress.OemLastState is OsIsRunning.
* Before a BMC/ERoT push the ERoT background copy must be Completed.
"""

from __future__ import annotations

import re

V1 = "/redfish/v1"
FW_INV = V1 + "/UpdateService/FirmwareInventory"
SYSTEM = V1 + "/Systems/Bluefield"
MANAGER = V1 + "/Managers/Bluefield_BMC"
EROT = V1 + "/Chassis/Bluefield_ERoT"
CARD = V1 + "/Chassis/Card1"

# component name (module option) -> FirmwareInventory member
COMPONENTS = {"bmc": "BMC_Firmware", "erot": "Bluefield_FW_ERoT", "nic": "DPU_NIC", "uefi": "DPU_UEFI"}
IDENTICAL = "Component image is identical"
BUSY = "Wait for background copy operation"
RUNNING_STATES = ("New", "Starting", "Running", "Pending", "Stopping", "Suspended", "Interrupted")


def member_id(odata_id):
    return str(odata_id).rstrip("/").rsplit("/", 1)[-1]


def bmc_version_tuple(version):
    """``BF-24.10-10`` -> (24, 10, 10); None when the BMC reports something else."""
    m = re.match(r"^BF-(\d+)\.(\d+)-(\d+)", str(version or ""))
    return tuple(int(x) for x in m.groups()) if m else None


def transfer_protocols(update_service):
    """The SimpleUpdate protocols a BMC offers; BF-23.10 nests the list (``[["SCP"]]``)."""
    action = (update_service.get("Actions") or {}).get("#UpdateService.SimpleUpdate") or {}
    values = action.get("TransferProtocol@Redfish.AllowableValues") or []
    flat = []
    for value in values:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


def task_outcome(task):
    """Classify a finished Task: ``ok``, ``identical``, ``busy`` or ``failed`` (with its messages)."""
    if not task:
        return "failed"
    if task.get("TaskState") == "Completed" and task.get("TaskStatus") == "OK":
        return "ok"
    texts = " ".join(str(m.get("Message", "")) for m in task.get("Messages") or [] if isinstance(m, dict))
    if IDENTICAL in texts:
        return "identical"
    if BUSY in texts:
        return "busy"
    return "failed"


def task_messages(task):
    """The task's messages verbatim, ``MessageId: Message`` (Resolution appended when it is not 'None.')."""
    out = []
    for m in (task or {}).get("Messages") or []:
        if not isinstance(m, dict):
            continue
        line = "%s: %s" % (m.get("MessageId", "?"), m.get("Message", ""))
        res = m.get("Resolution")
        if res and res not in ("None", "None."):
            line += " (%s)" % res
        out.append(line)
    return out


# What to do about a task the BMC ended with errors, from the error types its messages carry
# (ResourceEvent.ResourceErrorsDetected's argument, Update.VerificationFailed / ApplyFailed).
TASK_FIXES = (
    ("Component mismatch", "the image is not a %(what)s image: give %(setting)s an image made for %(what)s"),
    ("Invalid FW Package", "the image is not for this card (a BlueField-3 takes a BlueField-3 package): give "
                           "%(setting)s the package for this card's generation"),
    ("VerificationFailed", "the BMC could not verify the image (corrupt, truncated or not signed for this card): "
                           "fetch %(setting)s again and check its checksum"),
    ("ApplyFailed", "the BMC could not install the image and runs the version it had: re-run to push it again; "
                    "if it fails again, read the BMC's event log (Managers/Bluefield_BMC/LogServices)"),
)


def task_fix(task, what, setting):
    """The fix for a task that ended with errors, naming the setting (``image``, ``bfb``); None if unknown."""
    texts = " ".join("%s %s" % (m.get("MessageId", ""), m.get("Message", ""))
                     for m in (task or {}).get("Messages") or [] if isinstance(m, dict))
    for needle, fix in TASK_FIXES:
        if needle in texts:
            return fix % {"what": what, "setting": setting}
    return None


def activation(component, mode=None):
    """(reset name, Redfish action URI, body) that activates an image of ``component``; None for BIOS/OS."""
    if component == "bmc":
        return ("bmc_restart", MANAGER + "/Actions/Manager.Reset", {"ResetType": "GracefulRestart"})
    if component == "erot":
        return ("erot_restart", EROT + "/Actions/Chassis.Reset", {"ResetType": "GracefulRestart"})
    if component == "nic":
        # reset planner: firmware needs firmware_reset; a BlueField in DPU mode escalates to power_cycle
        # when no mlxfwreset is possible (out of band there is none): the card's power cycle.
        return ("power_cycle", CARD + "/Actions/Chassis.Reset", {"ResetType": "PowerCycle"})
    return None


def preflight(update_service, erot, manager_oem, system_oem, manager, want_bfb=False):
    """Problems that stop the BMC path, each ``{"check", "ok", "detail", "fix"}``; pure data in, data out."""
    checks = []

    def add(name, ok, detail, fix):
        checks.append({"check": name, "ok": bool(ok), "detail": detail, "fix": "" if ok else fix})

    enabled = (update_service.get("Status") or {}).get("State") == "Enabled" and \
        update_service.get("ServiceEnabled", True) is not False
    add("update_service_enabled", enabled, "UpdateService Status.State=%s ServiceEnabled=%s"
        % ((update_service.get("Status") or {}).get("State"), update_service.get("ServiceEnabled")),
        "enable the UpdateService on the BMC (PATCH /redfish/v1/UpdateService {\"ServiceEnabled\": true}) "
        "or wait until it reports Enabled after a BMC restart")
    copy = ((erot.get("Oem") or {}).get("Nvidia") or {}).get("BackgroundCopyStatus")
    add("erot_background_copy_done", copy == "Completed", "Chassis/Bluefield_ERoT BackgroundCopyStatus=%s" % copy,
        "wait until the ERoT background copy is Completed (minutes after an ERoT update) and re-run")
    if want_bfb:
        protocols = transfer_protocols(update_service)
        version = manager.get("FirmwareVersion")
        add("bmc_supports_bfb_over_http", "HTTP" in protocols,
            "BMC %s offers SimpleUpdate over %s" % (version, ", ".join(protocols) or "nothing"),
            "update the BMC to BF-24.04 or newer first (bluefleet.dpu.bmc_firmware component=bmc), or install "
            "the BFB from the host with bluefleet.dpu.bfb_install")
        host_rshim = system_oem.get("HostRshim")
        bmc_rshim = (manager_oem.get("BmcRShim") or {}).get("BmcRShimEnabled")
        add("rshim_not_held_by_host", host_rshim != "Enabled" or bmc_rshim,
            "HostRshim=%s BmcRShimEnabled=%s" % (host_rshim, bmc_rshim),
            "stop the rshim service on the host (systemctl stop rshim) or set HostRshim Disabled "
            "(POST /redfish/v1/Systems/Bluefield/Oem/Nvidia/Actions/HostRshim.Set), then re-run")
    return checks
