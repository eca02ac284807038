"""bluefleet.dpu.ipsec_child: initiate a CHILD_SA only when swanctl does not list it INSTALLED."""

from __future__ import annotations

from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import ipsec_child

# `swanctl --list-sas` of strongSwan 6.0.1 in the lab (trixie image, kernel-libipsec), layout as
# shared/corpus/swanctl/FORMAT-from-source.md.
INSTALLED = """bf-dpu2: #1, ESTABLISHED, IKEv2, fe0a28eeb892110b_i* 4eadf29d9ff47bbe_r
  local  'dpu1' @ 192.168.61.1[4500]
  remote 'dpu2' @ 192.168.61.2[4500]
  AES_GCM_16-256/PRF_HMAC_SHA2_256/ECP_256
  established 44s ago, rekeying in 13873s
  bf-dpu2-vtep: #2, reqid 1, INSTALLED, TUNNEL, ESP:AES_GCM_16-256
    installed 44s ago, rekeying in 3247s, expires in 3916s
    in  b919072d,   3180 bytes,     6 packets,     0s ago
    out 82c18df2,   3180 bytes,     6 packets,     0s ago
    local  172.30.0.1/32
    remote 172.30.0.2/32
"""
LIST = ["swanctl", "--list-sas", "--ike", "bf-dpu2"]
INITIATE = ["swanctl", "--initiate", "--ike", "bf-dpu2", "--child", "bf-dpu2-vtep", "--timeout", "20"]


class FakeSwanctl:
    def __init__(self, up=False, initiate_works=True):
        self.up = up
        self.initiate_works = initiate_works
        self.cmd = []

    def run(self, argv, timeout=None):
        self.cmd.append(list(argv))
        if argv == LIST:
            return CommandResult(argv, 0, INSTALLED if self.up else "", "")
        if argv == INITIATE:
            self.up = self.initiate_works
            return CommandResult(argv, 0 if self.initiate_works else 1, "[IKE] initiating IKE_SA\n",
                                 "" if self.initiate_works else "initiate failed: establishing CHILD_SA failed\n")
        raise AssertionError(argv)


ARGS = {"ike": "bf-dpu2", "child": "bf-dpu2-vtep"}


def test_installed_sa_is_left_alone(run_module):
    sw = FakeSwanctl(up=True)
    failed, res = run_module(ipsec_child, ARGS, sw)
    assert not failed and not res["changed"] and res["installed"] and sw.cmd == [LIST]
    assert res["sa"]["spi_out"] == "82c18df2" and res["sa"]["mode"] == "TUNNEL"


def test_missing_sa_is_initiated_once_and_read_back(run_module):
    sw = FakeSwanctl()
    failed, res = run_module(ipsec_child, ARGS, sw)
    assert not failed and res["changed"] and res["installed"] and sw.cmd == [LIST, INITIATE, LIST]


def test_check_mode_initiates_nothing(run_module):
    sw = FakeSwanctl()
    failed, res = run_module(ipsec_child, ARGS, sw, check_mode=True)
    assert not failed and res["changed"] and sw.cmd == [LIST]
    assert res["diff"] == {"before": {"child": "bf-dpu2-vtep", "state": "absent"},
                           "after": {"child": "bf-dpu2-vtep", "state": "INSTALLED"}}


def test_failed_initiate_names_what_to_check(run_module):
    failed, res = run_module(ipsec_child, ARGS, FakeSwanctl(initiate_works=False))
    assert failed and "PSK/certificate" in res["msg"] and "establishing CHILD_SA failed" in res["stderr"]
