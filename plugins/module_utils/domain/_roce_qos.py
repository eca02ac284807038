# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a node's lossless RoCE settings, and what differs from the ones asked, shared by ``roce_qos`` (its read
and check), ``dpu_info`` (section ``roce``: preflight's read of every RDMA netdev) and the filter
``bluefleet.dpu.roce_plan`` (roce_qos's check, worked out on the controller from that read).

- ``read_settings(runner, params, ibdev, keys)``: the raw values behind ``keys`` (``mlnx_qos -i``, ``cma_roce_mode``,
  ``cma_roce_tos``, the mlx5 sysfs ``ecn``, ``cnp_dscp`` and ``mtu``); ``view_state(raw, params)``: what roce_qos
  compares, for the options ``params`` sets. ``read_state`` is the two together (roce_qos's read).
- ``desired_state(params)`` and ``changes_of(want, before)``: the settings asked for and the ones that differ, in
  apply order (``KEYS``).
- ``plan_from_read(section, params)``: roce_qos's check-mode answer from dpu_info's section, or why it cannot be
  given (the read was made for other netdevs, a netdev could not be read, an option the read cannot answer).

Errors are ``_tooling.ToolError`` naming the command or file. No AnsibleModule import.
"""

from __future__ import annotations

import os

from ansible_collections.bluefleet.dpu.plugins.module_utils.domain._roce import (
    ECN_PROTOS,
    PRIORITIES,
    pfc_priorities,
    validate,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._mlnx_qos import parse_mlnx_qos
from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._rdma import (
    parse_cma_roce_mode,
    parse_cma_roce_tos,
    parse_ibdev2netdev,
)
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._argspec import fs_root_spec
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import (
    ToolError,
    parse_output,
    run_tool,
    timeout_spec,
)

# apply order; each key is one option of roce_qos
KEYS = ("trust", "dscp2prio", "pfc", "prio_tc", "tsa", "tc_bw", "roce_mode", "tos", "ecn", "cnp_dscp", "mtu")
MLNX_QOS_KEYS = ("pfc", "prio_tc", "tsa", "tc_bw")
CMA_KEYS = ("roce_mode", "tos")
ROCE_VERSIONS = {1: "v1", 2: "v2"}


def net_dir(params):
    return os.path.join(params["fs_root"], "sys", "class", "net", params["netdev"])


def read_number(path, what):
    try:
        with open(path) as handle:
            text = handle.read().strip()
    except OSError as exc:
        raise ToolError("read %s failed: %s" % (what, exc)) from exc
    try:
        return int(text)
    except ValueError:
        raise ToolError("read %s failed: %s holds %r, not a number" % (what, path, text)) from None


def check_netdev(params):
    """Fail unless the netdev exists (its sysfs directory)."""
    base = os.path.dirname(net_dir(params))
    if not os.path.isdir(net_dir(params)):
        known = sorted(os.listdir(base)) if os.path.isdir(base) else []
        raise ToolError("configure RoCE QoS of %s failed: netdev %s does not exist (no %s); name one of: %s"
                        % (params["netdev"], params["netdev"], net_dir(params), ", ".join(known) or "(none)"))


def list_links(runner, netdevs):
    what = "look up the RDMA device of %s with ibdev2netdev" % ", ".join(netdevs)
    return parse_output(parse_ibdev2netdev, run_tool(runner, ["ibdev2netdev"], what), what)["links"]


def find_ibdev(params, links):
    """The RDMA device of the netdev's port in ``links`` (ibdev2netdev, read once for every netdev)."""
    if params["ibdev"]:
        return params["ibdev"]
    for link in links:
        if link["netdev"] == params["netdev"] and link["port"] == params["port"]:
            return link["ibdev"]
    raise ToolError("look up the RDMA device of %s with ibdev2netdev failed: ibdev2netdev lists no RDMA device "
                    "port %d for it; give ibdev, or leave roce_mode and tos unset for a netdev without RDMA"
                    % (params["netdev"], params["port"]))


def tc_settings(data):
    """prio_tc, tsa and tc_bw (8 items each, None where mlnx_qos printed nothing) from the tc lines."""
    prio_tc = [None] * PRIORITIES
    tsa = [None] * PRIORITIES
    tc_bw = [None] * PRIORITIES
    for tc in data["tcs"]:
        if not 0 <= tc["tc"] < PRIORITIES:
            continue
        tsa[tc["tc"]] = tc["tsa"]
        tc_bw[tc["tc"]] = tc["bw"] if tc["tsa"] == "ets" else 0
        for prio in tc["priorities"]:
            if 0 <= prio < PRIORITIES:
                prio_tc[prio] = tc["tc"]
    return prio_tc, tsa, tc_bw


def asked_keys(params):
    """The keys ``params`` sets (roce_qos's options that are not None), in apply order."""
    return [key for key in KEYS if params.get(key) is not None]


def read_settings(runner, params, ibdev, keys):
    """The raw values behind ``keys`` of the netdev ``params["netdev"]`` (port ``params["port"]``, RDMA device
    ``ibdev``): each tool or file is read once, and only when a key needs it. ``dscp2prio`` is the whole table
    mlnx_qos prints (DSCP as a string -> priority), ``ecn`` the 8 flags of each ECN side."""
    netdev = params["netdev"]
    keys = set(keys)
    raw = {}
    if keys & {"trust", "dscp2prio", *MLNX_QOS_KEYS}:
        what = "read QoS of %s with mlnx_qos" % netdev
        data = parse_output(parse_mlnx_qos, run_tool(runner, ["mlnx_qos", "-i", netdev], what), what)
        prio_tc, tsa, tc_bw = tc_settings(data)
        enabled = data["pfc"]["enabled"] or [0] * PRIORITIES
        raw.update({"trust": data["trust"], "pfc": pfc_priorities(enabled), "prio_tc": prio_tc, "tsa": tsa,
                    "tc_bw": tc_bw, "dscp2prio": dict(data["dscp2prio"])})
    if "roce_mode" in keys:
        what = "read the RoCE mode of %s port %d with cma_roce_mode" % (ibdev, params["port"])
        result = run_tool(runner, ["cma_roce_mode", "-d", ibdev, "-p", str(params["port"])], what)
        raw["roce_mode"] = ROCE_VERSIONS[parse_output(parse_cma_roce_mode, result, what)["roce_version"]]
    if "tos" in keys:
        what = "read the RoCE ToS of %s port %d with cma_roce_tos" % (ibdev, params["port"])
        result = run_tool(runner, ["cma_roce_tos", "-d", ibdev, "-p", str(params["port"])], what)
        raw["tos"] = parse_output(parse_cma_roce_tos, result, what)["tos"]
    if "ecn" in keys:
        flags = {}
        for proto in ECN_PROTOS:
            folder = os.path.join(net_dir(params), "ecn", proto, "enable")
            if not os.path.isdir(folder):
                raise ToolError("read ECN of %s failed: %s does not exist; ECN per priority needs an mlx5 PF or "
                                "uplink netdev (not a representor)" % (netdev, folder))
            flags[proto] = [read_number(os.path.join(folder, str(p)), "ECN %s of %s" % (proto, netdev))
                            for p in range(PRIORITIES)]
        raw["ecn"] = flags
    if "cnp_dscp" in keys:
        raw["cnp_dscp"] = read_number(os.path.join(net_dir(params), "ecn", "roce_np", "cnp_dscp"),
                                      "the CNP DSCP of %s" % netdev)
    if "mtu" in keys:
        raw["mtu"] = read_number(os.path.join(net_dir(params), "mtu"), "the MTU of %s" % netdev)
    return raw


def view_state(raw, params):
    """The current value of every key ``params`` sets, as roce_qos compares it, from ``read_settings``'s values."""
    out = {}
    for key in asked_keys(params):
        if key == "dscp2prio":
            out[key] = [{"dscp": e["dscp"], "priority": raw["dscp2prio"].get(str(e["dscp"]))}
                        for e in params["dscp2prio"]]
        elif key == "ecn":
            flags = raw["ecn"]
            if flags["roce_np"] == flags["roce_rp"]:
                out[key] = pfc_priorities(flags["roce_np"])
            else:  # the two sides differ: show both so the diff says why it changes
                out[key] = {proto: pfc_priorities(flags[proto]) for proto in ECN_PROTOS}
        else:
            out[key] = raw[key]
    return out


def read_state(runner, params, ibdev):
    """The current value of every managed key."""
    return view_state(read_settings(runner, params, ibdev, asked_keys(params)), params)


def desired_state(params):
    want = {}
    for key in KEYS:
        if params[key] is None:
            continue
        if key in ("pfc", "ecn"):
            want[key] = sorted(set(params[key]))
        elif key == "dscp2prio":
            want[key] = [{"dscp": e["dscp"], "priority": e["priority"]} for e in params[key]]
        else:
            want[key] = params[key]
    return want


def changes_of(want, before):
    """The keys of ``want`` whose value differs in ``before``, in apply order."""
    return [key for key in KEYS if key in want and before.get(key) != want[key]]


def settings_of(params):
    """The option values in the form ``_roce.validate`` checks."""
    return {"trust": params["trust"], "pfc": params["pfc"], "ecn": params["ecn"], "dscp": params["data_dscp"],
            "cnp_dscp": params["cnp_dscp"], "prio_tc": params["prio_tc"], "tsa": params["tsa"],
            "tc_bw": params["tc_bw"], "roce_mode": params["roce_mode"], "tos": params["tos"], "mtu": params["mtu"]}


def netdevs_of(params):
    """The netdevs to configure (O(netdev), or O(netdevs) without repeats), in order."""
    if params["netdevs"]:
        return list(dict.fromkeys(params["netdevs"]))
    return [params["netdev"]] if params["netdev"] else []


def check_input(params, names):
    """Every problem of the options (the same settings go to every netdev); ToolError before any command."""
    everyone = "every RDMA netdev" if params["rdma_facts"] else "no netdev"
    label = "configure RoCE QoS of %s" % (", ".join(names) or everyone)
    problems = [] if names or params["rdma_facts"] else ["give netdev (one netdev) or netdevs (a list of them)"]
    if params["address"] and not params["rdma_facts"]:
        problems.append("address %s only picks the GID index of the rdma_facts read; set rdma_facts: true with it, "
                        "or leave address out" % params["address"])
    if params["netdevs"] and params["ibdev"]:
        problems.append("ibdev names the RDMA device of one netdev; with netdevs leave it out (ibdev2netdev finds "
                        "the device of each) or configure that netdev alone with netdev")
    problems += validate(settings_of(params), max_mtu=params["max_mtu"])
    for entry in params["dscp2prio"] or []:
        problems += validate({"dscp": entry["dscp"], "dscp_priority": entry["priority"]})
    if params["port"] < 1:
        problems.append("port %d is not a port number (1 or more)" % params["port"])
    if problems:
        raise ToolError("%s failed: %s; nothing was changed" % (label, "; ".join(problems)))


def argument_spec():
    return {
        "netdev": {"type": "str"},
        "netdevs": {"type": "list", "elements": "str"},
        "trust": {"type": "str", "choices": ["pcp", "dscp"]},
        "pfc": {"type": "list", "elements": "int"},
        "dscp2prio": {"type": "list", "elements": "dict", "options": {
            "dscp": {"type": "int", "required": True},
            "priority": {"type": "int", "required": True},
        }},
        "prio_tc": {"type": "list", "elements": "int"},
        "tsa": {"type": "list", "elements": "str"},
        "tc_bw": {"type": "list", "elements": "int"},
        "ecn": {"type": "list", "elements": "int"},
        "cnp_dscp": {"type": "int"},
        "data_dscp": {"type": "int"},
        "roce_mode": {"type": "str", "choices": ["v1", "v2"]},
        "tos": {"type": "int"},
        "rdma_facts": {"type": "bool", "default": False},
        "address": {"type": "str", "default": ""},
        "ibdev": {"type": "str"},
        "port": {"type": "int", "default": 1},
        "mtu": {"type": "int"},
        "max_mtu": {"type": "int", "default": 9978},
        "fs_root": fs_root_spec(aliases=["sysfs_root"]),
        "timeout": timeout_spec(60),
    }


def read_netdev(runner, fs_root, netdev, port, links):
    """dpu_info's read of one RDMA netdev: every key's raw value, or ``error`` when something cannot be read."""
    params = {"netdev": netdev, "port": port, "ibdev": None, "fs_root": fs_root}
    try:
        check_netdev(params)
        ibdev = find_ibdev(params, links)
        return {"ibdev": ibdev, "port": port, "settings": read_settings(runner, params, ibdev, KEYS)}
    except ToolError as exc:
        return {"error": exc.msg}


def plan_from_read(section, params):
    """roce_qos's check of ``params`` (its options, validated) from dpu_info's ``roce`` section.

    Returns ``{"answered": True, "changes": [NETDEV.KEY, ...], "rdma": ...}`` when the read answers every netdev,
    or ``{"answered": False, "why": "..."}``: then roce_qos must read the node itself.
    """
    def unanswered(why):
        return {"answered": False, "why": why}

    if not isinstance(section, dict) or not section.get("available"):
        return unanswered("preflight's read has no roce section%s" % (
            (": " + section["reason"]) if isinstance(section, dict) and section.get("reason") else ""))
    if not params.get("rdma_facts") or params.get("netdev") or params.get("ibdev"):
        return unanswered("the read answers rdma_facts with netdevs and no ibdev, as the roce_qos role asks")
    asked = list(params.get("netdevs") or [])
    if asked != section["asked"]["netdevs"] or (params.get("address") or "") != section["asked"]["address"]:
        return unanswered("the read was made for netdevs %s and address %r, not %s and %r" % (
            section["asked"]["netdevs"], section["asked"]["address"], asked, params.get("address") or ""))
    if params["fs_root"] != section["asked"]["fs_root"] or params["port"] != section["asked"]["port"]:
        return unanswered("the read was made under %s, port %d" % (
            section["asked"]["fs_root"], section["asked"]["port"]))
    want = desired_state(params)
    changes = []
    for name in dict.fromkeys(section["rdma"]["netdevs"]):
        entry = section["netdevs"].get(name)
        if not entry or entry.get("error"):
            return unanswered("netdev %s: %s" % (name, (entry or {}).get("error") or "not read"))
        missing = [key for key in want if key not in entry["settings"] and key != "dscp2prio"]
        if missing or ("dscp2prio" in want and "dscp2prio" not in entry["settings"]):
            return unanswered("netdev %s: the read lacks %s" % (name, ", ".join(missing) or "dscp2prio"))
        before = view_state(entry["settings"], dict(params, netdev=name))
        changes += ["%s.%s" % (name, key) for key in changes_of(want, before)]
    return {"answered": True, "changes": changes, "rdma": section["rdma"]}
