# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bmc_bfb
short_description: Install a BFB (and optional bf.cfg) on a BlueField-3 through its BMC (Redfish SimpleUpdate)
version_added: 0.2.0
description:
  - Out-of-band BFB install, as NVIDIA's dpu-update performs it - check that the BMC offers SimpleUpdate over
    HTTP (BF-24.x BMCs; BF-23.10 offers SCP only), make the BMC own the DPU's rshim (PATCH
    C(BmcRShimEnabled); refused while the host's rshim holds it), C(POST UpdateService.SimpleUpdate) with
    C(TransferProtocol=HTTP) and the image URI, poll the task (the BMC streams the BFB into the rshim), then
    poll the DPU system until C(BootProgress.OemLastState) is C(OsIsRunning) and read C(DPU_OS) again.
  - The BFB is served to the BMC over HTTP by the module itself (a one-file server on O(serve_address)
    for the time of the transfer), or fetched by the BMC from O(image_url). With O(bf_cfg) the bf.cfg is
    appended to the served BFB (as dpu-update and bfb-install do); its content is never logged or returned.
  - Idempotent when O(version) is given - a DPU already running that DPU_OS version is left alone.
author:
  - bluefleet developers (!UNKNOWN)
extends_documentation_fragment:
  - bluefleet.dpu.bmc
options:
  bfb:
    description: The BFB on the machine that runs the module; served to the BMC over HTTP.
    type: path
  image_url:
    description: C(http://HOST:PORT/PATH) where the BMC can fetch the BFB itself (instead of O(bfb)).
    type: str
  bf_cfg:
    description: A bf.cfg file appended to the BFB (only with O(bfb)). Never logged.
    type: path
  version:
    description:
      - The DPU_OS version the BFB installs, as FirmwareInventory/DPU_OS shows it
        (e.g. C(bf-bundle-2.9.2-31_24.11_ubuntu-22.04_prod)). Equal to the running one - no change.
    type: str
  serve_address:
    description: Address the module's HTTP server listens on, for O(bfb).
    type: str
    default: 0.0.0.0
  advertise_address:
    description:
      - Address (C(HOST) or C(HOST:PORT)) the BMC reaches the module's HTTP server at. Required with O(bfb)
        unless O(serve_address) is a specific address.
    type: str
  task_timeout:
    description: Seconds to wait for the transfer task (dpu-update waits 20 minutes).
    type: int
    default: 1200
  boot_timeout:
    description: Seconds to wait for C(OsIsRunning) after the transfer (dpu-update waits 40 minutes).
    type: int
    default: 2400
  poll_interval:
    description: Seconds between polls.
    type: int
    default: 10
attributes:
  check_mode:
    description: Reads the BMC, runs the preflight checks and says whether it would install; changes nothing.
    support: full
  diff_mode:
    description: Shows DPU_OS before and after.
    support: full
  platform:
    description: Any host that reaches the BMC and that the BMC reaches back over HTTP (usually the controller).
    platforms: posix
    support: full
seealso:
  - module: bluefleet.dpu.bfb_install
  - module: bluefleet.dpu.bmc_info
"""

EXAMPLES = r"""
- name: Reinstall the DPU OS out of band, the controller serving the BFB
  bluefleet.dpu.bmc_bfb:
    bmc: "{{ bluefleet_bmc }}"
    bfb: /srv/bfb/bf-bundle-2.9.2-31_24.11_ubuntu-22.04_prod.bfb
    bf_cfg: /srv/bfb/bf.cfg
    version: bf-bundle-2.9.2-31_24.11_ubuntu-22.04_prod
    advertise_address: 10.0.0.10
  delegate_to: localhost
"""

RETURN = r"""
changed:
  description: True when the BFB was (or, in check mode, would be) installed.
  returned: always
  type: bool
before:
  description: DPU_OS version before.
  returned: always
  type: str
after:
  description: DPU_OS version after.
  returned: always
  type: str
task:
  description: The BMC's transfer task (id, state, status, percent, messages).
  returned: when a BFB was sent
  type: dict
boot_progress:
  description: BootProgress of the DPU system at the end.
  returned: always
  type: dict
preflight:
  description: The checks run before sending (check, ok, detail, fix).
  returned: always
  type: list
  elements: dict
requests:
  description: The Redfish requests made, C(METHOD URI).
  returned: always
  type: list
  elements: str
cmd:
  description: The Redfish requests made, C(METHOD URI) in order (no bodies, no credentials), as RV(requests).
  returned: always
  type: list
  elements: str
tool_version:
  description: The BMC firmware that answered (Manager C(FirmwareVersion)), or null when the BMC did not say.
  returned: success
  type: str
  sample: BF-24.10-10
"""

import functools
import http.server
import os
import shutil
import tempfile
import threading

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _bmc as rules
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import write_concatenation
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._redfish import RedfishError, bmc_spec, client_from
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import without_unasked_diff


def bmc_firmware_version(client):
    """The BMC's firmware version (the Redfish service the module drives), or None when it does not answer."""
    try:
        return client.get(rules.MANAGER).get("FirmwareVersion")
    except RedfishError:
        return None


class Failure(Exception):
    def __init__(self, msg, **extra):
        super().__init__(msg)
        self.msg = msg
        self.extra = extra


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass


def serve_file(path, address):
    """Serve the one file ``path`` from a private directory; returns (server, directory)."""
    directory = tempfile.mkdtemp(prefix="bluefleet-bmc-bfb-")
    os.chmod(directory, 0o700)
    handler = functools.partial(_Quiet, directory=directory)
    httpd = http.server.ThreadingHTTPServer((address, 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, directory


def stage(bfb, bf_cfg, directory):
    name = os.path.basename(bfb)
    target = os.path.join(directory, name)
    if bf_cfg:
        write_concatenation(target, (bfb, bf_cfg), mode=0o600)
    else:
        os.symlink(os.path.abspath(bfb), target)
    return name


def run(module, client):
    p = module.params
    bmc = p["bmc"]["address"]
    for key in ("bfb", "bf_cfg"):
        if p[key] and not os.path.isfile(p[key]):
            raise Failure("install BFB via BMC %s failed: %s %s does not exist on the machine running the task"
                          % (bmc, key, p[key]))
    if p["bfb"] and not p["advertise_address"] and p["serve_address"] in ("0.0.0.0", "::", ""):
        raise Failure("install BFB via BMC %s: give advertise_address, the address at which the BMC reaches "
                      "this machine (the module serves the BFB over HTTP from %s)" % (bmc, p["serve_address"]))
    before = client.get(rules.FW_INV + "/DPU_OS").get("Version")
    update_service = client.get(rules.V1 + "/UpdateService")
    manager = client.get(rules.MANAGER)
    manager_oem = client.get(rules.MANAGER + "/Oem/Nvidia")
    system_oem = client.get(rules.SYSTEM + "/Oem/Nvidia")
    erot = client.get(rules.EROT)
    checks = rules.preflight(update_service, erot, manager_oem, system_oem, manager, want_bfb=True)
    result = {"before": before, "after": before, "preflight": checks, "task": None, "boot_progress": {}}
    if p["version"] and p["version"] == before:
        result["boot_progress"] = client.get(rules.SYSTEM).get("BootProgress") or {}
        result["changed"] = False
        return result
    failed = [c for c in checks if not c["ok"]]
    if failed:
        raise Failure("install BFB via BMC %s refused before sending: %s" % (
            bmc, "; ".join("%s (%s): %s" % (c["check"], c["detail"], c["fix"]) for c in failed)), **result)
    if module.check_mode:
        result.update(changed=True, after=p["version"] or "(DPU_OS of %s)" % (p["bfb"] or p["image_url"]))
        return result
    if not (manager_oem.get("BmcRShim") or {}).get("BmcRShimEnabled"):
        client.patch(rules.MANAGER + "/Oem/Nvidia", {"BmcRShim": {"BmcRShimEnabled": True}})
        enabled, _timed_out = client.wait_until(
            lambda: (client.get(rules.MANAGER + "/Oem/Nvidia").get("BmcRShim") or {}).get("BmcRShimEnabled"),
            30, 2, "BMC rshim")
        if not enabled:
            raise Failure("install BFB via BMC %s failed: the BMC could not take the DPU's rshim (BmcRShimEnabled "
                          "stays false); stop the rshim service on the host (systemctl stop rshim) and re-run" % bmc,
                          **result)
    httpd = directory = None
    try:
        if p["bfb"]:
            httpd, directory = serve_file(p["bfb"], p["serve_address"])
            name = stage(p["bfb"], p["bf_cfg"], directory)
            host = p["advertise_address"] or p["serve_address"]
            if ":" not in host:
                host = "%s:%d" % (host, httpd.server_address[1])
            image_uri = "%s//%s" % (host, name)  # no scheme: the BMC adds it from TransferProtocol
        else:
            image_uri = p["image_url"].split("://", 1)[-1]
        payload = {"TransferProtocol": "HTTP", "ImageURI": image_uri,
                   "Targets": ["redfish/v1/UpdateService/FirmwareInventory/DPU_OS"]}
        status, body, _headers = client.post(rules.V1 + "/UpdateService/Actions/UpdateService.SimpleUpdate", payload)
        task_uri = (body or {}).get("@odata.id")
        if status not in (100, 200, 202) or not task_uri:
            raise Failure("install BFB via BMC %s failed: SimpleUpdate answered HTTP %s without a task" % (bmc, status),
                          **result)
        task, timed_out = client.wait_task(task_uri, p["task_timeout"], p["poll_interval"])
    finally:
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if directory:
            shutil.rmtree(directory, ignore_errors=True)
    if task is not None:
        result["task"] = {"id": task.get("Id"), "state": task.get("TaskState"), "status": task.get("TaskStatus"),
                          "percent": task.get("PercentComplete"), "messages": rules.task_messages(task)}
    if timed_out:
        raise Failure("install BFB via BMC %s: transfer task %s still %s after %d s; re-run when it has ended, or "
                      "raise task_timeout" % (bmc, task_uri, (task or {}).get("TaskState"), p["task_timeout"]),
                      **result)
    if rules.task_outcome(task) != "ok":
        fix = rules.task_fix(task, "BFB", "bfb")
        raise Failure("install BFB via BMC %s failed: task %s ended %s/%s: %s%s" % (
            bmc, task.get("Id"), task.get("TaskState"), task.get("TaskStatus"),
            " | ".join(rules.task_messages(task)), ". Fix: %s" % fix if fix else ""), **result)

    def os_running():
        progress = client.get(rules.SYSTEM).get("BootProgress") or {}
        return progress if progress.get("OemLastState") == "OsIsRunning" else None

    progress, timed_out = client.wait_until(os_running, p["boot_timeout"], p["poll_interval"], "OsIsRunning")
    result["boot_progress"] = progress or client.get(rules.SYSTEM).get("BootProgress") or {}
    result["after"] = client.get(rules.FW_INV + "/DPU_OS").get("Version")
    if timed_out:
        raise Failure("install BFB via BMC %s: the DPU did not reach OsIsRunning within %d s (BootProgress %s); "
                      "look at the DPU console (rshim log) or raise boot_timeout"
                      % (bmc, p["boot_timeout"], result["boot_progress"]), **result)
    if p["version"] and result["after"] != p["version"]:
        raise Failure("install BFB via BMC %s: the DPU runs %s, not %s; check that the BFB is the one for that "
                      "version" % (bmc, result["after"], p["version"]), **result)
    result["changed"] = True
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            bmc=bmc_spec(),
            bfb=dict(type="path"),
            image_url=dict(type="str"),
            bf_cfg=dict(type="path"),
            version=dict(type="str"),
            serve_address=dict(type="str", default="0.0.0.0"),
            advertise_address=dict(type="str"),
            task_timeout=dict(type="int", default=1200),
            boot_timeout=dict(type="int", default=2400),
            poll_interval=dict(type="int", default=10),
        ),
        required_one_of=[("bfb", "image_url")],
        mutually_exclusive=[("bfb", "image_url"), ("image_url", "bf_cfg")],
        supports_check_mode=True,
    )
    client = client_from(module.params["bmc"])
    try:
        result = run(module, client)
    except Failure as exc:
        module.fail_json(msg=exc.msg, cmd=client.requests, requests=client.requests, **exc.extra)
    except RedfishError as exc:
        module.fail_json(msg="install BFB via BMC %s failed: %s" % (module.params["bmc"]["address"], exc.msg),
                         cmd=client.requests, requests=client.requests)
    result["tool_version"] = bmc_firmware_version(client)
    result["diff"] = {"before": {"DPU_OS": result["before"]}, "after": {"DPU_OS": result["after"]}}
    module.exit_json(cmd=client.requests, requests=client.requests, **without_unasked_diff(module, result))


if __name__ == "__main__":
    main()
