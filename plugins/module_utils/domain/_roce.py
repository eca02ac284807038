# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless RoCE settings: validation and derivation, no I/O.

One set of numbers drives everything (priority, data DSCP, CNP DSCP, MTU); this file turns them into
what the tools take and says clearly what is wrong with a bad set, before anything is changed.

- ``tos_from_dscp(dscp)``: the IP ToS byte RDMA-CM puts on RoCE v2 packets is the DSCP in the upper six
  bits (``cma_roce_tos -t``), i.e. ``dscp << 2``; the same number is NCCL's ``NCCL_IB_TC``.
- ``pfc_vector(priorities)``: the 8 ``0/1`` flags ``mlnx_qos --pfc`` takes.
- ``ets_bandwidth(priority, share)``: 8 ETS percentages that sum to 100, ``share`` on the RoCE TC (TC = priority
  with an identity priority->TC map), the rest split evenly, the remainder on TC 0.
- ``validate(settings, max_mtu)``: the list of problems (empty when the set is usable).
"""

from __future__ import annotations

PRIORITIES = 8
MIN_MTU = 68  # the kernel's minimum for an Ethernet netdev (minmtu 68 in corpus ip/cx6-ip-d-link-vf-rep-ovs-slave)
# maxmtu of an mlx5 netdev as `ip -d link show` prints it (corpus ip/cx6-ip-d-link-vf-rep-ovs-slave: maxmtu 9978)
MLX5_MAX_MTU = 9978
TRUST_STATES = ("pcp", "dscp")
TSA_NAMES = ("strict", "ets", "vendor")
ROCE_MODES = {"v1": "IB/RoCE v1", "v2": "RoCE v2"}
ROCE_MODE_ARGS = {"v1": "1", "v2": "2"}
ECN_PROTOS = ("roce_np", "roce_rp")  # mlx5 sysfs ecn/<proto>: notification point, reaction point


class RoceError(ValueError):
    """A bad lossless-RoCE setting; the message names the input and what to do."""


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def tos_from_dscp(dscp):
    """ToS byte for a DSCP (``dscp << 2``); RoceError outside 0..63."""
    if not _is_int(dscp) or not 0 <= dscp <= 63:
        raise RoceError("dscp %r is out of range: use 0..63" % (dscp,))
    return dscp << 2


def dscp_from_tos(tos):
    """The DSCP carried by a ToS byte (its upper six bits)."""
    if not _is_int(tos) or not 0 <= tos <= 255:
        raise RoceError("tos %r is out of range: use 0..255" % (tos,))
    return tos >> 2


def default_dscp_priority(dscp):
    """The priority the mlx5 default DSCP table gives a DSCP (``dscp >> 3``, as ``mlnx_qos --trust dscp`` sets)."""
    tos_from_dscp(dscp)
    return dscp >> 3


def pfc_vector(priorities):
    """``[0/1] * 8`` with 1 on every priority of ``priorities``."""
    bad = [p for p in priorities if not _is_int(p) or not 0 <= p < PRIORITIES]
    if bad:
        raise RoceError("PFC priority %r is out of range: use 0..7" % (bad[0],))
    return [1 if p in priorities else 0 for p in range(PRIORITIES)]


def pfc_priorities(vector):
    """The priorities a ``[0/1] * 8`` vector enables."""
    return [p for p, on in enumerate(vector) if on]


def ets_bandwidth(priority, share):
    """Eight ETS percentages summing to 100: ``share`` on TC ``priority``, the rest even, remainder on TC 0
    (TC 0 when ``priority`` is 0: then the remainder goes to TC 1)."""
    if not _is_int(priority) or not 0 <= priority < PRIORITIES:
        raise RoceError("priority %r is out of range: use 0..7" % (priority,))
    if not _is_int(share) or not 1 <= share <= 100:
        raise RoceError("ETS share %r is out of range: use 1..100 (percent of the link for the RoCE TC)" % (share,))
    rest = 100 - share
    each, remainder = divmod(rest, PRIORITIES - 1)
    bw = [each] * PRIORITIES
    bw[priority] = share
    bw[1 if priority == 0 else 0] += remainder
    return bw


def validate(settings, max_mtu=MLX5_MAX_MTU):
    """Problems with a desired lossless-RoCE set, as messages (empty list: fine).

    ``settings`` keys (all optional; None = not managed): ``trust`` (pcp|dscp), ``pfc`` (list of priorities),
    ``dscp`` / ``cnp_dscp`` (ints), ``dscp_priority`` (int, the priority the data DSCP maps to), ``prio_tc``,
    ``tsa``, ``tc_bw`` (8 items each), ``ecn`` (list of priorities), ``roce_mode`` (v1|v2), ``tos`` (0..255),
    ``mtu``.
    """
    problems = []

    def prio_list(key):
        values = settings.get(key)
        if values is None:
            return
        for p in values:
            if not _is_int(p) or not 0 <= p < PRIORITIES:
                problems.append("%s priority %r is out of range: use 0..7" % (key, p))

    trust = settings.get("trust")
    if trust is not None and trust not in TRUST_STATES:
        problems.append("trust %r is not one of %s" % (trust, ", ".join(TRUST_STATES)))
    prio_list("pfc")
    prio_list("ecn")
    for key in ("dscp", "cnp_dscp"):
        value = settings.get(key)
        if value is not None and (not _is_int(value) or not 0 <= value <= 63):
            problems.append("%s %r is out of range: use 0..63" % (key, value))
    dscp, cnp = settings.get("dscp"), settings.get("cnp_dscp")
    if dscp is not None and cnp is not None and dscp == cnp:
        problems.append("dscp and cnp_dscp are both %r: congestion notifications (CNP) need a DSCP of their own, "
                        "different from the RoCE data DSCP (e.g. data 26, CNP 48)" % (dscp,))
    prio = settings.get("dscp_priority")
    if prio is not None and (not _is_int(prio) or not 0 <= prio < PRIORITIES):
        problems.append("priority %r is out of range: use 0..7" % (prio,))
    for key, lo, hi in (("prio_tc", 0, 7), ("tc_bw", 0, 100)):
        values = settings.get(key)
        if values is None:
            continue
        if len(values) != PRIORITIES:
            problems.append("%s must have 8 items, got %d" % (key, len(values)))
        elif any(not _is_int(v) or not lo <= v <= hi for v in values):
            problems.append("%s items must be %d..%d, got %r" % (key, lo, hi, values))
    tsa = settings.get("tsa")
    if tsa is not None:
        if len(tsa) != PRIORITIES or any(t not in TSA_NAMES for t in tsa):
            problems.append("tsa must be 8 items of %s, got %r" % ("/".join(TSA_NAMES), tsa))
        tc_bw = settings.get("tc_bw")
        if tc_bw is not None and len(tc_bw) == PRIORITIES and len(tsa) == PRIORITIES and not problems:
            ets_total = sum(tc_bw[i] for i in range(PRIORITIES) if tsa[i] == "ets")
            if "ets" in tsa and ets_total != 100:
                problems.append("ETS bandwidths (tc_bw on the ets TCs) must sum to 100, they sum to %d" % ets_total)
            if any(tc_bw[i] for i in range(PRIORITIES) if tsa[i] != "ets"):
                problems.append("tc_bw must be 0 on strict/vendor TCs")
    mode = settings.get("roce_mode")
    if mode is not None and mode not in ROCE_MODES:
        problems.append("roce_mode %r is not one of %s" % (mode, ", ".join(ROCE_MODES)))
    tos = settings.get("tos")
    if tos is not None and (not _is_int(tos) or not 0 <= tos <= 255):
        problems.append("tos %r is out of range: use 0..255" % (tos,))
    mtu = settings.get("mtu")
    if mtu is not None:
        if not _is_int(mtu) or mtu < MIN_MTU:
            problems.append("mtu %r is below the minimum %d" % (mtu, MIN_MTU))
        elif mtu > max_mtu:
            problems.append("mtu %d is above what the port supports (max %d): lower bluefleet_roce_mtu"
                            % (mtu, max_mtu))
    return problems
