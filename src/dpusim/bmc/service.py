# ruff: noqa: UP031  (printf-style formats, as in the rest of the twin)
"""The twin BMC's behaviour, independent of HTTP: ``Bmc.handle(method, path, headers, body)``.

State lives in the card (``card.json["bmc"]``) so the BMC and both OS sides of the card see the same
thing, and a restarted ``dpusim bmc serve`` carries on where it stopped. Time runs on the twin's
clock (``dpusim.clock``): every modelled duration (task run time, lockout, BMC restart) is scaled
like the rest of the twin. Work in progress (tasks, BFB installs, BMC restarts) is advanced lazily
at each request from the recorded start times, so there is no background thread to lose.

Behaviour modelled (flows: ../shared/corpus/redfish/README.md "Flows"):

* Basic auth on every request, or ``X-Auth-Token`` from ``POST /login`` or
  ``POST /redfish/v1/SessionService/Sessions``. A wrong password answers 401 and counts; at the
  served ``AccountLockoutThreshold`` failures the account is locked for ``AccountLockoutDuration``
  (even the right password gets 401 "Account temporarily locked out" meanwhile). The 401 body is
  not captured; its message carries the two phrases the official client (dpu-update) matches.
* UpdateService multipart push (``UpdateParameters`` + ``UpdateFile``) -> Task. The image says
  which component it is for (twin image header, ``kind``); a second push while a task runs -> 400
  ``Update.UpdateInProgress``. Outcomes: completed, identical (skipped unless ForceUpdate),
  aborted (wrong component for the target, wrong generation, corrupt image), worded with the
  BMC's TaskEvent/Update registries.
* SimpleUpdate of a BFB to FirmwareInventory/DPU_OS over HTTP (BF-24.10) through the BMC rshim:
  refused unless ``BmcRShimEnabled``; the Arm reinstalls, BootProgress walks to ``OsIsRunning``.
* BMC rshim vs host rshim: enabling the BMC rshim fails (stays false) while the host holds it.
* Manager.Reset: the BMC is away (connections dropped) for the modelled restart time, then runs
  the staged BMC image. Chassis.Reset on Bluefield_ERoT activates a staged ERoT image; Chassis.Reset
  PowerCycle on Card1 power-cycles the card (staged NIC firmware activates, the reset the planner
  names for a BlueField in DPU mode); ComputerSystem.Reset restarts the Arm only.
* Faults (``dpusim fault set``): bmc_unreachable, bmc_task_hangs (a task started meanwhile stays
  Running at <= 40 % until the fault is cleared, then carries on), bmc_task_aborts.
"""

from __future__ import annotations

import base64
import copy
import datetime
import hashlib
import json
import secrets
import tempfile
import time
import urllib.request
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path

from dpusim import clock, faults, images, rshim, state
from dpusim.bmc import tree

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

# Modelled durations in real (hardware) seconds, scaled by dpusim.clock like every twin duration.
# dpu-update polls a BMC push for up to 20 min and a CEC push for up to 4 min; the twin takes a
# fraction of those windows. A BMC restart: dpu-update waits up to 3 min for the new version.
DURATIONS = {"bmc": 300.0, "erot": 60.0, "nic": 240.0, "bmc_restart": 120.0, "bfb_boot": 100.0,
             "erot_copy": 60.0}
TASK_MSG_PREFIX = "TaskEvent.1.0.3"  # registry version served (Registries/TaskEvent/TaskEvent)
UPDATE_MSG_PREFIX = "Update.1.0"     # as the BMC writes it in task messages (nvbmc-docs keep-alive example)
# Image kinds a multipart push accepts, and the FirmwareInventory member each updates.
MAX_BFB = 64 * 1024 * 1024  # twin BFBs are a few KiB; a real one would be streamed, not held
PUSH_KINDS = {"bmc-fw": "BMC_Firmware", "erot-fw": "Bluefield_FW_ERoT", "nic-fw": "DPU_NIC"}


def wall_clock() -> float:
    """Wall-clock seconds; the tests replace this to step the BMC's time by hand."""
    return time.time()


class Away(Exception):
    """The BMC does not answer (restarting, or fault bmc_unreachable): drop the connection."""


def scaled(name: str) -> float:
    return DURATIONS[name] * clock.scale()


def iso(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def new_bmc_state(firmware: str, card: state.Card) -> dict[str, Any]:
    seed = hashlib.sha256(("bmc|%s" % card.dir).encode()).hexdigest()
    uuid = "%s-%s-%s-%s-%s" % (seed[:8], seed[8:12], seed[12:16], seed[16:20], seed[20:32])
    muuid = "%s-%s-%s-%s-%s" % (seed[32:40], seed[40:44], seed[44:48], seed[48:52], seed[52:64])
    now = time.time()
    return {
        "firmware": firmware,
        "versions": {"bmc": tree.BMC_VERSION[firmware], "erot": tree.EROT_VERSION},
        "staged": {},
        "uuid": uuid,
        "manager_uuid": muuid,
        "last_reset_time": iso(now),
        "auth": {"failures": 0, "locked_until": 0.0},
        "sessions": {},
        "tasks": [],
        "away_until": 0.0,
        "host_rshim": "Disabled",
        "erot_copy_until": 0.0,
        "update_service_enabled": True,
        "boot": {"last_state": "OEM", "oem_last_state": "OsIsRunning", "time": iso(now), "steps": []},
    }


def bmc_state(card: state.Card, firmware: str | None = None) -> dict[str, Any]:
    if "bmc" not in card.data:
        card.data["bmc"] = new_bmc_state(firmware or "24.10", card)
    return card.data["bmc"]


class Response:
    def __init__(self, code: int, body: Any = None, headers: dict[str, str] | None = None):
        self.code = code
        self.body = body
        self.headers = dict(headers or {})

    def payload(self) -> bytes:
        if self.body is None:
            return b""
        return json.dumps(self.body, indent=4).encode()


class Bmc:
    """One card's BMC. ``root`` is a twin node root that holds the card (a DPU or its host)."""

    def __init__(self, root: str | Path, user: str = "root", password: str = "0penBmc1", firmware: str = "24.10",
                 card_index: int = 0):
        if firmware not in tree.FIRMWARES:
            raise ValueError("dpusim bmc: --firmware must be one of %s, not %r" % (", ".join(tree.FIRMWARES), firmware))
        self.root = str(root)
        self.user = user
        self.password = password
        self.card_index = card_index
        with state.open_node(self.root) as node:
            card = node.card(card_index)
            if not card.is_bluefield or card.profile.get("generation") != 3:
                raise ValueError("dpusim bmc: card %s is a %s; the BMC is modelled for BlueField-3 only"
                                 % (card.dir, card.profile_name))
            bmc = bmc_state(card, firmware)
            if bmc["firmware"] != firmware:
                bmc["firmware"] = firmware
                bmc["versions"]["bmc"] = tree.BMC_VERSION[firmware]

    # ------------------------------------------------------------ entry point
    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes, client: str = "127.0.0.1"
               ) -> Response:
        """Answer one request; raises ``Away`` when the BMC would not answer at all."""
        path = path.split("?", 1)[0].rstrip("/") or "/"
        hdrs = {k.lower(): v for k, v in headers.items()}
        with state.open_node(self.root) as node:
            card = node.card(self.card_index)
            bmc = bmc_state(card)
            now = wall_clock()
            if faults.active(node, "bmc_unreachable", card) is not None or now < bmc.get("away_until", 0.0):
                raise Away()
            self._advance(node, card, bmc, now)
            fw = bmc["firmware"]
            if method == "GET" and path == "/redfish":
                return Response(200, tree.version_document())
            if method == "POST" and path in ("/login", tree.V1 + "/SessionService/Sessions"):
                return self._login(bmc, fw, path, body, client, now)
            user = self._authenticate(bmc, hdrs, now)
            if isinstance(user, Response):
                return user
            return self._route(node, card, bmc, fw, method, path, hdrs, body, now, client)

    # ------------------------------------------------------------ authentication
    def _unauthorized(self, bmc: dict[str, Any], now: float) -> Response:
        locked = now < bmc["auth"]["locked_until"]
        text = "Account temporarily locked out" if locked else "Invalid username or password"
        # Not captured (the Mockup Creator stores bodies of successful logins only): an error object whose
        # message carries the phrase the official client matches (dpu-update, README "Flows").
        body = {"error": {"code": "Unauthorized", "message": text}}
        return Response(401, body, {"WWW-Authenticate": 'Basic realm="OpenBMC"'})

    def _check_password(self, bmc: dict[str, Any], user: str, password: str, now: float) -> bool:
        auth = bmc["auth"]
        if now < auth["locked_until"]:
            return False
        if user == self.user and password == self.password:
            auth["failures"] = 0
            return True
        auth["failures"] += 1
        if auth["failures"] >= tree.LOCKOUT_THRESHOLD[bmc["firmware"]]:
            auth["locked_until"] = now + tree.LOCKOUT_SECONDS * clock.scale()
            auth["failures"] = 0
        return False

    def _authenticate(self, bmc: dict[str, Any], hdrs: dict[str, str], now: float) -> str | Response:
        token = hdrs.get("x-auth-token")
        if token:
            for sess in bmc["sessions"].values():
                if secrets.compare_digest(sess["token"], token):
                    if now - sess["last"] > tree.SESSION_TIMEOUT * clock.scale():
                        break
                    sess["last"] = now
                    return sess["user"]
            return self._unauthorized(bmc, now)
        auth = hdrs.get("authorization", "")
        if auth.lower().startswith("basic "):
            try:
                user, _, password = base64.b64decode(auth[6:].strip()).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return self._unauthorized(bmc, now)
            if self._check_password(bmc, user, password, now):
                return user
        return self._unauthorized(bmc, now)

    def _login(self, bmc: dict[str, Any], fw: str, path: str, body: bytes, client: str, now: float) -> Response:
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return Response(400, tree.base_error(fw, "MalformedJSON", "The request body submitted was malformed "
                                                 "JSON and could not be parsed by the receiving service.", []))
        if path == "/login":
            user, password = data.get("username", ""), data.get("password", "")
        else:
            user, password = data.get("UserName", ""), data.get("Password", "")
        if not self._check_password(bmc, str(user), str(password), now):
            return self._unauthorized(bmc, now)
        sid = secrets.token_urlsafe(8)[:10]
        token = secrets.token_urlsafe(15)[:20]
        bmc["sessions"][sid] = {"token": token, "user": user, "origin": client, "last": now,
                                "token_id": secrets.token_urlsafe(15)[:20]}
        uri = tree.V1 + "/SessionService/Sessions/" + sid
        headers = {"X-Auth-Token": token, "Location": uri}
        if path == "/login":
            return Response(200, {"token": token}, headers)
        sess = bmc["sessions"][sid]
        return Response(201, tree.session(sid, user, client, sess["token_id"]), headers)

    # ------------------------------------------------------------ routing
    def _route(self, node: state.Node, card: state.Card, bmc: dict[str, Any], fw: str, method: str, path: str,
               hdrs: dict[str, str], body: bytes, now: float, client: str) -> Response:
        gets = self._resources(node, card, bmc, fw, now)
        if method in ("GET", "HEAD"):
            if path in gets:
                return Response(200, gets[path]())
            return self._not_found(fw, path)
        if method == "POST":
            if path == tree.V1 + "/UpdateService/update-multipart":
                return self._push(node, card, bmc, fw, hdrs, body, now)
            if path == tree.V1 + "/UpdateService/Actions/UpdateService.SimpleUpdate":
                return self._simple_update(node, card, bmc, fw, body, now)
            if path == tree.MANAGER + "/Actions/Manager.Reset":
                return self._manager_reset(bmc, fw, body, now)
            if path == tree.SYSTEM + "/Actions/ComputerSystem.Reset":
                return self._system_reset(node, card, bmc, fw, body, now)
            if path == tree.CARD + "/Actions/Chassis.Reset" or (path == tree.EROT + "/Actions/Chassis.Reset"
                                                                 and fw == "24.10"):
                return self._chassis_reset(node, card, bmc, fw, path, body, now)
            if path == tree.SYSTEM + "/Oem/Nvidia/Actions/HostRshim.Set" and fw == "24.10":
                return self._host_rshim(card, bmc, fw, body)
            if path in gets:
                return Response(405, tree.base_error(fw, "ActionNotSupported", "The action %s is not supported "
                                                     "by the resource." % method, [method]))
            return self._not_found(fw, path)
        if method == "PATCH":
            if path == tree.MANAGER + "/Oem/Nvidia":
                return self._patch_rshim(card, bmc, fw, body)
            if path in gets:
                return Response(405, None)
            return self._not_found(fw, path)
        if method == "DELETE" and path.startswith(tree.V1 + "/SessionService/Sessions/"):
            sid = path.rsplit("/", 1)[1]
            if bmc["sessions"].pop(sid, None) is None:
                return self._not_found(fw, path)
            return self._success(fw)
        return Response(405, None)

    def _not_found(self, fw: str, path: str) -> Response:
        return Response(404, tree.not_found(fw, "", path.rsplit("/", 1)[-1]))

    def _resources(self, node: state.Node, card: state.Card, bmc: dict[str, Any], fw: str, now: float
                   ) -> dict[str, Any]:
        """URI -> builder of every resource the twin serves (evaluated only for the one asked)."""
        V1 = tree.V1
        versions = tree.inventory_versions(fw, card.data, bmc)
        sessions = sorted(bmc["sessions"])
        res: dict[str, Any] = {
            V1: lambda: tree.service_root(fw, bmc["uuid"]),
            V1 + "/AccountService": lambda: tree.account_service(fw),
            V1 + "/SessionService": tree.session_service,
            V1 + "/SessionService/Sessions": lambda: tree.collection(
                V1 + "/SessionService/Sessions", "#SessionCollection.SessionCollection", "Session Collection",
                [V1 + "/SessionService/Sessions/" + s for s in sessions], description="Session Collection"),
            V1 + "/UpdateService": lambda: tree.update_service(fw, bmc["update_service_enabled"]),
            tree.FW_INV: lambda: tree.collection(
                tree.FW_INV, "#SoftwareInventoryCollection.SoftwareInventoryCollection",
                "Software Inventory Collection", [tree.FW_INV + "/" + m for m in tree.inventory_members(fw)]),
            V1 + "/TaskService": lambda: tree.task_service(fw, iso(now)),
            V1 + "/TaskService/Tasks": lambda: tree.collection(
                V1 + "/TaskService/Tasks", "#TaskCollection.TaskCollection", "Task Collection",
                [V1 + "/TaskService/Tasks/" + t["id"] for t in bmc["tasks"]]),
            V1 + "/Managers": lambda: tree.collection(V1 + "/Managers", "#ManagerCollection.ManagerCollection",
                                                      "Manager Collection", [tree.MANAGER]),
            tree.MANAGER: lambda: tree.manager(fw, bmc, iso(now)),
            tree.MANAGER + "/Oem/Nvidia": lambda: tree.manager_oem_nvidia(self._bmc_rshim(card)),
            tree.MANAGER + "/ResetActionInfo": lambda: tree.reset_action_info(tree.MANAGER + "/ResetActionInfo",
                                                                              tree.MANAGER_RESETS),
            V1 + "/Systems": lambda: tree.collection(V1 + "/Systems",
                                                     "#ComputerSystemCollection.ComputerSystemCollection",
                                                     "Computer System Collection", [tree.SYSTEM]),
            tree.SYSTEM: lambda: tree.system(fw, bmc["boot"], self._power_state(card), self._serial(card),
                                             "BlueField-3 SmartNIC Main Card"),
            tree.SYSTEM + "/Oem/Nvidia": lambda: tree.system_oem_nvidia(
                fw, "DpuMode" if _dpu_mode(card) else "NicMode", bmc["host_rshim"],
                str(card.ident("base_guid") or "").replace(":", "").lower(),
                str(card.ident("base_mac") or "").replace(":", "").lower(), str(card.ident("description") or "")),
            tree.SYSTEM + "/ResetActionInfo": lambda: tree.reset_action_info(tree.SYSTEM + "/ResetActionInfo",
                                                                             tree.SYSTEM_RESETS[fw]),
            V1 + "/Chassis": tree.chassis_collection,
            tree.EROT: lambda: tree.erot_chassis(fw, "InProgress" if now < bmc["erot_copy_until"] else "Completed"),
            tree.EROT + "/ResetActionInfo": lambda: tree.reset_action_info(tree.EROT + "/ResetActionInfo",
                                                                           ["GracefulRestart"]),
            tree.CHASSIS_BMC: lambda: tree.simple_chassis(fw, tree.CHASSIS_BMC, "Bluefield_BMC", "Module", False),
            tree.CARD: lambda: tree.simple_chassis(fw, tree.CARD, "Card1", "Card", True),
            tree.CARD + "/ResetActionInfo": lambda: tree.reset_action_info(tree.CARD + "/ResetActionInfo",
                                                                           tree.CARD_RESETS),
        }
        privileges = {"HostPrivFwUpdate": "Disabled" if card.data.get("privhost", {}).get("level") == "RESTRICTED"
                      else "Default"}
        for uri, body in tree.auxiliary(fw, self.user, max(0.0, now - bmc.get("reset_at", now)), privileges).items():
            res[uri] = (lambda body=body: body)
        res[V1 + "/ServiceConditions"] = lambda: tree.service_conditions(self._conditions(bmc))
        for member in tree.inventory_members(fw):
            res[tree.FW_INV + "/" + member] = (lambda m=member: tree.software_inventory(fw, m, versions[m]))
        for t in bmc["tasks"]:
            res[V1 + "/TaskService/Tasks/" + t["id"]] = (lambda t=t: tree.task(fw, t))
        for s in sessions:
            sess = bmc["sessions"][s]
            res[V1 + "/SessionService/Sessions/" + s] = (
                lambda s=s, sess=sess: tree.session(s, sess["user"], sess["origin"], sess["token_id"]))
        return res

    @staticmethod
    def _conditions(bmc: dict[str, Any]) -> list[dict[str, Any]]:
        """ServiceConditions: the Critical messages of the tasks that failed (as the BMC lists failed transfers)."""
        out = []
        for t in bmc["tasks"]:
            for m in t["messages"]:
                if m["MessageSeverity"] == "Critical" and not m["MessageId"].startswith(TASK_MSG_PREFIX):
                    out.append({"Message": m["Message"], "MessageArgs": list(m["MessageArgs"]),
                                "MessageId": m["MessageId"], "Severity": "Critical",
                                "Timestamp": t.get("end_time") or t["start_time"]})
        return out

    # ------------------------------------------------------------ card facts
    @staticmethod
    def _bmc_rshim(card: state.Card) -> bool:
        return rshim.rshim_state(card).get("owner") == "bmc"

    @staticmethod
    def _power_state(card: state.Card) -> str:
        return "On" if card.data.get("arm", {}).get("state") == "running" else "PoweringOn"

    @staticmethod
    def _serial(card: state.Card) -> str:
        return str(card.ident("serial_number") or "MT0000000000")

    # ------------------------------------------------------------ rshim
    def _patch_rshim(self, card: state.Card, bmc: dict[str, Any], fw: str, body: bytes) -> Response:
        try:
            want = json.loads(body)["BmcRShim"]["BmcRShimEnabled"]
        except (ValueError, KeyError, TypeError):
            return Response(400, tree.base_error(fw, "PropertyMissing", "The property BmcRShimEnabled is a required "
                                                 "property and must be included in the request.",
                                                 ["BmcRShimEnabled"], "Warning"))
        if not isinstance(want, bool):
            return Response(400, tree.base_error(fw, "PropertyValueFormatError", "The value '%s' for the property "
                                                 "BmcRShimEnabled is not a format that the property can accept."
                                                 % want, [str(want), "BmcRShimEnabled"], "Warning"))
        rs = rshim.rshim_state(card)
        if want:
            # The BMC's rshim driver cannot open the device while the host's rshim holds it: the PATCH
            # answers 200 and the value stays false (dpu-update re-reads and reports the host rshim).
            if bmc["host_rshim"] != "Enabled":
                rs["owner"] = "bmc"
        elif rs.get("owner") == "bmc":
            rs["owner"] = None
        return self._success(fw)

    def _host_rshim(self, card: state.Card, bmc: dict[str, Any], fw: str, body: bytes) -> Response:
        try:
            want = json.loads(body)["HostRshim"]
        except (ValueError, KeyError, TypeError):
            return Response(400, tree.base_error(fw, "ActionParameterMissing", "The action HostRshim.Set requires "
                                                 "the parameter HostRshim to be present in the request body.",
                                                 ["HostRshim.Set", "HostRshim"]))
        if want not in ("Enabled", "Disabled"):
            return Response(400, tree.base_error(fw, "PropertyValueNotInList", "The value '%s' for the property "
                                                 "HostRshim is not in the list of acceptable values." % want,
                                                 [str(want), "HostRshim"], "Warning"))
        bmc["host_rshim"] = want
        rs = rshim.rshim_state(card)
        if want == "Enabled" and rs.get("owner") == "bmc":
            rs["owner"] = None  # the host's rshim takes the device over (exclusive, as on the card)
        return Response(204, None)

    # ------------------------------------------------------------ updates
    def _running(self, bmc: dict[str, Any]) -> dict[str, Any] | None:
        return next((t for t in bmc["tasks"] if t["state"] == "Running"), None)

    def _in_progress(self, fw: str) -> Response:
        msg = tree.message(UPDATE_MSG_PREFIX, "UpdateInProgress", "An update is in progress.", [], "OK", "None.")
        return Response(400, tree.error_body(msg))

    def _new_task(self, bmc: dict[str, Any], now: float, target_uri: str, body_text: str, kind: str,
                  image: dict[str, Any], duration: float, outcome: str, target: str) -> dict[str, Any]:
        tid = str(len(bmc["tasks"]))
        t = {"id": tid, "kind": kind, "target": target, "image": image, "start": now, "duration": duration,
             "outcome": outcome, "state": "Running", "status": "OK", "percent": 0, "start_time": iso(now),
             "end_time": None, "payload": {"HttpHeaders": [], "HttpOperation": "POST", "JsonBody": body_text,
                                           "TargetUri": target_uri},
             "messages": [self._task_msg("TaskStarted", "The task with Id '%s' has started." % tid, [tid], "OK")]}
        bmc["tasks"].append(t)
        return t

    @staticmethod
    def _task_msg(key: str, text: str, args: list[str], severity: str) -> dict[str, Any]:
        return tree.message(TASK_MSG_PREFIX, key, text, args, severity, "None.")

    @staticmethod
    def _update_msg(key: str, text: str, args: list[str], severity: str = "OK", resolution: str = "None."
                    ) -> dict[str, Any]:
        return tree.message(UPDATE_MSG_PREFIX, key, text, args, severity, resolution)

    def _accepted(self, t: dict[str, Any]) -> Response:
        uri = tree.V1 + "/TaskService/Tasks/" + t["id"]
        body = {"@odata.id": uri, "@odata.type": "#Task.v1_4_3.Task", "Id": t["id"], "TaskState": "Running",
                "TaskStatus": "OK"}
        return Response(202, body, {"Location": uri + "/Monitor"})

    def _push(self, node: state.Node, card: state.Card, bmc: dict[str, Any], fw: str, hdrs: dict[str, str],
              body: bytes, now: float) -> Response:
        ctype = hdrs.get("content-type", "")
        if not ctype.lower().startswith("multipart/form-data"):
            return Response(400, tree.base_error(fw, "MissingOrMalformedPart", "The multipart request contains "
                                                 "malformed parts or is missing required parts.", []))
        msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
        parts = {}
        for part in msg.iter_parts() if msg.is_multipart() else []:
            name = part.get_param("name", header="content-disposition")
            if name:
                parts[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
        if "UpdateFile" not in parts:
            return Response(400, tree.base_error(fw, "MissingOrMalformedPart", "The multipart request contains "
                                                 "malformed parts or is missing required parts.", []))
        try:
            params = json.loads(parts.get("UpdateParameters", (None, b"{}"))[1] or b"{}")
            if not isinstance(params, dict):
                raise ValueError
        except ValueError:
            return Response(400, tree.base_error(fw, "MalformedJSON", "The request body submitted was malformed JSON "
                                                 "and could not be parsed by the receiving service.", []))
        if self._running(bmc) is not None:
            return self._in_progress(fw)
        filename, data = parts["UpdateFile"]
        filename = filename or "image.fwpkg"
        with tempfile.NamedTemporaryFile(prefix="dpusim-bmc-", suffix=".img") as fh:
            fh.write(data)
            fh.flush()
            try:
                img = images.read_image(Path(fh.name))
            except images.ImageError:
                img = {"kind": None, "intact": False}
        kind = img.get("kind")
        member = PUSH_KINDS.get(kind or "")
        force = bool(params.get("ForceUpdate", False))
        targets = [str(x).rstrip("/").rsplit("/", 1)[-1] for x in params.get("Targets", []) or []]
        versions = tree.inventory_versions(fw, card.data, bmc)
        if not img.get("intact") or member is None:
            outcome = "abort:verify"
        elif targets and member not in targets:
            outcome = "abort:component"
        elif int(img.get("generation", 0)) != card.profile["generation"] or \
                (kind == "nic-fw" and img.get("device_id") != card.profile["pci_device_id"]):
            outcome = "abort:generation"
        elif kind == "nic-fw" and img.get("psid") != card.data["firmware"]["running"].get("psid"):
            outcome = "abort:generation"
        elif img.get("version") == versions.get(member) and not force:
            outcome = "identical"
        else:
            outcome = "ok"
        if faults.active(node, "bmc_task_aborts", card) is not None and outcome == "ok":
            outcome = "abort:apply"
        after_hang = outcome
        if faults.active(node, "bmc_task_hangs", card) is not None:
            outcome = "hang"
        t = self._new_task(bmc, now, tree.V1 + "/UpdateService/update-multipart",
                           json.dumps(params, sort_keys=True), "push", {
                               "name": filename, "kind": kind, "version": img.get("version")},
                           scaled({"bmc-fw": "bmc", "erot-fw": "erot"}.get(kind or "", "nic")), outcome,
                           member or "UpdateFile")
        t["outcome_after_hang"] = after_hang
        return self._accepted(t)

    def _simple_update(self, node: state.Node, card: state.Card, bmc: dict[str, Any], fw: str, body: bytes,
                       now: float) -> Response:
        try:
            data = json.loads(body)
            if not isinstance(data, dict):
                raise ValueError
        except ValueError:
            return Response(400, tree.base_error(fw, "MalformedJSON", "The request body submitted was malformed JSON "
                                                 "and could not be parsed by the receiving service.", []))
        for key in ("ImageURI", "TransferProtocol"):
            if key not in data:
                return Response(400, tree.base_error(fw, "ActionParameterMissing", "The action "
                                                     "UpdateService.SimpleUpdate requires the parameter %s to be "
                                                     "present in the request body." % key,
                                                     ["UpdateService.SimpleUpdate", key]))
        allowed = ["SCP", "HTTP", "HTTPS"] if fw == "24.10" else ["SCP"]
        proto = data["TransferProtocol"]
        if proto not in allowed:
            return Response(400, tree.base_error(fw, "PropertyValueNotInList", "The value '%s' for the property "
                                                 "TransferProtocol is not in the list of acceptable values." % proto,
                                                 [str(proto), "TransferProtocol"], "Warning"))
        targets = [str(x).rstrip("/").rsplit("/", 1)[-1] for x in data.get("Targets", []) or []]
        if targets != ["DPU_OS"]:
            return Response(400, tree.base_error(fw, "PropertyValueNotInList", "The value '%s' for the property "
                                                 "Targets is not in the list of acceptable values."
                                                 % data.get("Targets"), [str(data.get("Targets")), "Targets"],
                                                 "Warning"))
        if self._running(bmc) is not None:
            return self._in_progress(fw)
        image_uri = str(data["ImageURI"])
        name = image_uri.rsplit("/", 1)[-1]
        payload_json = json.dumps({k: v for k, v in data.items() if k != "Password"}, sort_keys=True)
        if not self._bmc_rshim(card):
            t = self._new_task(bmc, now, tree.V1 + "/UpdateService/Actions/UpdateService.SimpleUpdate",
                               payload_json, "bfb", {"name": name}, 0.0, "abort:rshim", "DPU_OS")
            return self._accepted(t)
        if proto == "SCP":
            outcome, img = "abort:scp", {}
        else:
            outcome, img = self._fetch_bfb(proto, image_uri)
        if outcome == "ok" and int(img.get("generation", 0)) != card.profile["generation"]:
            outcome = "abort:generation"
        if faults.active(node, "bmc_task_aborts", card) is not None and outcome == "ok":
            outcome = "abort:apply"
        after_hang = outcome
        if faults.active(node, "bmc_task_hangs", card) is not None:
            outcome = "hang"
        size = int(img.get("bundle_size", images.BUNDLE_SIZE)) if img else images.BUNDLE_SIZE
        transfer = size / (float(card.profile.get("rshim_push_mib_s", 11.7)) * (1 << 20)) * clock.scale()
        t = self._new_task(bmc, now, tree.V1 + "/UpdateService/Actions/UpdateService.SimpleUpdate", payload_json,
                           "bfb", {"name": name, "fields": {k: img.get(k) for k in
                                                            ("release", "doca", "nic_fw_version", "version")}},
                           transfer, outcome, "DPU_OS")
        t["outcome_after_hang"] = after_hang
        return self._accepted(t)

    @staticmethod
    def _fetch_bfb(proto: str, image_uri: str) -> tuple[str, dict[str, Any]]:
        """Fetch the BFB as the BMC does (ImageURI has no scheme: ``host:port//file``).

        A bf.cfg may follow the BFB in the same stream (dpu-update and bfb-install append it): the image
        is checked over its own header and payload only; the rest is the configuration, never stored."""
        url = "%s://%s" % (proto.lower(), image_uri.split("://", 1)[-1])
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:  # noqa: S310 (http/https only, scheme built above)
                raw = resp.read(MAX_BFB)
        except (OSError, ValueError):
            return "abort:transfer", {}
        end = raw.find(b"\n\n")
        size = 0
        if raw.startswith(images.MAGIC) and end > 0:
            for line in raw[:end].decode("utf-8", errors="replace").splitlines():
                if line.startswith("payload_size: ") and line[14:].strip().isdigit():
                    size = int(line[14:].strip())
        with tempfile.NamedTemporaryFile(prefix="dpusim-bmc-", suffix=".bfb") as fh:
            fh.write(raw[:end + 2 + size] if size else raw)
            fh.flush()
            try:
                img = images.read_image(Path(fh.name))
            except images.ImageError:
                return "abort:verify", {}
        if img.get("kind") != "bfb" or not img.get("intact"):
            return "abort:verify", img
        return "ok", img

    # ------------------------------------------------------------ resets
    def _reset_type(self, fw: str, body: bytes, allowed: list[str]) -> str | Response:
        try:
            value = json.loads(body or b"{}").get("ResetType")
        except (ValueError, AttributeError):
            return Response(400, tree.base_error(fw, "MalformedJSON", "The request body submitted was malformed JSON "
                                                 "and could not be parsed by the receiving service.", []))
        if value is None:
            value = allowed[0]
        if value not in allowed:
            return Response(400, tree.base_error(fw, "PropertyValueNotInList", "The value '%s' for the property "
                                                 "ResetType is not in the list of acceptable values." % value,
                                                 [str(value), "ResetType"], "Warning"))
        return value

    def _success(self, fw: str) -> Response:
        return Response(200, {"@Message.ExtendedInfo": [tree.base_message(fw, "Success", [])]})

    def _manager_reset(self, bmc: dict[str, Any], fw: str, body: bytes, now: float) -> Response:
        value = self._reset_type(fw, body, tree.MANAGER_RESETS)
        if isinstance(value, Response):
            return value
        bmc["away_until"] = now + scaled("bmc_restart")
        bmc["pending_restart"] = value
        return self._success(fw)

    def _system_reset(self, node: state.Node, card: state.Card, bmc: dict[str, Any], fw: str, body: bytes,
                      now: float) -> Response:
        value = self._reset_type(fw, body, tree.SYSTEM_RESETS[fw])
        if isinstance(value, Response):
            return value
        if value in ("GracefulRestart", "ForceRestart", "PowerCycle", "On", "ForceOn"):
            self._arm_reboot(node, card, bmc, now)
        elif value in ("ForceOff", "GracefulShutdown"):
            card.data.setdefault("arm", {})["state"] = "down"
            bmc["boot"] = {"last_state": "None", "oem_last_state": "", "time": iso(now), "steps": []}
        return Response(204, None)

    def _chassis_reset(self, node: state.Node, card: state.Card, bmc: dict[str, Any], fw: str, path: str,
                       body: bytes, now: float) -> Response:
        if path.startswith(tree.EROT):
            value = self._reset_type(fw, body, ["GracefulRestart"])
            if isinstance(value, Response):
                return value
            if "erot" in bmc["staged"]:
                bmc["versions"]["erot"] = bmc["staged"].pop("erot")
            return self._success(fw)
        value = self._reset_type(fw, body, tree.CARD_RESETS)
        if isinstance(value, Response):
            return value
        # Card power cycle: the NIC firmware on the active flash bank runs, mlxconfig "next" applies,
        # the Arm reboots (what `dpusim power-cycle` does on the host).
        fw_state = card.data["firmware"]
        fw_state["running"] = copy.deepcopy(fw_state["banks"][fw_state["active_bank"]])
        mc = card.data.get("mlxconfig", {})
        if "next" in mc:
            mc["current"] = copy.deepcopy(mc["next"])
        card.data["power_cycles"] = card.data.get("power_cycles", 0) + 1
        bmc.get("staged", {}).pop("nic", None)
        self._arm_reboot(node, card, bmc, now)
        return self._success(fw)

    def _arm_reboot(self, node: state.Node, card: state.Card, bmc: dict[str, Any], now: float) -> None:
        rshim.arm_boot(node, card, rshim.emmc_boot(card))
        self._walk_boot(bmc, now, card.data.get("arm", {}).get("state") == "running")

    def _walk_boot(self, bmc: dict[str, Any], now: float, comes_up: bool) -> None:
        """BootProgress after an Arm (re)boot: DMTF states, then the BlueField's OEM OsIsRunning."""
        step = scaled("bfb_boot") / 4.0
        steps = [[now, "SystemHardwareInitializationComplete", ""], [now + step, "OSBootStarted", ""]]
        if comes_up:
            steps.append([now + 2 * step, "OEM", "OsIsRunning"])
        bmc["boot"] = {"last_state": "PrimaryProcessorInitializationStarted", "oem_last_state": "", "time": iso(now),
                       "steps": steps}

    # ------------------------------------------------------------ progress
    def _advance(self, node: state.Node, card: state.Card, bmc: dict[str, Any], now: float) -> None:
        if bmc.get("pending_restart") and now >= bmc.get("away_until", 0.0):
            bmc.pop("pending_restart")
            if "bmc" in bmc["staged"]:
                bmc["versions"]["bmc"] = bmc["staged"].pop("bmc")
            bmc["sessions"] = {}
            bmc["last_reset_time"] = iso(bmc["away_until"])
            bmc["reset_at"] = bmc["away_until"]
        boot = bmc["boot"]
        while boot.get("steps") and boot["steps"][0][0] <= now:
            ts, last, oem = boot["steps"].pop(0)
            boot.update(last_state=last, oem_last_state=oem, time=iso(ts))
        for t in bmc["tasks"]:
            if t["state"] == "Running":
                self._advance_task(node, card, bmc, t, now)

    def _advance_task(self, node: state.Node, card: state.Card, bmc: dict[str, Any], t: dict[str, Any],
                      now: float) -> None:
        elapsed = now - t["start"]
        outcome = t["outcome"]
        name, target = t["image"]["name"], self._target_label(t)
        if outcome == "hang":
            if faults.active(node, "bmc_task_hangs", card) is not None:
                t["percent"] = min(40, int(100 * elapsed / t["duration"])) if t["duration"] else 40
                return
            # fault cleared: the task carries on from where it stood
            t["outcome"] = outcome = t.get("outcome_after_hang", "ok")
            t["start"] = now - t["duration"] * t["percent"] / 100.0
            elapsed = now - t["start"]
        if elapsed < t["duration"]:
            pct = int(100 * elapsed / t["duration"]) if t["duration"] else 0
            if pct // 20 > t["percent"] // 20 and t["kind"] == "bfb":
                t["messages"].append(self._update_msg(
                    "TransferringToComponent", "Image '%s' is being transferred to '%s'." % (name, target),
                    [name, target], "OK", "Transfer is %d%%. Please wait" % pct))
            t["percent"] = max(t["percent"], pct)
            return
        tid = t["id"]
        t["end_time"] = iso(t["start"] + t["duration"])
        if outcome == "ok":
            self._apply(node, card, bmc, t, now)
            t["messages"].append(self._update_msg("UpdateSuccessful", "Device '%s' successfully updated with image "
                                                  "'%s'." % (target, name), [target, name]))
            t["messages"].append(self._task_msg("TaskCompletedOK", "The task with Id '%s' has completed." % tid,
                                                [tid], "OK"))
            t.update(state="Completed", status="OK", percent=100)
            return
        if outcome == "identical":
            detail = "Component image is identical"
            t["messages"].append(tree.message(_resource_prefix(bmc), "ResourceErrorsDetected",
                                              "The resource property %s has detected errors of type '%s'."
                                              % (target, detail), [target, detail], "Warning",
                                              "Resolution dependent upon error type."))
            t["messages"].append(self._task_msg("TaskAborted", "The task with Id '%s' has completed with errors."
                                                % tid, [tid], "Critical"))
            t.update(state="Exception", status="Warning", percent=100)
            return
        reason = outcome.split(":", 1)[1]
        if reason in ("verify", "generation", "component"):
            t["messages"].append(self._update_msg("VerificationFailed", "Verification of image '%s' at '%s' failed."
                                                  % (name, target), [name, target], "Critical"))
            detail = {"verify": "Image integrity check failed", "generation": "Invalid FW Package",
                      "component": "Component mismatch"}[reason]
            t["messages"].append(tree.message(_resource_prefix(bmc), "ResourceErrorsDetected",
                                              "The resource property %s has detected errors of type '%s'."
                                              % (target, detail), [target, detail], "Warning",
                                              "Resolution dependent upon error type."))
        elif reason == "transfer":
            t["messages"].append(self._update_msg("TransferFailed", "Transfer of image '%s' to '%s' failed."
                                                  % (name, target), [name, target], "Critical",
                                                  "Check and restart server's web service"))
        elif reason == "scp":
            t["messages"].append(self._update_msg("TransferFailed", "Transfer of image '%s' to '%s' failed."
                                                  % (name, target), [name, target], "Critical",
                                                  "Please provide server's public key using PublicKeyExchange"))
        elif reason == "rshim":
            t["messages"].append(self._update_msg("TransferFailed", "Transfer of image '%s' to '%s' failed."
                                                  % (name, target), [name, target], "Critical",
                                                  "Enable the BMC rshim (PATCH Managers/Bluefield_BMC/Oem/Nvidia)"))
        else:
            t["messages"].append(self._update_msg("ApplyFailed", "Installation of image '%s' to '%s' failed."
                                                  % (name, target), [name, target], "Critical"))
        t["messages"].append(self._task_msg("TaskAborted", "The task with Id '%s' has completed with errors." % tid,
                                            [tid], "Critical"))
        t.update(state="Exception", status="Critical")

    @staticmethod
    def _target_label(t: dict[str, Any]) -> str:
        if t["kind"] == "bfb":
            return "/dev/rshim0/boot"
        return t["target"]

    def _apply(self, node: state.Node, card: state.Card, bmc: dict[str, Any], t: dict[str, Any], now: float) -> None:
        kind = t["image"].get("kind")
        version = t["image"].get("version")
        if t["kind"] == "bfb":
            fields = dict(t["image"]["fields"])
            img = {"release": fields.get("release") or images.bfb_release(fields.get("version") or ""),
                   "doca": fields.get("doca"), "nic_fw_version": fields.get("nic_fw_version")}
            dpu_os = card.data["dpu_os"]
            if not img["release"].startswith("bf-fwbundle-"):
                dpu_os["release"] = img["release"]
                dpu_os["doca"] = img["doca"] or dpu_os.get("doca")
            dpu_os["nic_fw_version"] = img["nic_fw_version"]
            fw_state = card.data["firmware"]
            flashed = fw_state["banks"][fw_state["active_bank"]]
            if img["nic_fw_version"] and img["nic_fw_version"] != flashed["version"]:
                new = copy.deepcopy(flashed)
                new.update(version=img["nic_fw_version"], release_date=None)
                inactive = 1 - fw_state["active_bank"]
                fw_state["banks"][inactive] = new
                fw_state["active_bank"] = inactive
                fw_state["running"] = copy.deepcopy(new)  # the installer's mlxfwreset (bfb_fw_reset profiles)
            self._arm_reboot(node, card, bmc, now)
            return
        if kind == "bmc-fw":
            bmc["staged"]["bmc"] = version  # runs after Manager.Reset
        elif kind == "erot-fw":
            bmc["staged"]["erot"] = version  # runs after Chassis.Reset of Bluefield_ERoT
            bmc["erot_copy_until"] = now + scaled("erot_copy")
        elif kind == "nic-fw":
            fw_state = card.data["firmware"]
            flashed = fw_state["banks"][fw_state["active_bank"]]
            new = copy.deepcopy(flashed)
            new.update(version=version, release_date=None)
            inactive = 1 - fw_state["active_bank"]
            fw_state["banks"][inactive] = new
            fw_state["active_bank"] = inactive
            bmc["staged"]["nic"] = version  # runs after the card's power cycle (Chassis/Card1 Chassis.Reset)


def _resource_prefix(bmc: dict[str, Any]) -> str:
    """ResourceEvent registry major.minor of this BMC generation (1.3 on BF-24.10, 1.2 on BF-23.10)."""
    return "ResourceEvent." + ".".join(tree.REGISTRY_VERSIONS[bmc["firmware"]]["ResourceEvent"].split(".")[:2])


def _dpu_mode(card: state.Card) -> bool:
    from dpusim import device
    return device.dpu_mode(card)


def make_image(kind: str, version: str, output: Path, *, generation: int = 3, corrupt: bool = False) -> Path:
    """A BMC or ERoT firmware package (``.fwpkg``) the twin BMC accepts: the twin image header of
    ``dpusim.images`` with ``kind: bmc-fw`` or ``erot-fw``. NIC firmware and BFBs: ``dpusim make-image``."""
    if kind not in ("bmc-fw", "erot-fw"):
        raise images.ImageError("dpusim bmc make-image: --kind must be bmc-fw or erot-fw, not %r" % kind)
    if kind == "bmc-fw" and tree.bmc_generation(version) is None:
        raise images.ImageError("dpusim bmc make-image: BMC version %r is not like BF-24.10-10" % version)
    payload = bytearray(hashlib.sha256(("%s|%s" % (kind, version)).encode()).digest() * 128)
    fields = {"kind": kind, "profile": "bluefield%d" % generation, "device_id": "bmc", "generation": generation,
              "psid": "", "version": version, "payload_size": len(payload),
              "sha256": hashlib.sha256(bytes(payload)).hexdigest()}
    if corrupt:
        for i in range(0, len(payload), 97):
            payload[i] ^= 0xFF
    head = images.MAGIC + "".join("%s: %s\n" % (k, v) for k, v in fields.items()).encode() + b"\n"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(head + bytes(payload))
    return output
