# ruff: noqa: UP031  (printf-style formats, as in the rest of the twin)
"""The BlueField-3 BMC's Redfish resources, generated from the twin card's state.

Nothing here is read from a capture at run time: each builder writes the resource from the card
(``card.json``: NIC firmware, DPU OS, ATF/UEFI/BSP, rshim owner, mode) and the BMC's own state
(``card.json["bmc"]``, see ``service.py``). The *shape* of each resource (its keys, ``@odata.type``
versions, member lists, enumerations) follows the BMC firmware generation being modelled, as the
real BlueField-3 BMCs serve it: BF-23.10-x (captures 2023-11-21, 2023-12-13) and BF-24.10-x
(capture 2024-11-26) in ../shared/corpus/redfish (README.md there names the sources). The tests in
tests/unit/dpusim/test_bmc_tree.py compare every generated resource with the capture of the same
firmware generation key by key.

Only what a twin can know is served; other URIs answer the BMC's 404 body (``not_found``).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

FIRMWARES = ("23.10", "24.10")
# BMC versions of the captures: the twin reports these until a BMC image is pushed.
BMC_VERSION = {"23.10": "BF-23.10-5", "24.10": "BF-24.10-10"}
# ERoT (CEC) firmware: the only version captured (24.10 capture, FirmwareInventory/Bluefield_FW_ERoT).
EROT_VERSION = "00.02.0182.0000_n02"
# OFED line as the BMC shows it for each generation (captures: MLNX_OFED_LINUX-23.10-1.1.1, -24.10-0.6.8).
OFED_VERSION = {"23.10": "MLNX_OFED_LINUX-23.10-1.1.1", "24.10": "MLNX_OFED_LINUX-24.10-0.6.8"}
# Base registry version the BMC's error bodies cite (404 bodies of the captures).
BASE_REGISTRY = {"23.10": "Base.1.15.0", "24.10": "Base.1.18.1"}
LOCKOUT_THRESHOLD = {"23.10": 4, "24.10": 10}  # AccountService.AccountLockoutThreshold of the captures
LOCKOUT_SECONDS = 600.0  # AccountService.AccountLockoutDuration (all captures)
SESSION_TIMEOUT = 1800  # SessionService.SessionTimeout (all captures)

V1 = "/redfish/v1"
FW_INV = V1 + "/UpdateService/FirmwareInventory"
SYSTEM = V1 + "/Systems/Bluefield"
MANAGER = V1 + "/Managers/Bluefield_BMC"
EROT = V1 + "/Chassis/Bluefield_ERoT"
CARD = V1 + "/Chassis/Card1"
CHASSIS_BMC = V1 + "/Chassis/Bluefield_BMC"

# FirmwareInventory members, in the order the BMC lists them (same on both generations except
# golden_image_config, which BF-24.10 adds).
INVENTORY = ("BMC_Firmware", "Bluefield_FW_ERoT", "DPU_ATF", "DPU_BOARD", "DPU_BSP", "DPU_NIC", "DPU_NODE",
             "DPU_OFED", "DPU_OS", "DPU_SYS_IMAGE", "DPU_UEFI", "golden_image_arm", "golden_image_config",
             "golden_image_nic")


def ref(uri: str) -> dict[str, str]:
    return {"@odata.id": uri}


def collection(uri: str, odata_type: str, name: str, members: list[str], description: str | None = None
               ) -> dict[str, Any]:
    body: dict[str, Any] = {"@odata.id": uri, "@odata.type": odata_type}
    if description:
        body["Description"] = description
    body["Members"] = [ref(m) for m in members]
    body["Members@odata.count"] = len(members)
    body["Name"] = name
    return body


def message(registry: str, key: str, text: str, args: list[str], severity: str, resolution: str) -> dict[str, Any]:
    """One Message object as bmcweb writes it (@odata.type Message.v1_1_1, as in the captured error bodies)."""
    return {"@odata.type": "#Message.v1_1_1.Message", "Message": text, "MessageArgs": list(args),
            "MessageId": "%s.%s" % (registry, key), "MessageSeverity": severity, "Resolution": resolution}


def error_body(msg: dict[str, Any]) -> dict[str, Any]:
    return {"error": {"@Message.ExtendedInfo": [msg], "code": msg["MessageId"], "message": msg["Message"]}}


def not_found(firmware: str, kind: str, name: str) -> dict[str, Any]:
    """The BMC's 404 body (captured: Managers/Bluefield_BMC/EthernetInterfaces/oob0, .../Oem)."""
    text = "The requested resource of type %s named '%s' was not found." % (kind, name)
    return error_body(message(BASE_REGISTRY[firmware], "ResourceNotFound", text, [kind, name], "Critical",
                              "Provide a valid resource identifier and resubmit the request."))


def base_error(firmware: str, key: str, text: str, args: list[str], severity: str = "Critical",
               resolution: str = "None.") -> dict[str, Any]:
    """An error body with one Base message; worded from the firmware's Base registry (``MESSAGES``),
    ``text``/``severity``/``resolution`` only for a key the table lacks."""
    if key in MESSAGES["Base"]:
        return error_body(base_message(firmware, key, args))
    return error_body(message(BASE_REGISTRY[firmware], key, text, args, severity, resolution))


def status(health: bool = True, rollup: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"Conditions": []}
    if health:
        body["Health"] = "OK"
    if rollup:
        body["HealthRollup"] = "OK"
    body["State"] = "Enabled"
    return body


# ---------------------------------------------------------------- service root and services
def service_root(fw: str, uuid: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "@odata.id": V1,
        "@odata.type": "#ServiceRoot.v1_15_0.ServiceRoot",
        "AccountService": ref(V1 + "/AccountService"),
        "Cables": ref(V1 + "/Cables"),
        "CertificateService": ref(V1 + "/CertificateService"),
        "Chassis": ref(V1 + "/Chassis"),
    }
    if fw == "23.10":
        body["ComponentIntegrity"] = ref(V1 + "/ComponentIntegrity")
    body.update({
        "EventService": ref(V1 + "/EventService"),
        "Fabrics": ref(V1 + "/Fabrics"),
        "Id": "RootService",
        "JsonSchemas": ref(V1 + "/JsonSchemas"),
        "Links": {"ManagerProvidingService": ref(MANAGER), "Sessions": ref(V1 + "/SessionService/Sessions")},
        "Managers": ref(V1 + "/Managers"),
        "Name": "Root Service",
        "Product": "Nvidia-BMCMezz",
        "ProtocolFeaturesSupported": {
            "DeepOperations": {"DeepPATCH": False, "DeepPOST": False},
            "ExcerptQuery": False,
            "ExpandQuery": {"ExpandAll": True, "Levels": True, "Links": True, "MaxLevels": 6, "NoLinks": True},
            "FilterQuery": fw == "24.10",
            "OnlyMemberQuery": True,
            "SelectQuery": True,
        },
        "RedfishVersion": "1.17.0" if fw == "24.10" else "1.9.0",
        "Registries": ref(V1 + "/Registries"),
        "ServiceConditions": ref(V1 + "/ServiceConditions"),
    })
    if fw == "24.10":
        body["ServiceIdentification"] = ""
    body.update({
        "SessionService": ref(V1 + "/SessionService"),
        "Systems": ref(V1 + "/Systems"),
        "Tasks": ref(V1 + "/TaskService"),
        "TelemetryService": ref(V1 + "/TelemetryService"),
        "UUID": uuid,
        "UpdateService": ref(V1 + "/UpdateService"),
        "Vendor": "Nvidia",
    })
    return body


def account_service(fw: str) -> dict[str, Any]:
    directory = {
        "Authentication": {"AuthenticationType": "UsernameAndPassword", "Password": None, "Username": ""},
        "LDAPService": {"SearchSettings": {"BaseDistinguishedNames": [""], "GroupsAttribute": "",
                                           "UsernameAttribute": ""}},
        "RemoteRoleMapping": [],
        "ServiceAddresses": [""],
        "ServiceEnabled": False,
    }
    ldap = dict(directory)
    ldap["Certificates"] = ref(V1 + "/AccountService/LDAP/Certificates")
    body: dict[str, Any] = {
        "@odata.id": V1 + "/AccountService",
        "@odata.type": "#AccountService.v1_15_0.AccountService" if fw == "24.10"
        else "#AccountService.v1_10_0.AccountService",
        "AccountLockoutDuration": int(LOCKOUT_SECONDS),
        "AccountLockoutThreshold": LOCKOUT_THRESHOLD[fw],
        "Accounts": ref(V1 + "/AccountService/Accounts"),
        "ActiveDirectory": dict(directory),
        "Description": "Account Service",
    }
    if fw == "24.10":
        body["HTTPBasicAuth"] = "Enabled"
        body["HTTPBasicAuth@AllowableValues"] = ["Enabled", "Disabled"]
    body.update({
        "Id": "AccountService",
        "LDAP": ldap,
        "MaxPasswordLength": 20,
        "MinPasswordLength": 12 if fw == "24.10" else 8,
    })
    if fw == "24.10":
        body["MultiFactorAuth"] = {"ClientCertificate": {
            "CertificateMappingAttribute": "CommonName",
            "Certificates": {"@odata.id": V1 + "/AccountService/MultiFactorAuth/ClientCertificate/Certificates",
                             "@odata.type": "#CertificateCollection.CertificateCollection",
                             "Members": None, "Members@odata.count": 0},
            "Enabled": True, "RespondToUnauthenticatedClients": True}}
    body.update({
        "Name": "Account Service",
        "Oem": {"OpenBMC": {"@odata.id": V1 + "/AccountService#/Oem/OpenBMC",
                            "@odata.type": "#OpenBMCAccountService.v1_0_0.AccountService" if fw == "24.10"
                            else "#OemAccountService.v1_0_0.AccountService",
                            "AuthMethods": {"BasicAuth": True, "Cookie": True, "SessionToken": True, "TLS": True,
                                            "XToken": True}}},
        "Roles": ref(V1 + "/AccountService/Roles"),
        "ServiceEnabled": True,
    })
    return body


def session_service() -> dict[str, Any]:
    return {"@odata.id": V1 + "/SessionService", "@odata.type": "#SessionService.v1_0_2.SessionService",
            "Description": "Session Service", "Id": "SessionService", "Name": "Session Service",
            "ServiceEnabled": True, "SessionTimeout": SESSION_TIMEOUT,
            "Sessions": ref(V1 + "/SessionService/Sessions")}


def session(sid: str, user: str, origin: str, token_id: str) -> dict[str, Any]:
    return {"@odata.id": V1 + "/SessionService/Sessions/" + sid, "@odata.type": "#Session.v1_5_0.Session",
            "ClientOriginIPAddress": origin, "Description": "Manager User Session", "Id": sid,
            "Name": "User Session", "Oem": {"Nvidia": {"PlatformID": "Bluefield", "TokenID": token_id}},
            "UserName": user}


def update_service(fw: str, enabled: bool) -> dict[str, Any]:
    protocols: list[Any] = ["SCP", "HTTP", "HTTPS"] if fw == "24.10" else [["SCP"]]  # 2023: a nested list
    nv_actions = {
        "#NvidiaUpdateService.CommitImage": {
            "@Redfish.ActionInfo": V1 + "/UpdateService/Oem/Nvidia/CommitImageActionInfo",
            "target": V1 + "/UpdateService/Actions/Oem/NvidiaUpdateService.CommitImage"},
        "#NvidiaUpdateService.PublicKeyExchange": {
            "target": V1 + "/UpdateService/Actions/Oem/NvidiaUpdateService.PublicKeyExchange"},
        "#NvidiaUpdateService.RevokeAllRemoteServerPublicKeys": {
            "target": V1 + "/UpdateService/Actions/Oem/NvidiaUpdateService.RevokeAllRemoteServerPublicKeys"},
    }
    body: dict[str, Any] = {
        "@odata.id": V1 + "/UpdateService",
        "@odata.type": ("#UpdateService.v1_11_0.UpdateService" if fw == "24.10"
                        else "#UpdateService.v1_8_0.UpdateService"),
        "Actions": {"#UpdateService.SimpleUpdate": {"TransferProtocol@Redfish.AllowableValues": protocols,
                                                    "target": V1 + "/UpdateService/Actions/UpdateService.SimpleUpdate"},
                    "Oem": {"Nvidia": nv_actions}},
        "Description": "Service for Software Update",
        "FirmwareInventory": ref(FW_INV),
        "HttpPushUri": V1 + "/UpdateService/update",
        "HttpPushUriOptions": {"HttpPushUriApplyTime": {"ApplyTime": "Immediate"}},
        "HttpPushUriTargets": [],
        "Id": "UpdateService",
        "MaxImageSizeBytes": 209715200,
    }
    body["MultipartHttpPushUri"] = V1 + "/UpdateService/update-multipart"  # both generations
    body["MultipartHttpPushUri@Redfish.OperationApplyTimeSupport"] = {
        "@odata.type": "#Settings.v1_3_3.OperationApplyTimeSupport", "SupportedValues": ["Immediate"]}
    body["Name"] = "Update Service"
    if fw == "24.10":
        body["Oem"] = {"Nvidia": {"@odata.type": "#NvidiaUpdateService.v1_2_0.NvidiaUpdateService",
                                  "MultipartHttpPushUriOptions": {"UpdateOptionSupport": ["StageAndActivate"]},
                                  "PersistentStorage": ref(V1 + "/UpdateService/Oem/Nvidia/PersistentStorage")}}
    body["ServiceEnabled"] = enabled
    body["SoftwareInventory"] = ref(V1 + "/UpdateService/SoftwareInventory")
    body["Status"] = {"Conditions": [], "State": "Enabled" if enabled else "Disabled"}
    return body


# ---------------------------------------------------------------- firmware inventory
def inventory_members(fw: str) -> list[str]:
    return [m for m in INVENTORY if fw == "24.10" or m != "golden_image_config"]


def inventory_versions(fw: str, card: dict[str, Any], bmc: dict[str, Any]) -> dict[str, str]:
    """Version of each FirmwareInventory member, from the card and the BMC state."""
    dpu_os = card.get("dpu_os", {})
    running = card.get("firmware", {}).get("running", {})
    return {
        "BMC_Firmware": bmc["versions"]["bmc"],
        "Bluefield_FW_ERoT": bmc["versions"]["erot"],
        "DPU_ATF": dpu_os.get("atf", ""),
        "DPU_BOARD": running.get("psid", ""),
        "DPU_BSP": dpu_os.get("bsp", ""),
        "DPU_NIC": running.get("version", ""),
        "DPU_NODE": dpu_os.get("node", "version not available"),
        "DPU_OFED": OFED_VERSION[fw],
        "DPU_OS": dpu_os.get("release", ""),
        "DPU_SYS_IMAGE": dpu_os.get("sys_image", "version not available"),
        "DPU_UEFI": dpu_os.get("uefi", ""),
        "golden_image_arm": "version not available",
        "golden_image_config": "version not available",
        "golden_image_nic": "version not available",
    }


# Per member: Name, Description, Updateable, SoftwareId, Manufacturer (None: key absent), related URI.
# The DPU_* members are served by the BMC's "FW inventory software of DPU" provider (DPU-side versions
# reported over the BMC-Arm channel); BMC/ERoT/golden images by the BMC's own software manager.
_DPU_ITEMS = {
    "DPU_ATF": "ATF image", "DPU_BOARD": "Board image", "DPU_BSP": "BSP image", "DPU_NIC": "NIC image",
    "DPU_NODE": "NODE image", "DPU_OFED": "OFED image", "DPU_OS": "OS image", "DPU_SYS_IMAGE": "SYS image",
    "DPU_UEFI": "UEFI image",
}
_GOLDEN = {"golden_image_arm": "ARM golden image", "golden_image_config": "Config golden image",
           "golden_image_nic": "NIC golden image"}


def software_inventory(fw: str, member: str, version: str) -> dict[str, Any]:
    uri = FW_INV + "/" + member
    body: dict[str, Any] = {"@odata.id": uri, "@odata.type": "#SoftwareInventory.v1_4_0.SoftwareInventory"}
    if member in _DPU_ITEMS:
        if fw == "24.10":
            description, name, software_id = "FW inventory software of DPU", _DPU_ITEMS[member], "0"
        else:
            description, name, software_id = "Host image", "Software Inventory", ""
        body.update({"Description": description, "Id": member, "Members@odata.count": 1, "Name": name,
                     "RelatedItem": [ref(SYSTEM + "/Bios")], "SoftwareId": software_id, "Status": status(),
                     "Updateable": member in ("DPU_OS",) or (fw == "23.10" and member == "DPU_OS"),
                     "Version": version})
        return body
    if member == "BMC_Firmware":
        body.update({"Description": "BMC image", "Id": member, "Manufacturer": "", "Name": "Software Inventory",
                     "RelatedItem": [], "RelatedItem@odata.count": 0, "SoftwareId": "0x0018", "Status": status(),
                     "Updateable": True, "Version": version, "WriteProtected": False})
        return body
    if member == "Bluefield_FW_ERoT":
        body.update({"Description": "Other image", "Id": member, "Manufacturer": "NVIDIA",
                     "Name": "Software Inventory", "RelatedItem": [ref(EROT)], "RelatedItem@odata.count": 1,
                     "SoftwareId": "0xFF00", "Status": status(), "Updateable": True, "Version": version})
        return body
    body.update({"Description": "Other image" if fw == "24.10" else _GOLDEN[member], "Id": member,
                 "Name": _GOLDEN[member] if fw == "24.10" else "Software Inventory",
                 "RelatedItem": [], "RelatedItem@odata.count": 0, "SoftwareId": "", "Status": status(),
                 "Updateable": True, "Version": version})
    return body


# ---------------------------------------------------------------- tasks
def task(fw: str, t: dict[str, Any]) -> dict[str, Any]:
    """A Task resource; TaskMonitor and Payload as bmcweb's task service writes them."""
    uri = V1 + "/TaskService/Tasks/" + t["id"]
    body: dict[str, Any] = {"@odata.id": uri, "@odata.type": "#Task.v1_4_3.Task", "Id": t["id"],
                            "Messages": list(t["messages"]), "Name": "Task %s" % t["id"],
                            "Payload": dict(t["payload"]), "PercentComplete": int(t["percent"]),
                            "StartTime": t["start_time"], "TaskMonitor": uri + "/Monitor",
                            "TaskState": t["state"], "TaskStatus": t["status"]}
    if t.get("end_time"):
        body["EndTime"] = t["end_time"]
    return body


def task_service(fw: str, now_iso: str) -> dict[str, Any]:
    return {"@odata.id": V1 + "/TaskService", "@odata.type": "#TaskService.v1_1_4.TaskService",
            "CompletedTaskOverWritePolicy": "Oldest", "DateTime": now_iso, "Id": "TaskService",
            "LifeCycleEventOnTaskStateChange": True, "Name": "Task Service", "ServiceEnabled": True,
            "Status": {"State": "Enabled"} if fw == "24.10" else {"Health": "OK", "HealthRollup": "OK",
                                                                  "State": "Enabled"},
            "Tasks": ref(V1 + "/TaskService/Tasks")}


# ---------------------------------------------------------------- manager, system, chassis
def manager(fw: str, bmc: dict[str, Any], now_iso: str) -> dict[str, Any]:
    oem_actions: dict[str, Any] = {
        "#NvidiaManager.ResetToDefaults": {
            "target": MANAGER + "/Actions/Oem/NvidiaManager.ResetToDefaults"},
        "#eMMC.SecureErase": {"@Redfish.ActionInfo": MANAGER + "/Oem/EmmcSecureEraseActionInfo",
                              "target": MANAGER + "/Actions/Oem/eMMC.SecureErase"},
    }
    if fw == "24.10":
        oem_actions["Nvidia"] = {
            "#NvidiaManager.AsyncOOBRawCommand": {
                "@Redfish.ActionInfo": MANAGER + "/Oem/Nvidia/AsyncOOBRawCommandActionInfo",
                "target": MANAGER + "/Actions/Oem/NvidiaManager.AsyncOOBRawCommand"},
            "#NvidiaManager.SyncOOBRawCommand": {
                "@Redfish.ActionInfo": MANAGER + "/Oem/Nvidia/SyncOOBRawCommandActionInfo",
                "target": MANAGER + "/Actions/Oem/NvidiaManager.SyncOOBRawCommand"}}
    body: dict[str, Any] = {
        "@odata.id": MANAGER,
        "@odata.type": "#Manager.v1_14_0.Manager",
        "Actions": {"#Manager.Reset": {"@Redfish.ActionInfo": MANAGER + "/ResetActionInfo",
                                       "target": MANAGER + "/Actions/Manager.Reset"},
                    "#Manager.ResetToDefaults": {"ResetType@Redfish.AllowableValues": ["ResetAll"],
                                                 "target": MANAGER + "/Actions/Manager.ResetToDefaults"}},
        "CommandShell": {"ConnectTypesSupported": ["SSH"], "MaxConcurrentSessions": 1, "ServiceEnabled": False},
        "DateTime": now_iso,
        "DateTimeLocalOffset": "+00:00",
    }
    if fw == "24.10":
        body["DedicatedNetworkPorts"] = ref(MANAGER + "/DedicatedNetworkPorts")
    body.update({
        "Description": "Baseboard Management Controller",
        "EthernetInterfaces": ref(MANAGER + "/EthernetInterfaces"),
        "FirmwareVersion": bmc["versions"]["bmc"],
        "GraphicalConsole": {"ConnectTypesSupported": ["KVMIP"], "MaxConcurrentSessions": 4, "ServiceEnabled": True},
        "Id": "Bluefield_BMC",
        "LastResetTime": bmc["last_reset_time"],
        "Links": {"ActiveSoftwareImage": ref(FW_INV + "/BMC_Firmware"),
                  "ManagerForChassis": [ref(CHASSIS_BMC)], "ManagerForChassis@odata.count": 1,
                  "ManagerForServers": [ref(SYSTEM)], "ManagerForServers@odata.count": 1,
                  "ManagerInChassis": ref(CHASSIS_BMC),
                  "SoftwareImages": [ref(FW_INV + "/BMC_Firmware")], "SoftwareImages@odata.count": 1},
        "LogServices": ref(MANAGER + "/LogServices"),
    })
    if fw == "24.10":
        body["ManagerDiagnosticData"] = ref(MANAGER + "/ManagerDiagnosticData")
    body.update({
        "ManagerType": "BMC", "Model": "OpenBmc", "Name": "OpenBmc Manager",
        "NetworkProtocol": ref(MANAGER + "/NetworkProtocol"),
    })
    nvidia: dict[str, Any] = {"@odata.id": MANAGER + "/Oem/Nvidia"}
    if fw == "24.10":
        nvidia.update({"@odata.type": "#NvidiaManager.v1_4_0.NvidiaManager", "FirmwareBuildType": None,
                       "OTPProvisioned": False, "PersistentStorageSettings": {"Status": {"State": "Enabled"}}})
    if fw == "24.10":
        body["Actions"]["Oem"] = oem_actions
        body["Oem"] = {"Nvidia": nvidia,
                       "OpenBmc": {"@odata.id": MANAGER + "#/Oem/OpenBmc", "@odata.type": "#OpenBMCManager.OpenBmc",
                                   "Certificates": ref(MANAGER + "/Truststore/Certificates")}}
    else:  # BF-23.10: Oem has its own @odata.id (which answers 404, as captured)
        body["Oem"] = {"@odata.id": MANAGER + "/Oem", "@odata.type": "#OemManager.Oem", "Nvidia": nvidia,
                       "OpenBmc": {"@odata.id": MANAGER + "/Oem/OpenBmc", "@odata.type": "#OemManager.OpenBmc",
                                   "Certificates": ref(MANAGER + "/Truststore/Certificates")}}
    body.update({
        "PowerState": "On",
        "SerialConsole": {"ConnectTypesSupported": ["IPMI", "SSH"], "MaxConcurrentSessions": 15,
                          "ServiceEnabled": True},
        "ServiceEntryPointUUID": bmc["uuid"],
    })
    if fw == "24.10":
        body["ServiceIdentification"] = ""
    body["Status"] = status()
    body["UUID"] = bmc["manager_uuid"]
    return body


def manager_oem_nvidia(bmc_rshim: bool) -> dict[str, Any]:
    """GET/PATCH Managers/Bluefield_BMC/Oem/Nvidia: the captures show only this body."""
    return {"BmcRShim": {"BmcRShimEnabled": bmc_rshim}}


def reset_action_info(uri: str, values: list[str]) -> dict[str, Any]:
    return {"@odata.id": uri, "@odata.type": "#ActionInfo.v1_1_2.ActionInfo", "Id": "ResetActionInfo",
            "Name": "Reset Action Info",
            "Parameters": [{"AllowableValues": list(values), "DataType": "String", "Name": "ResetType",
                            "Required": True}]}


MANAGER_RESETS = ["GracefulRestart", "ForceRestart", "GracefulShutdown"]
SYSTEM_RESETS = {"24.10": ["ForceOff", "PowerCycle", "Nmi", "GracefulShutdown", "On", "ForceOn", "GracefulRestart",
                           "ForceRestart"],
                 "23.10": ["On", "ForceOff", "ForceOn", "ForceRestart", "GracefulRestart", "GracefulShutdown",
                           "PowerCycle", "Nmi"]}
CARD_RESETS = ["PowerCycle"]


def system(fw: str, boot: dict[str, Any], power_state: str, serial: str, model: str) -> dict[str, Any]:
    progress: dict[str, Any] = {"LastState": boot["last_state"], "LastStateTime": boot["time"]}
    if boot.get("oem_last_state"):
        progress["OemLastState"] = boot["oem_last_state"]
    order = ["Boot%04X" % i for i in range(0x1F)]
    body: dict[str, Any] = {
        "@Redfish.Settings": {"@odata.type": "#Settings.v1_3_5.Settings", "SettingsObject": ref(SYSTEM + "/Settings")},
        "@odata.id": SYSTEM,
        "@odata.type": "#ComputerSystem.v1_22_0.ComputerSystem" if fw == "24.10"
        else "#ComputerSystem.v1_17_0.ComputerSystem",
        "Actions": {"#ComputerSystem.Reset": {"@Redfish.ActionInfo": SYSTEM + "/ResetActionInfo",
                                              "target": SYSTEM + "/Actions/ComputerSystem.Reset"}},
        "Bios": ref(SYSTEM + "/Bios"),
        "Boot": {"AutomaticRetryAttempts": 3, "AutomaticRetryConfig": "Disabled",
                 "AutomaticRetryConfig@Redfish.AllowableValues": ["Disabled", "RetryAttempts"],
                 "BootNext": "", "BootOptions": ref(SYSTEM + "/BootOptions"), "BootOrder": order,
                 "BootOrderPropertySelection": "BootOrder", "BootSourceOverrideEnabled": "Disabled",
                 "BootSourceOverrideEnabled@Redfish.AllowableValues": ["Once", "Continuous", "Disabled"],
                 "BootSourceOverrideMode": "UEFI",
                 "BootSourceOverrideMode@Redfish.AllowableValues": ["Legacy", "UEFI"],
                 "BootSourceOverrideTarget": "None",
                 "BootSourceOverrideTarget@Redfish.AllowableValues": ["None", "Pxe", "UefiHttp", "UefiShell",
                                                                      "UefiTarget", "UefiBootNext"],
                 "HttpBootUri": "", "RemainingAutomaticRetryAttempts": 0, "StopBootOnFault": "Never",
                 "TrustedModuleRequiredToBoot": "Disabled", "UefiTargetBootSourceOverride": "None"},
        "BootProgress": progress,
        "Description": "This ComputerSystem resource represents the SoC that is part of the DPU found in Card1",
        "EthernetInterfaces": ref(SYSTEM + "/EthernetInterfaces"),
        "GraphicalConsole": {"ConnectTypesSupported": ["KVMIP"], "MaxConcurrentSessions": 4, "ServiceEnabled": True},
        "HostWatchdogTimer": {"FunctionEnabled": False, "Status": {"State": "Enabled"}, "TimeoutAction": "ResetSystem"},
        "Id": "Bluefield",
        "LastResetTime": boot.get("last_reset_time", "1970-01-01T00:00:00+00:00"),
        "Links": {"Chassis": [ref(CHASSIS_BMC)], "ManagedBy": [ref(MANAGER)]},
        "LogServices": ref(SYSTEM + "/LogServices"),
        "Manufacturer": "https://www.mellanox.com",
        "Memory": ref(SYSTEM + "/Memory"),
        "MemorySummary": {"TotalSystemMemoryGiB": 0},
        "Model": model,
        "Name": "Bluefield",
        "Oem": {"Nvidia": ref(SYSTEM + "/Oem/Nvidia")},
        "PowerMode": "Static",
        "PowerMode@Redfish.AllowableValues": ["Static", "MaximumPerformance", "PowerSaving"],
        "PowerRestorePolicy": "AlwaysOn",
        "PowerState": power_state,
        "ProcessorSummary": {"Count": 0},
        "Processors": ref(SYSTEM + "/Processors"),
        "SecureBoot": ref(SYSTEM + "/SecureBoot"),
        "SerialConsole": {"IPMI": {"ServiceEnabled": True}, "MaxConcurrentSessions": 15,
                          "SSH": {"HotKeySequenceDisplay": "Press ~. to exit console", "Port": 2200,
                                  "ServiceEnabled": True}},
        "SerialNumber": serial,
        "Status": {"Conditions": [], "Health": "OK", "State": "Enabled"},
        "Storage": ref(SYSTEM + "/Storage"),
        "SystemType": "Physical",
    }
    return body


def system_oem_nvidia(fw: str, mode: str, host_rshim: str, base_guid: str, base_mac: str,
                      description: str) -> dict[str, Any]:
    def action(name: str, values: list[str]) -> dict[str, Any]:
        return {"Parameters": [{"AllowableValues": values, "DataType": "String", "Name": name, "Required": True}],
                "target": SYSTEM + "/Oem/Nvidia/Actions/%s.Set" % name}

    if fw == "23.10":
        # BF-23.10 serves only the mode action, and an empty Mode (capture 2023-12-13); no HostRshim yet.
        return {"Actions": {"#Mode.Set": action("Mode", ["NicMode", "DpuMode"])}, "Mode": ""}

    return {
        "@odata.id": SYSTEM + "/Oem/Nvidia",
        "@odata.type": "#NvidiaComputerSystem.v1_0_0.NvidiaComputerSystem",
        "Actions": {"#HostRshim.Set": action("HostRshim", ["Disabled", "Enabled"]),
                    "#Mode.Set": action("Mode", ["NicMode", "DpuMode"]),
                    "#SOC.ForceReset": {"target": SYSTEM + "/Oem/Nvidia/SOC.ForceReset"},
                    "#TruststoreCertificates.ResetKeys": {
                        "ResetKeysType@Redfish.AllowableValues": ["DeleteAllKeys"],
                        "target": SYSTEM + "/Oem/Nvidia/Actions/TruststoreCertificates.ResetKeys"}},
        "BaseGUID": base_guid,
        "BaseMAC": base_mac,
        "Connectx": {"ExternalHostPrivilege": ref(SYSTEM + "/Oem/Nvidia/Connectx/ExternalHostPrivileges"),
                     "StrapOptions": ref(SYSTEM + "/Oem/Nvidia/Connectx/StrapOptions")},
        "Description": description,
        "HostRshim": host_rshim,
        "Mode": mode,
        "Truststore": {"Certificates": ref(SYSTEM + "/Oem/Nvidia/Truststore/Certificates")},
    }


def erot_chassis(fw: str, background_copy: str) -> dict[str, Any]:
    nv_type = "#NvidiaChassis.v1_3_0.NvidiaChassis" if fw == "24.10" else "#NvidiaChassis.v1_0_0.NvidiaChassis"
    links: dict[str, Any] = {"ContainedBy": ref(CARD),
                             "Oem": {"Nvidia": {"@odata.type": nv_type, "ComponentsProtected": [ref(MANAGER)]}}}
    body: dict[str, Any] = {"@odata.id": EROT,
                            "@odata.type": "#Chassis.v1_22_0.Chassis" if fw == "24.10" else "#Chassis.v1_17_0.Chassis"}
    if fw == "24.10":  # BF-23.10 has no ERoT reset action and no ComputerSystems/ManagedBy links
        body["Actions"] = {"#Chassis.Reset": {"@Redfish.ActionInfo": EROT + "/ResetActionInfo",
                                              "target": EROT + "/Actions/Chassis.Reset"}}
        links = {"ComputerSystems": [ref(SYSTEM)], "ContainedBy": ref(CARD), "ManagedBy": [ref(MANAGER)],
                 "Oem": links["Oem"]}
    else:
        body["Certificates"] = ref(EROT + "/Certificates")
    body.update({
        "ChassisType": "Component",
        "Id": "Bluefield_ERoT",
        "Links": links,
        "Location": {"PartLocation": {"LocationType": "Embedded"}},
        "Manufacturer": "NVIDIA",
        "Name": "Bluefield_ERoT",
        "Oem": {"Nvidia": {"@odata.type": nv_type, "AutomaticBackgroundCopyEnabled": True,
                           "BackgroundCopyStatus": background_copy, "InbandUpdatePolicyEnabled": True}},
        "SKU": "0x4B353681",
        "SerialNumber": "",
        "Status": status(),
        "UUID": "ad4c836b-c54c-11eb-8529-0242ac130003",
    })
    return body


def chassis_collection() -> dict[str, Any]:
    return collection(V1 + "/Chassis", "#ChassisCollection.ChassisCollection", "Chassis Collection",
                      [CHASSIS_BMC, EROT, CARD])


def simple_chassis(fw: str, uri: str, cid: str, ctype: str, reset: bool) -> dict[str, Any]:
    """Bluefield_BMC and Card1: identity, links and the Card1 power-cycle action (sensors not modelled)."""
    body: dict[str, Any] = {"@odata.id": uri,
                            "@odata.type": "#Chassis.v1_22_0.Chassis" if fw == "24.10" else "#Chassis.v1_21_0.Chassis"}
    if reset:
        body["Actions"] = {"#Chassis.Reset": {"@Redfish.ActionInfo": uri + "/ResetActionInfo",
                                              "target": uri + "/Actions/Chassis.Reset"}}
    body.update({"ChassisType": ctype, "Id": cid, "Links": {"ManagedBy": [ref(MANAGER)]},
                 "Manufacturer": "Nvidia", "Name": cid, "PowerState": "On", "Status": status()})
    return body


def version_document() -> dict[str, Any]:
    return {"v1": "/redfish/v1/"}


def bmc_generation(version: str) -> tuple[int, int, int] | None:
    """``BF-24.10-10`` -> (24, 10, 10)."""
    m = re.match(r"^BF-(\d+)\.(\d+)-(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


# ---------------------------------------------------------------- the rest of the linked tree
# Registries the twin's messages cite, with the version each registry file names (captured BF-24.10:
# Base.1.18.1, TaskEvent.1.0.3, ResourceEvent.1.3.0, Update.1.0.2).
REGISTRIES = {"Base": ("DMTF Base Message Registry File Location", "Base Message Registry File"),
              "TaskEvent": ("DMTF TaskEvent Message Registry File Location", "TaskEvent Message Registry File"),
              "ResourceEvent": ("DMTF ResourceEvent Message Registry File Location",
                                "ResourceEvent Message Registry File"),
              "Update": ("DMTF Update Message Registry File Location", "Update Message Registry File")}
REGISTRY_VERSIONS = {"24.10": {"Base": "1.18.1", "TaskEvent": "1.0.3", "ResourceEvent": "1.3.0", "Update": "1.0.2"},
                     "23.10": {"Base": "1.15.0", "TaskEvent": "1.0.3", "ResourceEvent": "1.2.1", "Update": "1.0.2"}}
ROLES = {"Administrator": ["Login", "ConfigureManager", "ConfigureUsers", "ConfigureSelf", "ConfigureComponents"],
         "Operator": ["Login", "ConfigureSelf", "ConfigureComponents"],
         "ReadOnly": ["Login", "ConfigureSelf"],
         "NoAccess": []}  # BF-23.10 only
HOST_PRIVILEGES = ("HostPrivPccUpdate", "HostPrivNvPort", "HostPrivNvGlobal", "HostPrivNvInternalCpu",
                   "HostPrivNicReset", "HostPrivNvHost", "HostPrivFwUpdate", "HostPrivFlashAccess")


def registries(fw: str) -> list[str]:
    """The registries the twin lists: BF-23.10 lists no Update registry (its capture), BF-24.10 does."""
    return [r for r in REGISTRIES if fw == "24.10" or r != "Update"]


def registry_file(fw: str, name: str) -> dict[str, Any]:
    version = "%s.%s" % (name, REGISTRY_VERSIONS[fw][name])
    description, title = REGISTRIES[name]
    return {"@odata.id": V1 + "/Registries/" + name, "@odata.type": "#MessageRegistryFile.v1_1_0.MessageRegistryFile",
            "Description": description, "Id": name, "Languages": ["en"], "Languages@odata.count": 1,
            "Location": [{"Language": "en", "PublicationUri": "https://redfish.dmtf.org/registries/%s.json" % version,
                          "Uri": V1 + "/Registries/%s/%s" % (name, name)}],
            "Location@odata.count": 1, "Name": title, "Registry": version}


def account(fw: str, user: str) -> dict[str, Any]:
    body = {"@odata.id": V1 + "/AccountService/Accounts/" + user,
            "@odata.type": "#ManagerAccount.v1_7_0.ManagerAccount" if fw == "24.10"
            else "#ManagerAccount.v1_4_0.ManagerAccount",
            "AccountTypes": ["HostConsole", "IPMI", "Redfish", "WebUI", "ManagerConsole"],
            "Description": "User Account",
            "Enabled": True, "Id": user, "Links": {"Role": ref(V1 + "/AccountService/Roles/Administrator")},
            "Locked": False, "Locked@Redfish.AllowableValues": ["false"], "Name": "User Account", "Password": None,
            "PasswordChangeRequired": False, "RoleId": "Administrator", "StrictAccountTypes": True, "UserName": user}
    if fw != "24.10":
        del body["StrictAccountTypes"]
    return body


def roles(fw: str) -> list[str]:
    return [r for r in ROLES if fw == "23.10" or r != "NoAccess"]


def role(name: str) -> dict[str, Any]:
    return {"@odata.id": V1 + "/AccountService/Roles/" + name, "@odata.type": "#Role.v1_2_2.Role",
            "AssignedPrivileges": list(ROLES[name]), "Description": "%s User Role" % name, "Id": name,
            "IsPredefined": True, "Name": "User Role", "OemPrivileges": [], "RoleId": name}


def action_info(uri: str, aid: str, name: str, parameters: list[dict[str, Any]] | None = None,
                version: str = "v1_1_2") -> dict[str, Any]:
    body: dict[str, Any] = {"@odata.id": uri, "@odata.type": "#ActionInfo.%s.ActionInfo" % version, "Id": aid,
                            "Name": name}
    if parameters is not None:
        body["Parameters"] = parameters
    return body


def host_privileges(values: dict[str, str]) -> dict[str, Any]:
    """Systems/Bluefield/Oem/Nvidia/Connectx/ExternalHostPrivileges (no @odata.id on the real BMC either)."""
    params = [{"AllowableValues": ["Disabled", "Enabled", "Default"], "DataType": "String", "Name": name,
               "Required": False} for name in HOST_PRIVILEGES]
    return {"Actions": {"#ExternalHostPrivilege.Set": {
        "Parameters": params,
        "target": SYSTEM + "/Oem/Nvidia/Connectx/ExternalHostPrivileges/Actions/ExternalHostPrivileges.Set"}},
        "ExternalHostPrivilege": {name: values.get(name, "Default") for name in sorted(HOST_PRIVILEGES)}}


def auxiliary(fw: str, user: str, uptime: float, privileges: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Resources the main tree links to that the twin serves with no behaviour behind them: empty
    collections (the card has no cables, fabrics, certificates, memory DIMMs the BMC would list),
    account and roles, registry files, action infos, diagnostic data."""
    def empty(uri: str, odata_type: str, name: str, description: str | None = None, null: bool = False
              ) -> dict[str, Any]:
        body = collection(uri, odata_type, name, [], description)
        if null:
            body["Members"] = None
        return body

    res: dict[str, dict[str, Any]] = {
        V1 + "/Cables": empty(V1 + "/Cables", "#CableCollection.CableCollection", "Cable Collection",
                              "Collection of Cable Entries", null=True),
        V1 + "/Fabrics": empty(V1 + "/Fabrics", "#FabricCollection.FabricCollection", "Fabric Collection"),
        V1 + "/JsonSchemas": empty(V1 + "/JsonSchemas", "#JsonSchemaFileCollection.JsonSchemaFileCollection",
                                   "JsonSchemaFile Collection", "Collection of JsonSchemaFiles"),
        V1 + "/Registries": collection(V1 + "/Registries",
                                       "#MessageRegistryFileCollection.MessageRegistryFileCollection",
                                       "MessageRegistryFile Collection",
                                       [V1 + "/Registries/" + n for n in registries(fw)],
                                       "Collection of MessageRegistryFiles"),
        V1 + "/AccountService/Accounts": collection(V1 + "/AccountService/Accounts",
                                                    "#ManagerAccountCollection.ManagerAccountCollection",
                                                    "Accounts Collection", [V1 + "/AccountService/Accounts/" + user],
                                                    "BMC User Accounts"),
        V1 + "/AccountService/Accounts/" + user: account(fw, user),
        V1 + "/AccountService/Roles": collection(V1 + "/AccountService/Roles", "#RoleCollection.RoleCollection",
                                                 "Roles Collection", [V1 + "/AccountService/Roles/" + r for r in
                                                                      roles(fw)], "BMC User Roles"),
        V1 + "/AccountService/LDAP/Certificates": empty(
            V1 + "/AccountService/LDAP/Certificates", "#CertificateCollection.CertificateCollection",
            "LDAP Certificates Collection", "A Collection of LDAP certificate instances"),
        MANAGER + "/Truststore/Certificates": empty(
            MANAGER + "/Truststore/Certificates", "#CertificateCollection.CertificateCollection",
            "TrustStore Certificates Collection", "A Collection of TrustStore certificate instances"),
        MANAGER + "/Oem/EmmcSecureEraseActionInfo": action_info(MANAGER + "/Oem/EmmcSecureEraseActionInfo",
                                                                "EmmcSecureEraseActionInfo",
                                                                "Emmc Secure Erase Action Info"),
        V1 + "/UpdateService/Oem/Nvidia/CommitImageActionInfo": action_info(
            V1 + "/UpdateService/Oem/Nvidia/CommitImageActionInfo", "CommitImageActionInfo", "CommitImage Action Info",
            [{"AllowableValues": [], "DataType": "StringArray", "Name": "Targets", "Required": False}], "v1_2_0"),
        SYSTEM + "/Memory": empty(SYSTEM + "/Memory", "#MemoryCollection.MemoryCollection", "Memory Module Collection"),
        SYSTEM + "/Processors": empty(SYSTEM + "/Processors", "#ProcessorCollection.ProcessorCollection",
                                      "Processor Collection"),
        SYSTEM + "/Storage": empty(SYSTEM + "/Storage", "#StorageCollection.StorageCollection", "Storage Collection",
                                   null=True),
        SYSTEM + "/EthernetInterfaces": empty(SYSTEM + "/EthernetInterfaces",
                                              "#EthernetInterfaceCollection.EthernetInterfaceCollection",
                                              "Ethernet Network Interface Collection",
                                              "Collection of EthernetInterfaces of the host"),
        SYSTEM + "/LogServices": empty(SYSTEM + "/LogServices", "#LogServiceCollection.LogServiceCollection",
                                       "System Log Services Collection",
                                       "Collection of LogServices for this Computer System"),
        SYSTEM + "/Bios": {"@odata.id": SYSTEM + "/Bios", "@odata.type": "#Bios.v1_2_0.Bios",
                           "Actions": {"#Bios.ResetBios": {"target": SYSTEM + "/Bios/Actions/Bios.ResetBios"}},
                           "Description": "BIOS Configuration Service", "Id": "BIOS", "Name": "BIOS Configuration"},
        SYSTEM + "/Oem/Nvidia/Connectx/ExternalHostPrivileges": host_privileges(privileges),
    }
    for name in registries(fw):
        res[V1 + "/Registries/" + name] = registry_file(fw, name)
        res[V1 + "/Registries/%s/%s" % (name, name)] = message_registry(fw, name)
    for name in roles(fw):
        res[V1 + "/AccountService/Roles/" + name] = role(name)
    if fw == "24.10":
        res.update(persistent_storage())
        res[MANAGER + "/Oem/Nvidia/AsyncOOBRawCommandActionInfo"] = oob_raw_action_info()
        res[MANAGER + "/ManagerDiagnosticData"] = {
            "@odata.id": MANAGER + "/ManagerDiagnosticData",
            "@odata.type": "#ManagerDiagnosticData.v1_2_0.ManagerDiagnosticData", "Id": "ManagerDiagnosticData",
            "Name": "Manager Diagnostic Data", "ServiceRootUptimeSeconds": round(uptime, 3)}
        # served as the BF-24.10 BMC serves it: the bare member list, no @odata fields
        res[V1 + "/AccountService/MultiFactorAuth/ClientCertificate/Certificates"] = {"Members": None,
                                                                                     "Members@odata.count": 0}
    else:
        res[V1 + "/JsonSchemas"] = dict(res[V1 + "/JsonSchemas"],
                                        **{"@odata.context": "/redfish/v1/$metadata#JsonSchemaFileCollection."
                                                             "JsonSchemaFileCollection"})
    return res


# Messages the twin emits, per registry: key -> (message template, severity, resolution). The texts are
# those of the registries the BMC serves (Registries/<prefix>/<prefix>); the twin serves each registry with
# these messages only.
MESSAGES: dict[str, dict[str, tuple[str, str, str]]] = {
    "Base": {
        "ResourceNotFound": ("The requested resource of type %1 named '%2' was not found.", "Critical",
                             "Provide a valid resource identifier and resubmit the request."),
        "Success": ("The request completed successfully.", "OK", "None."),
        "MalformedJSON": ("The request body submitted was malformed JSON and could not be parsed by the receiving "
                          "service.", "Critical", "Ensure that the request body is valid JSON and resubmit the "
                                                  "request."),
        "MissingOrMalformedPart": ("The multipart request contains malformed parts or is missing required parts.",
                                   "Critical", "Add any missing required parts or correct the malformed parts and "
                                               "resubmit the request."),
        "ActionParameterMissing": ("The action %1 requires the parameter %2 to be present in the request body.",
                                   "Critical", "Supply the action with the required parameter in the request body "
                                               "when the request is resubmitted."),
        "PropertyValueNotInList": ("The value '%1' for the property %2 is not in the list of acceptable values.",
                                   "Warning", "Choose a value from the enumeration list that the implementation can "
                                              "support and resubmit the request if the operation failed."),
        "PropertyMissing": ("The property %1 is a required property and must be included in the request.", "Warning",
                            "Ensure that the property is in the request body and has a valid value and resubmit the "
                            "request if the operation failed."),
        "PropertyValueFormatError": ("The value '%1' for the property %2 is not a format that the property can "
                                     "accept.", "Warning", "Correct the value for the property in the request body "
                                                           "and resubmit the request if the operation failed."),
        "ActionNotSupported": ("The action %1 is not supported by the resource.", "Critical",
                               "Check the Actions property in the resource for the supported actions."),
    },
    "TaskEvent": {
        "TaskStarted": ("The task with Id '%1' has started.", "OK", "None."),
        "TaskCompletedOK": ("The task with Id '%1' has completed.", "OK", "None."),
        "TaskAborted": ("The task with Id '%1' has completed with errors.", "Critical", "None."),
    },
    "ResourceEvent": {
        "ResourceErrorsDetected": ("The resource property %1 has detected errors of type '%2'.", "Warning",
                                   "Resolution dependent upon error type."),
    },
    "Update": {
        "UpdateInProgress": ("An update is in progress.", "OK", "None."),
        "TransferringToComponent": ("Image '%1' is being transferred to '%2'.", "OK", "None."),
        "UpdateSuccessful": ("Device '%1' successfully updated with image '%2'.", "OK", "None."),
        "VerificationFailed": ("Verification of image '%1' at '%2' failed.", "Critical", "None."),
        "TransferFailed": ("Transfer of image '%1' to '%2' failed.", "Critical", "None."),
        "ApplyFailed": ("Installation of image '%1' to '%2' failed.", "Critical", "None."),
    },
}
# Base 1.15.0 (BF-23.10) words three of them differently.
MESSAGES_23_10_BASE = {
    "Success": ("The request completed successfully.", "OK", "None"),
    "PropertyValueFormatError": ("The value '%1' for the property %2 is of a different format than the property "
                                 "can accept.", "Warning", MESSAGES["Base"]["PropertyValueFormatError"][2]),
    "ActionNotSupported": ("The action %1 is not supported by the resource.", "Critical",
                           "The action supplied cannot be resubmitted to the implementation.  Perhaps the action "
                           "was invalid, the wrong resource was the target or the implementation documentation may "
                           "be of assistance."),
}


def registry_messages(fw: str, prefix: str) -> dict[str, tuple[str, str, str]]:
    table = dict(MESSAGES[prefix])
    if fw == "23.10" and prefix == "Base":
        table.update(MESSAGES_23_10_BASE)
    return table


def base_message(fw: str, key: str, args: list[str]) -> dict[str, Any]:
    """A Base registry message of this firmware generation, its %N filled with ``args``."""
    text, severity, resolution = registry_messages(fw, "Base")[key]
    for i, arg in enumerate(args, 1):
        text = text.replace("%%%d" % i, str(arg))
    return message(BASE_REGISTRY[fw], key, text, args, severity, resolution)


_REGISTRY_NAMES = {"Base": "Base Message Registry", "TaskEvent": "Task Event Message Registry",
                   "ResourceEvent": "Resource Event Message Registry", "Update": "Update Message Registry"}


REGISTRY_TYPES = {"24.10": {"Base": "v1_6_2", "TaskEvent": "v1_4_1", "ResourceEvent": "v1_6_0", "Update": "v1_6_2"},
                  "23.10": {"Base": "v1_5_0", "TaskEvent": "v1_4_1", "ResourceEvent": "v1_5_0", "Update": "v1_6_2"}}


def message_registry(fw: str, prefix: str) -> dict[str, Any]:
    version = REGISTRY_VERSIONS[fw][prefix]
    messages = {}
    for key, (text, severity, resolution) in sorted(registry_messages(fw, prefix).items()):
        nargs = max((int(n) for n in re.findall(r"%(\d)", text)), default=0)
        entry: dict[str, Any] = {"Description": "%s (as served by the twin BMC)." % key, "Message": text,
                                 "MessageSeverity": severity, "NumberOfArgs": nargs}
        if nargs:
            entry["ParamTypes"] = ["string"] * nargs
        entry.update(Resolution=resolution, Severity=severity)
        messages[key] = entry
    return {"@odata.type": "#MessageRegistry.%s.MessageRegistry" % REGISTRY_TYPES[fw][prefix],
            "Description": "The %s messages this BMC emits." % prefix, "Id": "%s.%s" % (prefix, version),
            "Language": "en", "Messages": messages, "Name": _REGISTRY_NAMES[prefix], "OwningEntity": "DMTF",
            "RegistryPrefix": prefix, "RegistryVersion": version}


def service_conditions(conditions: list[dict[str, Any]]) -> dict[str, Any]:
    worst = "Critical" if any(c.get("Severity") == "Critical" for c in conditions) else \
        ("Warning" if conditions else "OK")
    return {"@odata.id": V1 + "/ServiceConditions", "@odata.type": "#ServiceConditions.v1_0_0.ServiceConditions",
            "Conditions": conditions, "HealthRollup": worst, "Id": "ServiceConditions",
            "Name": "Redfish Service Conditions", "Oem": {}}


def persistent_storage() -> dict[str, dict[str, Any]]:
    base = V1 + "/UpdateService/Oem/Nvidia/PersistentStorage"
    return {
        base: {"@odata.id": base, "@odata.type": "#NvidiaPersistentStorage.v1_0_0.NvidiaPersistentStorage",
               "Actions": {"#NvidiaPersistentStorage.InitiateFirmwareUpdate": {
                   "@Redfish.ActionInfo": base + "/InitiateFirmwareUpdateActionInfo",
                   "target": base + "/Actions/NvidiaPersistentStorage.InitiateFirmwareUpdate"}},
               "FirmwarePackages": ref(base + "/FirmwarePackages"), "Id": "PersistentStorage",
               "MaxFirmwarePackages": 1, "Name": "Persistent Storage Resource",
               "StageFirmwarePackageHttpPushUri": base + "/stage-firmware-package"},
        base + "/InitiateFirmwareUpdateActionInfo": action_info(
            base + "/InitiateFirmwareUpdateActionInfo", "InitiateFirmwareUpdateActionInfo",
            "InitiateFirmwareUpdate Action Info",
            [{"DataType": "String", "Name": "StagedFirmwarePackageURI", "Required": True},
             {"AllowableValues": [FW_INV + "/" + m for m in ("BMC_Firmware", "Bluefield_FW_ERoT", "DPU_OS",
                                                             "golden_image_arm", "golden_image_config",
                                                             "golden_image_nic")],
              "DataType": "StringArray", "Name": "Targets", "Required": False},
             {"DataType": "Boolean", "Name": "ForceUpdate", "Required": False}], "v1_2_0"),
        base + "/FirmwarePackages": collection(base + "/FirmwarePackages",
                                               "#NvidiaFirmwarePackageCollection.NvidiaFirmwarePackageCollection",
                                               "Firmware Package Collection", []),
    }


def oob_raw_action_info() -> dict[str, Any]:
    uri = MANAGER + "/Oem/Nvidia/AsyncOOBRawCommandActionInfo"
    # Parameter names as the BMC lists them ("TartgetInstanceId" is the BMC's own spelling).
    return action_info(uri, "NvidiaAsyncOOBRawCommandActionInfo", "AsyncOOBRawCommand Action Info", [
        {"AllowableValues": ["GPU", "NVSwitch"], "DataType": "String", "Name": "TargetType", "Required": True},
        {"DataType": "Number", "Name": "TartgetInstanceId", "Required": True},
        {"DataType": "String", "Name": "AsyncArg1", "Required": True},
        {"DataType": "StringArray", "Name": "AsyncDataIn", "Required": False},
        {"DataType": "Number", "MaximumValue": 1024, "MinimumValue": 0, "Name": "RequestedDataOutBytes",
         "Required": True}])
