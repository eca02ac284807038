"""Behaviour of the twin BMC (dpusim.bmc.service): auth and lockout, update tasks, BFB over rshim, resets.

Time: DPUSIM_TIME_SCALE=1 (hardware seconds) and a hand-stepped clock (``clock.step(s)``).
"""

from __future__ import annotations

import base64
import functools
import http.server
import json
import threading
import urllib.error
import urllib.request

import pytest

from dpusim import faults, images, state
from dpusim.bmc import server, service, tree


class Clock:
    def __init__(self):
        self.t = 1_700_000_000.0

    def __call__(self):
        return self.t

    def step(self, seconds):
        self.t += seconds


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setenv("DPUSIM_TIME_SCALE", "1")
    monkeypatch.setattr(service, "wall_clock", c)
    return c


@pytest.fixture
def bmc(tmp_path, clock):
    root = tmp_path / "dpu"
    state.init_node(root, ["bluefield3"], "dpu", [None])
    return service.Bmc(root, password="s3cret-Pass1")


def basic(user="root", password="s3cret-Pass1"):
    return {"Authorization": "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()}


def get(bmc, uri, headers=None):
    return bmc.handle("GET", uri, headers or basic(), b"")


def multipart(image: bytes, params: dict, filename="image.fwpkg"):
    boundary = "dpusimboundary42"
    body = (
        "--%s\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\nContent-Type: application/json\r\n\r\n"
        "%s\r\n--%s\r\nContent-Disposition: form-data; name=\"UpdateFile\"; filename=\"%s\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\n" % (boundary, json.dumps(params), boundary, filename)
    ).encode() + image + ("\r\n--%s--\r\n" % boundary).encode()
    return dict(basic(), **{"Content-Type": "multipart/form-data; boundary=" + boundary}), body


def push(bmc, image: bytes, params=None):
    headers, body = multipart(image, params or {"ForceUpdate": False})
    return bmc.handle("POST", tree.V1 + "/UpdateService/update-multipart", headers, body)


def task(bmc, resp):
    return get(bmc, resp.body["@odata.id"]).body


def message_ids(t):
    return [m["MessageId"].rsplit(".", 1)[1] for m in t["Messages"]]


# ------------------------------------------------------------------ authentication
def test_wrong_password_is_401_and_the_lockout_follows_the_served_threshold(bmc, clock):
    threshold = get(bmc, tree.V1 + "/AccountService").body["AccountLockoutThreshold"]
    assert threshold == 10  # BF-24.10 (the BF-23.10 captures serve 4)
    for _ in range(threshold - 1):
        resp = get(bmc, tree.V1, basic(password="wrong"))
        assert resp.code == 401
        assert "Invalid username or password" in resp.body["error"]["message"]
    assert get(bmc, tree.V1).code == 200  # a success resets the count
    for _ in range(threshold):
        get(bmc, tree.V1, basic(password="wrong"))
    locked = get(bmc, tree.V1)  # even the right password, during the lockout
    assert locked.code == 401 and "Account temporarily locked out" in locked.body["error"]["message"]
    clock.step(599)
    assert get(bmc, tree.V1).code == 401
    clock.step(2)
    assert get(bmc, tree.V1).code == 200


def test_lockout_after_four_failures_on_bf_23_10(tmp_path, clock):
    root = tmp_path / "old"
    state.init_node(root, ["bluefield3"], "dpu", [None])
    old = service.Bmc(root, password="s3cret-Pass1", firmware="23.10")
    for _ in range(4):
        assert get(old, tree.V1, basic(password="nope")).code == 401
    assert "locked out" in get(old, tree.V1).body["error"]["message"]


def test_sessions_login_token_and_logout(bmc):
    resp = bmc.handle("POST", "/login", {}, json.dumps({"username": "root", "password": "s3cret-Pass1"}).encode())
    assert resp.code == 200
    token = resp.body["token"]
    assert get(bmc, tree.V1 + "/Systems", {"X-Auth-Token": token}).code == 200
    created = bmc.handle("POST", tree.V1 + "/SessionService/Sessions", {},
                         json.dumps({"UserName": "root", "Password": "s3cret-Pass1"}).encode())
    assert created.code == 201 and created.headers["X-Auth-Token"]
    members = get(bmc, tree.V1 + "/SessionService/Sessions").body["Members"]
    assert {"@odata.id": created.headers["Location"]} in members
    assert bmc.handle("DELETE", created.headers["Location"], basic(), b"").code == 200
    assert get(bmc, tree.V1, {"X-Auth-Token": created.headers["X-Auth-Token"]}).code == 401
    assert get(bmc, tree.V1, {"X-Auth-Token": "forged"}).code == 401


# ------------------------------------------------------------------ multipart push
def test_bmc_push_runs_completes_and_activates_on_manager_reset(bmc, clock, tmp_path):
    image = service.make_image("bmc-fw", "BF-24.10-33", tmp_path / "bmc.fwpkg").read_bytes()
    resp = push(bmc, image)
    assert resp.code == 202 and resp.body["TaskState"] == "Running"
    second = push(bmc, image)
    assert second.code == 400 and "An update is in progress" in second.body["error"]["message"]
    clock.step(100)
    running = task(bmc, resp)
    assert running["TaskState"] == "Running" and 0 < running["PercentComplete"] < 100
    assert running["Payload"]["TargetUri"] == tree.V1 + "/UpdateService/update-multipart"
    clock.step(300)
    done = task(bmc, resp)
    assert (done["TaskState"], done["TaskStatus"], done["PercentComplete"]) == ("Completed", "OK", 100)
    assert message_ids(done) == ["TaskStarted", "UpdateSuccessful", "TaskCompletedOK"]
    assert get(bmc, tree.FW_INV + "/BMC_Firmware").body["Version"] == "BF-24.10-10"  # staged, not running
    reset = bmc.handle("POST", tree.MANAGER + "/Actions/Manager.Reset", basic(),
                       json.dumps({"ResetType": "GracefulRestart"}).encode())
    assert reset.code == 200
    with pytest.raises(service.Away):  # the BMC is away while it restarts
        get(bmc, tree.V1)
    clock.step(121)
    assert get(bmc, tree.FW_INV + "/BMC_Firmware").body["Version"] == "BF-24.10-33"


def test_identical_image_is_skipped_unless_forced(bmc, clock, tmp_path):
    image = service.make_image("bmc-fw", "BF-24.10-10", tmp_path / "same.fwpkg").read_bytes()
    resp = push(bmc, image)
    clock.step(400)
    t = task(bmc, resp)
    assert t["TaskState"] == "Exception"
    assert any("Component image is identical" in m["Message"] for m in t["Messages"])
    forced = push(bmc, image, {"ForceUpdate": True})
    clock.step(400)
    assert task(bmc, forced)["TaskState"] == "Completed"


@pytest.mark.parametrize("case", ["corrupt", "bluefield2", "wrong_target"])
def test_bad_images_abort_with_registry_messages_and_change_nothing(bmc, clock, tmp_path, case):
    if case == "corrupt":
        image = service.make_image("bmc-fw", "BF-24.10-33", tmp_path / "c.fwpkg", corrupt=True).read_bytes()
        params = {}
    elif case == "bluefield2":
        image = images.make_image("nic-fw", "bluefield2", "24.43.1014", tmp_path / "bf2.bin").read_bytes()
        params = {}
    else:
        image = service.make_image("erot-fw", "00.02.0200.0000_n02", tmp_path / "e.fwpkg").read_bytes()
        params = {"Targets": [tree.FW_INV + "/BMC_Firmware"]}
    before = state.load_node(bmc.root).cards[0].data
    resp = push(bmc, image, params)
    clock.step(400)
    t = task(bmc, resp)
    assert (t["TaskState"], t["TaskStatus"]) == ("Exception", "Critical")
    assert message_ids(t)[0] == "TaskStarted" and message_ids(t)[-1] == "TaskAborted"
    assert "VerificationFailed" in message_ids(t)
    after = state.load_node(bmc.root).cards[0].data
    assert after["firmware"] == before["firmware"] and after["bmc"]["versions"] == before["bmc"]["versions"]


def test_nic_firmware_is_staged_and_activates_only_on_the_card_power_cycle(bmc, clock, tmp_path):
    image = images.make_image("nic-fw", "bluefield3", "32.43.1014", tmp_path / "nic.bin").read_bytes()
    resp = push(bmc, image)
    clock.step(300)
    assert task(bmc, resp)["TaskState"] == "Completed"
    assert get(bmc, tree.FW_INV + "/DPU_NIC").body["Version"] == "32.41.1000"
    bmc.handle("POST", tree.SYSTEM + "/Actions/ComputerSystem.Reset", basic(), b'{"ResetType": "GracefulRestart"}')
    assert get(bmc, tree.FW_INV + "/DPU_NIC").body["Version"] == "32.41.1000"  # an Arm reboot does not
    assert bmc.handle("POST", tree.CARD + "/Actions/Chassis.Reset", basic(), b'{"ResetType": "PowerCycle"}').code == 200
    assert get(bmc, tree.FW_INV + "/DPU_NIC").body["Version"] == "32.43.1014"


def test_fault_task_hangs_and_task_aborts(bmc, clock, tmp_path):
    image = service.make_image("erot-fw", "00.02.0200.0000_n02", tmp_path / "e.fwpkg").read_bytes()
    with state.open_node(bmc.root) as node:
        faults.set_fault(node, "bmc_task_hangs", {})
    resp = push(bmc, image)
    clock.step(10_000)
    t = task(bmc, resp)
    assert t["TaskState"] == "Running" and t["PercentComplete"] == 40
    assert push(bmc, image).code == 400  # it still owns the update service
    with state.open_node(bmc.root) as node:
        faults.clear_fault(node, "bmc_task_hangs")
    assert task(bmc, resp)["PercentComplete"] == 40  # cleared: it carries on from 40 % ...
    clock.step(60)
    assert task(bmc, resp)["TaskState"] == "Completed"  # ... and ends
    with state.open_node(bmc.root) as node:
        faults.set_fault(node, "bmc_task_aborts", {})
    resp = push(bmc, service.make_image("erot-fw", "00.02.0201.0000_n02", tmp_path / "f.fwpkg").read_bytes())
    clock.step(100)
    t = task(bmc, resp)
    assert t["TaskState"] == "Exception" and "ApplyFailed" in message_ids(t)


def test_fault_unreachable(bmc):
    with state.open_node(bmc.root) as node:
        faults.set_fault(node, "bmc_unreachable", {})
    with pytest.raises(service.Away):
        get(bmc, tree.V1)


# ------------------------------------------------------------------ rshim and BFB
def test_bmc_rshim_is_exclusive_with_the_host_rshim(bmc):
    nv = tree.MANAGER + "/Oem/Nvidia"
    assert get(bmc, nv).body == {"BmcRShim": {"BmcRShimEnabled": False}}
    bmc.handle("POST", tree.SYSTEM + "/Oem/Nvidia/Actions/HostRshim.Set", basic(), b'{"HostRshim": "Enabled"}')
    assert bmc.handle("PATCH", nv, basic(), b'{"BmcRShim": {"BmcRShimEnabled": true}}').code == 200
    assert get(bmc, nv).body["BmcRShim"]["BmcRShimEnabled"] is False  # the host holds it
    bmc.handle("POST", tree.SYSTEM + "/Oem/Nvidia/Actions/HostRshim.Set", basic(), b'{"HostRshim": "Disabled"}')
    bmc.handle("PATCH", nv, basic(), b'{"BmcRShim": {"BmcRShimEnabled": true}}')
    assert get(bmc, nv).body["BmcRShim"]["BmcRShimEnabled"] is True
    assert state.load_node(bmc.root).cards[0].data["rshim"]["owner"] == "bmc"


@pytest.fixture
def http_dir(tmp_path):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield tmp_path, "127.0.0.1:%d" % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def simple_update(bmc, image_uri):
    body = {"TransferProtocol": "HTTP", "ImageURI": image_uri, "Targets": ["redfish/v1/UpdateService/FirmwareInventory/"
                                                                          "DPU_OS"]}
    return bmc.handle("POST", tree.V1 + "/UpdateService/Actions/UpdateService.SimpleUpdate", basic(),
                      json.dumps(body).encode())


def test_bfb_through_the_bmc_rshim_installs_and_boots_to_os_is_running(bmc, clock, http_dir):
    folder, addr = http_dir
    images.make_image("bfb", "bluefield3", "2.9.2-31_24.11", folder / "new.bfb", nic_fw_version="32.43.2026")
    refused = simple_update(bmc, addr + "//new.bfb")
    clock.step(1)
    assert task(bmc, refused)["TaskState"] == "Exception"  # BMC rshim not enabled yet
    bmc.handle("PATCH", tree.MANAGER + "/Oem/Nvidia", basic(), b'{"BmcRShim": {"BmcRShimEnabled": true}}')
    resp = simple_update(bmc, addr + "//new.bfb")
    assert resp.code == 202
    clock.step(60)
    assert "TransferringToComponent" in message_ids(task(bmc, resp))
    clock.step(100)
    assert task(bmc, resp)["TaskState"] == "Completed"
    assert get(bmc, tree.SYSTEM).body["BootProgress"].get("OemLastState") != "OsIsRunning"
    clock.step(60)
    assert get(bmc, tree.SYSTEM).body["BootProgress"] == {
        "LastState": "OEM", "LastStateTime": service.iso(clock.t - 60 + 50), "OemLastState": "OsIsRunning"}
    assert get(bmc, tree.FW_INV + "/DPU_OS").body["Version"] == images.bfb_release("2.9.2-31_24.11")
    assert get(bmc, tree.FW_INV + "/DPU_NIC").body["Version"] == "32.43.2026"


def test_bluefield2_bfb_aborts_and_leaves_the_dpu_os(bmc, clock, http_dir):
    folder, addr = http_dir
    images.make_image("bfb", "bluefield2", "2.9.2-31_24.11", folder / "bf2.bfb")
    bmc.handle("PATCH", tree.MANAGER + "/Oem/Nvidia", basic(), b'{"BmcRShim": {"BmcRShimEnabled": true}}')
    before = get(bmc, tree.FW_INV + "/DPU_OS").body["Version"]
    resp = simple_update(bmc, addr + "//bf2.bfb")
    clock.step(400)
    t = task(bmc, resp)
    assert t["TaskState"] == "Exception"
    assert any("Invalid FW Package" in m["Message"] for m in t["Messages"])
    assert get(bmc, tree.FW_INV + "/DPU_OS").body["Version"] == before


def test_http_bfb_is_refused_by_a_bf_23_10_bmc(tmp_path, clock):
    root = tmp_path / "old"
    state.init_node(root, ["bluefield3"], "dpu", [None])
    old = service.Bmc(root, password="s3cret-Pass1", firmware="23.10")
    resp = simple_update(old, "127.0.0.1:1//x.bfb")
    assert resp.code == 400 and "TransferProtocol" in resp.body["error"]["message"]


# ------------------------------------------------------------------ over HTTP(S)
def test_server_over_tls_with_a_self_signed_certificate(bmc, tmp_path):
    import ssl
    httpd = server.build_server(bmc, "127.0.0.1", 0, tls=True, cert_out=str(tmp_path / "bmc.crt"))
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        url = "https://127.0.0.1:%d/redfish/v1/Systems" % httpd.server_address[1]
        # An unknown self-signed certificate is refused by default. The default context is given explicitly:
        # Ansible's open_url (the bmc_* module tests, same process) installs a global urllib opener.
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(urllib.request.Request(url, headers=basic()), timeout=10,
                                   context=ssl.create_default_context())
        ctx = ssl.create_default_context(cafile=str(tmp_path / "bmc.crt"))
        ctx.check_hostname = False
        with urllib.request.urlopen(urllib.request.Request(url, headers=basic()), timeout=10, context=ctx) as r:
            assert json.load(r)["Members"] == [{"@odata.id": tree.SYSTEM}]
    finally:
        httpd.shutdown()
        httpd.server_close()
