"""The BMC rules (module_utils/domain/_bmc.py) and bmc_info's reading, on the real BF-3 BMC captures in
../shared/corpus/redfish (not on the twin): what the modules decide from a real BMC's answers.

The corpus withholds about a third of the resources on purpose; bmc_info's reading is checked on the
BF-24.10-10 capture with the FirmwareInventory members the capture holds (the others are listed by the
collection but not in the folder)."""

from __future__ import annotations

import csv
import json

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.domain import _bmc as rules
from ansible_collections.bluefleet.dpu.plugins.modules import bmc_info
from shared_corpus import require_shared

CAPTURES = {"23.10-4": "bf3-bmc-23.10-4_2023-11-21", "23.10-5": "bf3-bmc-23.10-5_2023-12-13",
            "24.10-10": "bf3-bmc-24.10-10_2024-11-26"}


def capture(name):
    base = require_shared("corpus/redfish")
    with open(base / "PROVENANCE.tsv", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["file"].startswith(CAPTURES[name] + "/")]
    return {r["uri"]: json.loads((base / r["file"]).read_text()) for r in rows if r["file"].endswith(".json")}


def preflight(res):
    def get(uri):
        return res[rules.V1 + uri]
    checks = rules.preflight(get("/UpdateService"), get("/Chassis/Bluefield_ERoT"),
                             get("/Managers/Bluefield_BMC/Oem/Nvidia"), get("/Systems/Bluefield/Oem/Nvidia"),
                             get("/Managers/Bluefield_BMC"), want_bfb=True)
    return {c["check"]: c for c in checks}


@pytest.mark.parametrize("name, protocols, version", [
    ("23.10-4", ["SCP"], (23, 10, 4)),
    ("23.10-5", ["SCP"], (23, 10, 5)),
    ("24.10-10", ["SCP", "HTTP", "HTTPS"], (24, 10, 10)),
])
def test_transfer_protocols_and_bmc_version_of_each_capture(name, protocols, version):
    res = capture(name)
    assert rules.transfer_protocols(res[rules.V1 + "/UpdateService"]) == protocols  # BF-23.10 nests the list
    assert rules.bmc_version_tuple(res[rules.MANAGER]["FirmwareVersion"]) == version


def test_preflight_on_bf_23_10_4_says_erot_copying_and_bmc_too_old_for_a_bfb():
    checks = preflight(capture("23.10-4"))
    assert checks["update_service_enabled"]["ok"]
    erot = checks["erot_background_copy_done"]
    assert not erot["ok"] and "InProgress" in erot["detail"] and "wait until the ERoT" in erot["fix"]
    bfb = checks["bmc_supports_bfb_over_http"]
    assert not bfb["ok"] and "BF-23.10-4" in bfb["detail"] and "BF-24.04 or newer" in bfb["fix"]
    assert checks["rshim_not_held_by_host"]["ok"]


def test_preflight_on_bf_23_10_5_only_the_bfb_path_is_missing():
    checks = preflight(capture("23.10-5"))
    assert [c for c, v in checks.items() if not v["ok"]] == ["bmc_supports_bfb_over_http"]


def test_preflight_on_bf_24_10_10_passes():
    checks = preflight(capture("24.10-10"))
    assert all(c["ok"] for c in checks.values()), checks
    assert "HostRshim=Disabled" in checks["rshim_not_held_by_host"]["detail"]


class CaptureClient:
    """GET from a capture; collections list only the members the capture holds."""

    def __init__(self, res):
        self.res = res
        self.requests = []

    def get(self, uri):
        self.requests.append("GET " + uri)
        body = json.loads(json.dumps(self.res[uri]))
        if "Members" in body:
            body["Members"] = [m for m in body["Members"] if m["@odata.id"] in self.res]
        return body


def test_bmc_info_reads_the_bf_24_10_10_capture():
    res = capture("24.10-10")
    facts = bmc_info.read(CaptureClient(res))
    inventory = rules.FW_INV + "/"
    want = {uri[len(inventory):]: body.get("Version") for uri, body in res.items() if uri.startswith(inventory)}
    assert facts["firmware"] == want and {"BMC_Firmware", "Bluefield_FW_ERoT", "DPU_NIC", "DPU_OS"} <= set(want)
    assert facts["bmc_version"] == "BF-24.10-10" == res[rules.MANAGER]["FirmwareVersion"]
    assert facts["boot_progress"] == res[rules.SYSTEM]["BootProgress"]
    assert facts["power_state"] == res[rules.SYSTEM]["PowerState"]
    assert (facts["mode"], facts["host_rshim"], facts["erot_background_copy"]) == ("DpuMode", "Disabled", "Completed")
    assert facts["bmc_rshim"] is True and facts["transfer_protocols"] == ["SCP", "HTTP", "HTTPS"]
    assert all(c["ok"] for c in facts["preflight"])


def fragment(name):
    return require_shared("corpus/redfish") / "fragments" / name


def test_task_rules_on_the_documented_tasks():
    completed = json.loads(fragment("redfish_v1_TaskService_Tasks_0.Completed.template.json").read_text())
    assert rules.task_outcome(completed) == "ok" and rules.task_messages(completed) == []
    running = json.loads(fragment("redfish_v1_TaskService_Tasks_11.Running.partial.json").read_text())
    accepted = json.loads(fragment("redfish_v1_UpdateService_update-multipart.POST-202-body.json").read_text())
    for task in (running, accepted):
        assert task["TaskState"] in rules.RUNNING_STATES and rules.task_outcome(task) != "ok"
    # a Messages[] item as NVIDIA's BFB-over-HTTP design shows it (kept verbatim, trailing comma)
    item = json.loads(fragment("redfish_v1_TaskService_Tasks_0.Messages-item.http-keepalive.doc.txt")
                      .read_text().strip().rstrip(","))
    task = {"TaskState": "Running", "TaskStatus": "OK", "Messages": [item]}
    assert rules.task_messages(task) == [
        "Update.1.0.TransferringToComponent: Image 'DOCA_2.0.2_BSP_4.0.1_Ubuntu_22.04-1.20230330.bfb' is being "
        "transferred to '/dev/rshim0/boot'. (Transfer is 20%. Please wait)"]
    assert rules.task_fix(task, "BFB", "bfb") is None  # a transfer in progress is no error with a fix
