# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One way to talk to a BlueField BMC's Redfish service: Ansible's own HTTP client (``Request``).

- HTTP Basic credentials on every request, as NVIDIA's dpu-update does (no session to leak or expire).
- The first 401 stops the client for good (``RedfishAuthError``): it never sends the same password a
  second time, so a wrong password can never lock the account (the BMC locks after 4 or 10 failures).
- Every error names the BMC, the URI and what to do: ``RedfishUnreachable`` (refused, timeout, reset
  while restarting), ``RedfishTlsError`` (certificate not trusted), ``RedfishHttpError`` (4xx/5xx with
  the BMC's ``error.message`` verbatim).
- ``requests`` (attribute) lists ``METHOD URI`` of every request sent, for the modules' ``cmd``-like
  ``requests`` return value; bodies and credentials are never recorded.
- ``wait_task`` polls a Task until it ends or a deadline passes, riding out a BMC that restarts
  mid-poll; ``wait_until`` polls any condition the same way.

No AnsibleModule import: modules build a ``RedfishClient`` and hand it to their logic; tests can pass
a client pointed at the twin BMC (``dpusim bmc serve``) on loopback.
"""

from __future__ import annotations

import json
import ssl
import time
import uuid

from ansible.module_utils.six.moves import http_client
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import Request

DEFAULT_TIMEOUT = 30


class RedfishError(Exception):
    """Base class; ``str()`` is the message for fail_json."""

    def __init__(self, msg, status=None, body=None):
        super().__init__(msg)
        self.msg = msg
        self.status = status
        self.body = body


class RedfishAuthError(RedfishError):
    pass


class RedfishUnreachable(RedfishError):
    pass


class RedfishTlsError(RedfishError):
    pass


class RedfishHttpError(RedfishError):
    pass


def error_message(body):
    """The BMC's ``error.message`` (or the first ExtendedInfo message) of an error body, else ''."""
    if not isinstance(body, dict):
        return ""
    err = body.get("error")
    if isinstance(err, dict):
        infos = err.get("@Message.ExtendedInfo") or []
        if err.get("message"):
            return str(err["message"])
        if infos and isinstance(infos[0], dict):
            return str(infos[0].get("Message", ""))
    return ""


def base_url(address):
    """``bmc01``, ``10.0.0.5:8443``, ``https://bmc01`` -> ``https://...`` (no trailing slash)."""
    address = str(address).strip().rstrip("/")
    if "://" not in address:
        address = "https://" + address
    return address


class RedfishClient:
    def __init__(self, address, username, password, validate_certs=True, ca_path=None, timeout=DEFAULT_TIMEOUT,
                 sleep=time.sleep, clock=time.monotonic):
        self.base = base_url(address)
        self.address = address
        self.username = username
        self._password = password
        self.validate_certs = validate_certs
        self.ca_path = ca_path
        self.timeout = timeout
        self.requests = []
        self._sleep = sleep
        self._clock = clock
        self._auth_failed = None

    # ------------------------------------------------------------ raw requests
    def _scheme_hint(self):
        """A plain-HTTP address whose server closes the connection is most often an HTTPS port."""
        if self.base.startswith("http://"):
            return (" The address is plain http://: a BMC serves Redfish over HTTPS (port 443); if this one does, "
                    "write https:// in bluefleet_bmc.address.")
        return ""

    def _open(self, method, uri, data=None, headers=None, timeout=None):
        if self._auth_failed is not None:
            raise self._auth_failed
        url = uri if uri.startswith(("http://", "https://")) else self.base + uri
        self.requests.append("%s %s" % (method, uri))
        req = Request(url_username=self.username, url_password=self._password, force_basic_auth=True,
                      validate_certs=self.validate_certs, ca_path=self.ca_path, follow_redirects="none",
                      timeout=timeout or self.timeout, http_agent="bluefleet")
        hdrs = {"Accept": "application/json"}
        hdrs.update(headers or {})
        try:
            resp = req.open(method, url, data=data, headers=hdrs)
            raw = resp.read()
            status = resp.getcode()
            resp_headers = dict(resp.headers.items())
        except HTTPError as exc:
            raw = exc.read() if hasattr(exc, "read") else b""
            body = _json_or_none(raw)
            if exc.code == 401:
                self._auth_failed = RedfishAuthError(
                    "BMC %s refused the credentials of user %r (HTTP 401: %s) on %s %s; stopped after this first "
                    "failure so the account is not locked. Fix bluefleet_bmc.username/password (vault or "
                    "BLUEFLEET_BMC_PASSWORD); if the message says locked out, wait for the lockout "
                    "(AccountLockoutDuration, 600 s) before the next try."
                    % (self.address, self.username, error_message(body) or "no message", method, uri),
                    status=401, body=body)
                raise self._auth_failed from None
            raise RedfishHttpError("BMC %s answered %s %s with HTTP %d: %s"
                                   % (self.address, method, uri, exc.code, error_message(body) or exc.reason),
                                   status=exc.code, body=body) from None
        except URLError as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(reason) or \
                    "certificate" in str(reason).lower():
                raise RedfishTlsError(
                    "BMC %s: TLS certificate not trusted (%s). Give bluefleet_bmc.ca_path (the BMC's certificate "
                    "or its CA) or, for a BMC with its factory self-signed certificate, validate_certs: false."
                    % (self.address, reason)) from None
            raise RedfishUnreachable("BMC %s is unreachable on %s %s: %s. Check bluefleet_bmc.address, the "
                                     "management network and that the BMC is powered (a BMC that restarts is "
                                     "away for about 2 minutes).%s"
                                     % (self.address, method, uri, reason, self._scheme_hint())) from None
        except (OSError, http_client.HTTPException) as exc:
            if isinstance(exc, ssl.SSLError):
                raise RedfishTlsError("BMC %s: TLS handshake failed (%s). Is it HTTPS on that port? Check "
                                      "bluefleet_bmc.address (https://HOST:PORT) and validate_certs/ca_path."
                                      % (self.address, exc)) from None
            raise RedfishUnreachable("BMC %s is unreachable on %s %s: %s. Check bluefleet_bmc.address and the "
                                     "management network; a restarting BMC is away for about 2 minutes.%s"
                                     % (self.address, method, uri, exc, self._scheme_hint())) from None
        return status, _json_or_none(raw), resp_headers

    def get(self, uri):
        status, body, _headers = self._open("GET", uri)
        if not isinstance(body, dict):
            raise RedfishHttpError("BMC %s answered GET %s with HTTP %d and no JSON object"
                                   % (self.address, uri, status), status=status)
        return body

    def post(self, uri, payload):
        status, body, headers = self._open("POST", uri, data=json.dumps(payload),
                                           headers={"Content-Type": "application/json"})
        return status, body, headers

    def patch(self, uri, payload):
        status, body, headers = self._open("PATCH", uri, data=json.dumps(payload),
                                           headers={"Content-Type": "application/json"})
        return status, body, headers

    def post_multipart(self, uri, parameters, filename, content, timeout=None):
        """POST multipart/form-data: ``UpdateParameters`` (JSON) and ``UpdateFile`` (octet-stream)."""
        boundary = "bluefleet-" + uuid.uuid4().hex
        head = ("--%s\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\n"
                "Content-Type: application/json\r\n\r\n%s\r\n"
                "--%s\r\nContent-Disposition: form-data; name=\"UpdateFile\"; filename=\"%s\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n"
                % (boundary, json.dumps(parameters), boundary, filename.replace('"', ""))).encode()
        data = head + content + ("\r\n--%s--\r\n" % boundary).encode()
        return self._open("POST", uri, data=data, timeout=timeout,
                          headers={"Content-Type": "multipart/form-data; boundary=%s" % boundary})

    # ------------------------------------------------------------ waiting
    def wait_until(self, probe, timeout, interval, what):
        """Call ``probe()`` until it returns a truthy value or ``timeout`` seconds pass.

        A BMC that drops connections meanwhile (restarting) is retried; the last value is returned
        with ``timed_out`` True when the deadline passed. ``probe`` may raise ``RedfishUnreachable``.
        """
        deadline = self._clock() + timeout
        last = None
        while True:
            try:
                last = probe()
                if last:
                    return last, False
            except RedfishUnreachable:
                pass
            if self._clock() >= deadline:
                return last, True
            self._sleep(interval)

    def wait_task(self, task_uri, timeout, interval, progress=None):
        """Poll a Task until it leaves Running (or New/Starting/...); returns ``(task, timed_out)``."""
        def probe():
            body = self.get(task_uri)
            if progress is not None:
                progress(body)
            return body if body.get("TaskState") not in ("New", "Starting", "Running", "Pending", "Stopping",
                                                         "Suspended", "Interrupted") else None
        task, timed_out = self.wait_until(probe, timeout, interval, "task %s" % task_uri)
        if timed_out:
            try:
                task = self.get(task_uri)
            except RedfishUnreachable:
                task = None
        return task, timed_out


def _json_or_none(raw):
    if not raw:
        return None
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None


def bmc_spec():
    """The ``bmc`` option every bmc_* module takes (documented in doc_fragments/bmc.py)."""
    from ansible.module_utils.basic import env_fallback
    return dict(type="dict", required=True, options=dict(
        address=dict(type="str", required=True),
        username=dict(type="str", default="root"),
        password=dict(type="str", required=True, no_log=True, fallback=(env_fallback, ["BLUEFLEET_BMC_PASSWORD"])),
        validate_certs=dict(type="bool", default=True),
        ca_path=dict(type="path"),
        timeout=dict(type="int", default=DEFAULT_TIMEOUT),
    ))


def client_from(params):
    """A RedfishClient from a module's validated ``bmc`` option."""
    return RedfishClient(params["address"], params["username"], params["password"],
                         validate_certs=params["validate_certs"], ca_path=params["ca_path"],
                         timeout=params["timeout"])
