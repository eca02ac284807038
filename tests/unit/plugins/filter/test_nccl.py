"""bluefleet.dpu.nccl_env: NCCL settings from the RoCE fact and the GPU-NIC affinity."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.bluefleet.dpu.plugins.filter.nccl import FilterModule, nccl_env
from hypothesis import given
from hypothesis import strategies as st

ROCE = {"priority": 3, "dscp": 26, "cnp_dscp": 48, "tos": 104, "traffic_class": 104, "mtu": 4096,
        "gid_index": 3, "ibdevs": ["mlx5_0", "mlx5_1"], "netdevs": ["ens1f0np0", "ens1f1np1"]}

# closest_nic as gpu_info returns it for corpus/nvidia-smi/topo-mp-L40S-10nics (GPU0 -> NIC0 mlx5_0, NODE)
AFFINITY = {"GPU0": {"nic": "NIC0", "device": "mlx5_0", "link": "NODE"},
            "GPU1": {"nic": "NIC1", "device": "mlx5_1", "link": "PIX"},
            "GPU2": None}


def test_registered_under_its_name():
    assert FilterModule().filters()["nccl_env"] is nccl_env


def test_derives_every_setting():
    assert nccl_env(ROCE, AFFINITY) == {
        "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "104",
        "NCCL_NET_GDR_LEVEL": "PHB",  # the farthest affine link is NODE, which NCCL calls PHB
        "NCCL_SOCKET_IFNAME": "=ens1f0np0,ens1f1np1",
    }


def test_gpu_order_and_duplicates():
    affinity = {"GPU10": {"device": "mlx5_0", "link": "PIX"}, "GPU2": {"device": "mlx5_1", "link": "PIX"},
                "GPU1": {"device": "mlx5_1", "link": "PXB"}}
    env = nccl_env(ROCE, affinity)
    assert env["NCCL_IB_HCA"] == "=mlx5_1:1,mlx5_0:1"
    assert env["NCCL_NET_GDR_LEVEL"] == "PXB"
    assert env["NCCL_SOCKET_IFNAME"] == "=ens1f1np1,ens1f0np0"


def test_no_gpu_uses_the_roce_nics():
    env = nccl_env(ROCE, {})
    assert env["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1"
    assert env["NCCL_NET_GDR_LEVEL"] == "PHB"


def test_overrides():
    env = nccl_env(ROCE, AFFINITY, hca=["mlx5_1"], port=2, socket_ifname=["eth0"], gdr_level="sys", ecn_bits=2)
    assert env == {"NCCL_IB_HCA": "=mlx5_1:2", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "106",
                   "NCCL_NET_GDR_LEVEL": "SYS", "NCCL_SOCKET_IFNAME": "eth0"}


def test_gdr_level_only_from_chosen_nics():
    assert nccl_env(ROCE, AFFINITY, hca=["mlx5_1"])["NCCL_NET_GDR_LEVEL"] == "PIX"


@pytest.mark.parametrize("roce, kwargs, message", [
    (dict(ROCE, dscp=None), {}, "bluefleet_roce has no dscp"),
    ({k: v for k, v in ROCE.items() if k != "gid_index"}, {}, "bluefleet_roce has no gid_index"),
    (dict(ROCE, dscp=64), {}, "bluefleet_roce.dscp must be 0..63, got 64"),
    (dict(ROCE, dscp="x"), {}, "bluefleet_roce.dscp must be an integer"),
    (dict(ROCE, dscp=True), {}, "bluefleet_roce.dscp must be an integer"),
    (dict(ROCE, tos=96), {}, "bluefleet_roce.tos 96 carries DSCP 24 but bluefleet_roce.dscp is 26"),
    (dict(ROCE, traffic_class=0), {}, "bluefleet_roce.traffic_class 0 carries DSCP 0"),
    (dict(ROCE, netdevs=["a"]), {}, "must be parallel lists"),
    (dict(ROCE, ibdevs=[], netdevs=[]), {"affinity": {}}, "no NIC for NCCL"),
    (ROCE, {"hca": ["mlx5_9"]}, "hca names mlx5_9, not a RoCE NIC of this host (known: mlx5_0, mlx5_1)"),
    (dict(ROCE, ibdevs=["mlx5_1"], netdevs=["ens1f1np1"]), {}, "NIC mlx5_0 is used by the GPUs but not configured"),
    (ROCE, {"gdr_level": "NODE"}, "gdr_level must be one of LOC, PIX, PXB, PHB, SYS"),
    (ROCE, {"ecn_bits": 4}, "ecn_bits must be 0..3"),
    (ROCE, {"affinity": {"GPU0": {"device": "mlx5_0", "link": "NV18"}}}, "link 'NV18' is not one of"),
    (ROCE, {"affinity": {"GPU0": {"nic": "NIC0"}}}, "affinity of GPU0 names no NIC device"),
    (ROCE, {"affinity": ["mlx5_0"]}, "the affinity must be a dict"),
    ("dscp=26", {}, "the input must be the RoCE fact"),
    (dict(ROCE, netdevs=None), {}, "socket_ifname is not given"),
    (ROCE, {"extra": {"NCCL_DEBUG": "INFO", "nccl_algo": "Ring"}},
     "nccl_extra must map NCCL_* names to values, got 'nccl_algo' among ['NCCL_DEBUG', 'nccl_algo']"),
    (ROCE, {"extra": {"NCCL_": "x"}}, "got 'NCCL_'"),
    (ROCE, {"extra": {1: "x"}}, "got 1 among"),
    (ROCE, {"extra": ["NCCL_DEBUG=INFO"]}, "nccl_extra must map NCCL_* names to values, got ['NCCL_DEBUG=INFO']"),
])
def test_incoherent_input_fails_naming_it(roce, kwargs, message):
    kwargs = dict(kwargs)
    affinity = kwargs.pop("affinity", AFFINITY)
    with pytest.raises(AnsibleFilterError) as err:
        nccl_env(roce, affinity, **kwargs)
    assert message in str(err.value)


def test_extra_settings_merge_over_the_derived_ones():
    env = nccl_env(ROCE, AFFINITY, extra={"NCCL_DEBUG": "INFO", "NCCL_IB_TC": 106, "NCCL_ALGO_2": "Ring"})
    assert env == dict(nccl_env(ROCE, AFFINITY), NCCL_DEBUG="INFO", NCCL_IB_TC=106, NCCL_ALGO_2="Ring")
    assert nccl_env(ROCE, AFFINITY, extra={}) == nccl_env(ROCE, AFFINITY) == nccl_env(ROCE, AFFINITY, extra=None)


@given(dscp=st.integers(0, 63), ecn=st.integers(0, 3))
def test_tc_carries_the_dscp(dscp, ecn):
    roce = dict(ROCE, dscp=dscp, tos=dscp << 2, traffic_class=None)
    tc = int(nccl_env(roce, AFFINITY, ecn_bits=ecn)["NCCL_IB_TC"])
    assert tc >> 2 == dscp
    assert tc & 3 == ecn
    assert 0 <= tc <= 255


LINKS = st.sampled_from(["PIX", "PXB", "PHB", "NODE", "SYS"])


@given(st.dictionaries(st.integers(0, 15).map("GPU{}".format),
                       st.fixed_dictionaries({"device": st.sampled_from(["mlx5_0", "mlx5_1"]), "link": LINKS}),
                       min_size=1))
def test_hca_and_level_follow_the_affinity(affinity):
    env = nccl_env(ROCE, affinity)
    listed = env["NCCL_IB_HCA"].lstrip("=").split(",")
    assert sorted(listed) == sorted({"%s:1" % e["device"] for e in affinity.values()})
    assert len(listed) == len(set(listed))
    words = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 3, "SYS": 4}
    farthest = max(words[e["link"]] for e in affinity.values())
    assert ["LOC", "PIX", "PXB", "PHB", "SYS"].index(env["NCCL_NET_GDR_LEVEL"]) == farthest


ANY_VALUE = st.one_of(st.none(), st.integers(), st.text(max_size=8), st.lists(st.text(max_size=6), max_size=3))


@given(st.dictionaries(st.text(max_size=12), ANY_VALUE, max_size=8),
       st.one_of(st.none(), st.dictionaries(st.text(max_size=6), st.one_of(st.none(), st.text(max_size=6)))))
def test_garbage_raises_only_the_filter_error(roce, affinity):
    try:
        env = nccl_env(roce, affinity)
    except AnsibleFilterError:
        return
    assert set(env) == {"NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_NET_GDR_LEVEL", "NCCL_SOCKET_IFNAME"}
