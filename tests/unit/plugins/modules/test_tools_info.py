"""tools_info: which firmware / IPsec / BFB tools a node has and whether they do what the play needs (issue 18).

Version lines: tests/unit/fixtures/parsers/tool-version (recorded on Debian 12: mstflint 4.21.0, strongSwan 5.9.8);
``flint, mft 4.30.1-8`` follows the MFT version corpus/mlxup names; 5.9.10 is the first strongSwan with
``hw_offload = packet``.
"""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tool_check import ADVICE
from ansible_collections.bluefleet.dpu.plugins.modules import tools_info

MSTFLINT = "mstflint, mstflint 4.21.0, Git SHA Hash: N/A\n"
SWAN_598 = "strongSwan 5.9.8 swanctl\nloaded plugins: aes rc2 sha2\n"
SWAN_5910 = "strongSwan 5.9.10bf swanctl\n"


class FakeRunner:
    def __init__(self, programs, answers):
        self.programs = set(programs)
        self.answers = dict(answers)
        self.cmd = []
        self.timeout = 60

    def which(self, program):
        return "/usr/bin/" + program if program in self.programs else None

    def run(self, argv, timeout=None):
        self.cmd.append(list(argv))
        rc, out = self.answers[argv[0]]
        return CommandResult(list(argv), rc, out, "")


def run(monkeypatch, capsys, args, programs, answers):
    monkeypatch.setattr(tools_info, "ToolRunner", lambda timeout: FakeRunner(programs, answers))
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            tools_info.main()
    return json.loads(capsys.readouterr().out)


def test_mstflint_only_debian_node(monkeypatch, capsys):
    result = run(monkeypatch, capsys, {"require": ["firmware"]},
                 ["mstflint", "mstconfig", "mstfwreset", "swanctl", "bfb-install"],
                 {"mstflint": (0, MSTFLINT), "swanctl": (0, SWAN_598)})
    assert result["changed"] is False and "failed" not in result
    assert result["firmware_tools"] == "mstflint"
    assert result["tools"]["mstflint"]["version"] == "4.21.0"
    assert result["tools"]["mft"]["present"] is False
    assert result["tools"]["strongswan"]["version"] == "5.9.8"
    assert result["ipsec_packet_offload"] is False
    assert result["tools"]["bfb_install"] == {"present": True, "path": "/usr/bin/bfb-install", "version": None,
                                              "note": "bfb-install has no version option"}
    assert result["cmd"] == [["mstflint", "--version"], ["swanctl", "--help"]]


def test_packet_offload_needs_strongswan_5_9_10(monkeypatch, capsys):
    """Issue 18 (3): a 5.9.8 charon discards a connection with hw_offload = packet; say so before writing it."""
    result = run(monkeypatch, capsys, {"require": ["ipsec_packet_offload"]}, ["swanctl"], {"swanctl": (0, SWAN_598)})
    assert result["failed"] is True
    assert result["msg"].startswith("check the tools failed: ipsec_packet_offload: hw_offload = packet needs "
                                    "strongSwan >= 5.9.10")
    assert result["msg"].endswith("(found: strongSwan 5.9.8)")
    result = run(monkeypatch, capsys, {"require": ["ipsec_packet_offload"]}, ["swanctl"], {"swanctl": (0, SWAN_5910)})
    assert "failed" not in result and result["ipsec_packet_offload"] is True


def test_nothing_installed_names_what_to_install(monkeypatch, capsys):
    result = run(monkeypatch, capsys, {"require": ["firmware", "mst", "bfb_install"]}, [], {})
    assert result["failed"] is True
    assert result["missing"] == [
        "firmware: " + ADVICE["firmware"], "mst: " + ADVICE["mst"],
        "bfb_install: " + ADVICE["bfb_install"]]
    assert "apt-get install mstflint" in result["msg"]


def test_doca_installer_counts_for_bfb_install(monkeypatch, capsys):
    result = run(monkeypatch, capsys, {"require": ["bfb_install"]}, ["doca-installer"], {})
    assert "failed" not in result and result["tools"]["doca_installer"]["present"] is True
