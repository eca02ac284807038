"""The twin BMC's resources against the real BlueField-3 BMC captures (../shared/corpus/redfish).

For every URI the capture of a firmware generation holds and the twin serves, the twin's resource
must have the same keys (recursively), the same ``@odata.type`` values and the same member lists.
The captures stay in ../shared: on a clone without it these tests report "not run: no ../shared".
"""

from __future__ import annotations

import base64
import csv
import json

import pytest
from shared_corpus import require_shared

from dpusim import state
from dpusim.bmc import service, tree

CAPTURES = {"24.10": "bf3-bmc-24.10-10_2024-11-26", "23.10": "bf3-bmc-23.10-5_2023-12-13"}
AUTH = {"Authorization": "Basic " + base64.b64encode(b"root:0penBmc1").decode()}
# Resources the twin serves in part: chassis whose sensors, power and PCIe sub-trees it does not model,
# and the Bios resource without the UEFI attributes. Their keys must be a subset of the capture's.
PARTIAL = {"/redfish/v1/Chassis/Bluefield_BMC", "/redfish/v1/Chassis/Card1", "/redfish/v1/Systems/Bluefield/Bios"}
# Collections whose members are the BMC's run-time state (who is logged in, which tasks ran, which accounts
# exist: the twin has the one account it serves, the real BMCs add the UEFI accounts NvBluefieldUefi0/1).
# JsonSchemas: the twin serves no JSON schema files (the validator reads the CSDL), so it lists none;
# Registries: it lists the four registries whose messages it emits (the BMC eight); Cables: the BF-23.10
# capture lists two port cables, the twin models none (as the BF-24.10 capture shows none); the Arm's
# interfaces, log services and storage: not modelled, listed empty.
DYNAMIC = {"/redfish/v1/SessionService/Sessions", "/redfish/v1/TaskService/Tasks",
           "/redfish/v1/AccountService/Accounts", "/redfish/v1/JsonSchemas", "/redfish/v1/Registries",
           "/redfish/v1/Cables", "/redfish/v1/Systems/Bluefield/EthernetInterfaces",
           "/redfish/v1/Systems/Bluefield/LogServices", "/redfish/v1/Systems/Bluefield/Storage"}


def captured(fw: str) -> list[tuple[str, dict]]:
    base = require_shared("corpus/redfish")
    out = []
    with open(base / "PROVENANCE.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["file"].startswith(CAPTURES[fw] + "/") and row["file"].endswith(".json"):
                out.append((row["uri"], json.loads((base / row["file"]).read_text())))
    return out


@pytest.fixture
def bmc_for(tmp_path):
    def make(fw: str) -> service.Bmc:
        root = tmp_path / fw
        state.init_node(root, ["bluefield3"], "dpu", [None])
        return service.Bmc(root, firmware=fw)
    return make


def differences(want, got, path=""):
    out = []
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got:
                out.append("missing " + path + "/" + key)
            elif key not in want:
                out.append("extra " + path + "/" + key)
            else:
                out.extend(differences(want[key], got[key], path + "/" + key))
    elif path.endswith(("@odata.type", "/Members")) and want != got and "error" not in path:
        out.append("%s: capture %r, twin %r" % (path, want, got))
    elif isinstance(want, dict) != isinstance(got, dict) or isinstance(want, list) != isinstance(got, list):
        out.append("%s: capture %s, twin %s" % (path, type(want).__name__, type(got).__name__))
    return out


@pytest.mark.parametrize("fw", sorted(CAPTURES))
def test_every_served_resource_has_the_captured_shape(bmc_for, fw):
    bmc = bmc_for(fw)
    compared = 0
    for uri, captured_body in captured(fw):
        want = captured_body
        resp = bmc.handle("GET", uri, AUTH, b"")
        if resp.code == 404 or "error" in want or uri.startswith("/redfish/v1/SessionService/Sessions/"):
            continue
        got = resp.body
        if "Members" in want and uri.startswith(tree.FW_INV):
            assert [m["@odata.id"] for m in got["Members"]] == [m["@odata.id"] for m in want["Members"]]
        if uri in PARTIAL:
            assert set(got) <= set(want), uri
            continue
        if uri.startswith("/redfish/v1/Registries/") and uri.count("/") == 5:
            # a registry: the twin serves the messages it emits, each worded as the BMC's registry words it
            assert got["@odata.type"] == want["@odata.type"] and got["Id"] == want["Id"], uri
            for key, msg in got["Messages"].items():
                real = want["Messages"][key]
                assert (msg["Message"], msg["MessageSeverity"], msg["NumberOfArgs"]) == \
                    (real["Message"], real["MessageSeverity"], real["NumberOfArgs"]), (uri, key)
            continue
        if uri in DYNAMIC:
            ids = {m["@odata.id"] for m in got.get("Members") or []}
            assert ids <= {m["@odata.id"] for m in want.get("Members") or []} or uri.endswith(
                ("/Sessions", "/Tasks", "/Accounts")), uri  # the twin lists a subset of what the BMC lists
            want, got = dict(want, Members=[]), dict(got, Members=[])
            want.pop("Members@odata.count")
            got.pop("Members@odata.count")
        assert differences(want, got) == [], uri
        compared += 1
    assert compared >= 20  # the core of the tree: service root, update, tasks, manager, system, inventory


@pytest.mark.parametrize("fw", sorted(CAPTURES))
def test_unknown_uri_answers_the_captured_404_body(bmc_for, fw):
    base = require_shared("corpus/redfish")
    sample = "bf3-bmc-24.10-10_2024-11-26/redfish_v1_Managers_Bluefield_BMC_EthernetInterfaces_oob0.json" \
        if fw == "24.10" else "bf3-bmc-23.10-5_2023-12-13/redfish_v1_Managers_Bluefield_BMC_Oem.json"
    want = json.loads((base / sample).read_text())
    name = want["error"]["@Message.ExtendedInfo"][0]["MessageArgs"][1]
    resp = service.Bmc.handle(bmc_for(fw), "GET", "/redfish/v1/Managers/Bluefield_BMC/nothing/" + name, AUTH, b"")
    assert resp.code == 404
    got = resp.body
    assert got["error"]["code"] == want["error"]["code"]
    assert set(got["error"]["@Message.ExtendedInfo"][0]) == set(want["error"]["@Message.ExtendedInfo"][0])
    assert got["error"]["@Message.ExtendedInfo"][0]["Resolution"] == \
        want["error"]["@Message.ExtendedInfo"][0]["Resolution"]


@pytest.mark.parametrize("fw", sorted(CAPTURES))
def test_every_collection_member_answers(bmc_for, fw):
    """Walk the tree from the service root: every member a served collection lists answers 200."""
    bmc = bmc_for(fw)
    seen, todo = set(), ["/redfish/v1"]
    while todo:
        uri = todo.pop()
        if uri in seen:
            continue
        seen.add(uri)
        resp = bmc.handle("GET", uri, AUTH, b"")
        if resp.code != 200:
            continue
        for member in resp.body.get("Members") or []:
            member_uri = member["@odata.id"]
            assert bmc.handle("GET", member_uri, AUTH, b"").code == 200, (uri, member_uri)
            todo.append(member_uri)
        for value in resp.body.values():
            if isinstance(value, dict) and set(value) == {"@odata.id"}:
                todo.append(value["@odata.id"])
    assert tree.FW_INV + "/DPU_NIC" in seen


def test_inventory_versions_come_from_the_card(bmc_for):
    bmc = bmc_for("24.10")
    with state.open_node(bmc.root) as node:
        card = node.card(0)
        card.data["firmware"]["running"]["version"] = "32.99.1234"
        card.data["dpu_os"]["release"] = "bf-bundle-9.9.9-1_99.99_ubuntu-22.04_prod"
    nic = bmc.handle("GET", tree.FW_INV + "/DPU_NIC", AUTH, b"").body
    os_ = bmc.handle("GET", tree.FW_INV + "/DPU_OS", AUTH, b"").body
    assert nic["Version"] == "32.99.1234"
    assert os_["Version"] == "bf-bundle-9.9.9-1_99.99_ubuntu-22.04_prod"
    assert bmc.handle("GET", tree.MANAGER, AUTH, b"").body["FirmwareVersion"] == "BF-24.10-10"
