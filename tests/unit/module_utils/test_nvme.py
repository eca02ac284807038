"""_nvme: ``nvme list`` tables (a real capture of the older layout; the twin's output of the current layout)
and ``-o json``; garbage is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers import _nvme
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import ParseError

from bluefleet.parse import strip_header

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "nvme" / "azure-nvme-list.txt"


def _real():
    return strip_header(FIXTURE.read_text(encoding="utf-8"))


def test_real_capture_older_layout():
    rows = _nvme.parse_list(_real())
    assert [r["node"] for r in rows] == ["/dev/nvme0n%d" % i for i in (1, 2, 3, 4)] + ["/dev/nvme1n1", "/dev/nvme2n1"]
    first, third, disk = rows[0], rows[2], rows[4]
    assert first == {"node": "/dev/nvme0n1", "generic": None, "serial": "SN: 000001",
                     "model": "MSFT NVMe Accelerator v1.0", "nsid": 1, "used_bytes": 536870000000,
                     "size_bytes": 536870000000, "sector_size": 512, "metadata_size": 0, "firmware": "v1.0000"}
    assert third["nsid"] == 15 and third["size_bytes"] == 44020000000
    assert disk["serial"] == "68e8d42a7ed4e5f90002" and disk["model"] == "Microsoft NVMe Direct Disk v2"
    assert disk["firmware"] == "NVMDV00"
    # the JSON capture quoted next to it in the same source: nvme0n1 PhysicalSize 536870912000
    assert _nvme.same_size(first["size_bytes"], 536870912000)
    assert not _nvme.same_size(first["size_bytes"], 536870912000 * 2)


@pytest.mark.parametrize("variant", [
    lambda t: t.replace("\n", "\r\n"), lambda t: t.rstrip("\n"), lambda t: t.replace("\n", "   \n")])
def test_real_capture_layout_variants(variant):
    assert _nvme.parse_list(variant(_real())) == _nvme.parse_list(_real())


def test_current_layout_from_the_twin():
    from dpusim.tools import nvme as twin_nvme
    ns = {"instance": 0, "nsid": 1, "serial": "SNAP0A1B2C3D", "model": "BlueField NVMe SNAP Controller",
          "firmware": "1.0", "blocks": 1953125000, "used_blocks": 1953125000, "block_size": 512}
    [row] = _nvme.parse_list(twin_nvme.table([ns]))
    assert row["generic"] == "/dev/ng0n1" and row["nsid"] == 1 and row["model"] == ns["model"]
    assert row["size_bytes"] == 10 ** 12 and row["sector_size"] == 512
    [jrow] = _nvme.parse_list_json(twin_nvme.as_json([ns]))
    assert jrow["size_bytes"] == 1953125000 * 512 and jrow["serial"] == "SNAP0A1B2C3D"


def test_json_capture_keys():
    text = json.dumps({"Devices": [{"NameSpace": 2, "DevicePath": "/dev/nvme0n2", "Firmware": "v1.00000",
                                    "Index": 0, "ModelNumber": "MSFT NVMe Accelerator v1.0",
                                    "SerialNumber": "SN: 000001", "UsedBytes": 4294967296, "MaximumLBA": 8388608,
                                    "PhysicalSize": 4294967296, "SectorSize": 512}]})
    [row] = _nvme.parse_list_json(text)
    assert (row["nsid"], row["size_bytes"], row["generic"]) == (2, 4294967296, None)


def test_no_devices():
    assert _nvme.parse_list("") == [] and _nvme.parse_list("No NVMe devices detected.\n") == []
    assert _nvme.parse_list_json('{"Devices": []}') == []


@pytest.mark.parametrize("text", [
    "garbage\n", "Node SN Model\nnot dashes\n",
    _real().replace("536.87  GB / 536.87  GB", "lots of bytes         "),
    _real().replace("Namespace", "Nmspc    "),
])
def test_garbage_is_refused(text):
    with pytest.raises(ParseError):
        _nvme.parse_list(text)


@pytest.mark.parametrize("text", ["nope", "[]", '{"Devices": [{"DevicePath": "/dev/nvme0n1"}]}'])
def test_json_garbage_is_refused(text):
    with pytest.raises(ParseError):
        _nvme.parse_list_json(text)
