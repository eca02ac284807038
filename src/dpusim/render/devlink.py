"""devlink (iproute2) text and JSON renderers.

Sources: ``corpus/devlink/FORMAT-from-source.md`` (iproute2 devlink/devlink.c) and the verbatim samples in
``corpus/devlink``:
- ``dev show``: one bare handle per line (sf-devlink-dev-and-port-show-aux).
- ``dev eswitch show``: ``<handle>: mode M inline-mode I encap-mode E`` (cx6-eswitch-show-switchdev).
- ``port show``: attribute order type/netdev/flavour/controller/pfnum/vfnum/sfnum/external/port/splittable, then
  an indented ``function:`` block (bf-dpu-devlink-port-representors-nova-spec, ecpf-host-pf-rep-port-function-state).
- ``dev param show``: handle line, ``  name N type T``, ``    values:``, ``      cmode C value V``
  (param-show-flow-steering-regression-error, indent as the FORMAT note gives it).
- ``dev info``: layout of cx6dx-devlink-dev-info-pending-fw-fail.
JSON: ``{"<section>": {"<handle>": ...}}``; compact form has no spaces; ``-p`` indents by 4 spaces like
iproute2's json_writer. No mlx5 JSON capture exists (corpus gap): keys follow the FORMAT note.

Data shapes (plain dicts):
- port: ``{"handle", "type", "netdev"?, "flavour", "controller"?, "pfnum"?, "vfnum"?, "sfnum"?, "external"?,
  "port"?, "splittable"?, "function"?: {"hw_addr"?, "state"?, "opstate"?, "roce"?, "max_io_eqs"?}}``
- param: ``{"name", "type", "values": [{"cmode", "value"}]}``
- info: ``{"driver", "serial_number"?, "board.serial_number"?, "versions": {"fixed": {}, "running": {}, "stored": {}}}``
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing only for type checkers: a twin tool starts faster (dpusim.tool)
if TYPE_CHECKING:
    from typing import Any

PORT_ATTR_ORDER = ("type", "netdev", "ibdev", "flavour", "controller", "pfnum", "vfnum", "sfnum", "external",
                   "port", "splittable")
FUNCTION_ATTR_ORDER = ("hw_addr", "state", "opstate", "roce", "migratable", "ipsec_crypto", "ipsec_packet",
                       "max_io_eqs")


def dump_json(obj: Any, pretty: bool) -> str:
    """iproute2 json_writer: compact has no blanks; pretty indents by 4 and writes ``"k": v``."""
    if pretty:
        return json.dumps(obj, indent=4) + "\n"
    return json.dumps(obj, separators=(",", ":")) + "\n"


def _text_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def dev_show(handles: list[str], as_json: bool = False, pretty: bool = False) -> str:
    if as_json:
        return dump_json({"dev": {h: {} for h in handles}}, pretty)
    return "".join(f"{h}\n" for h in handles)


def eswitch_show(devs: list[dict], as_json: bool = False, pretty: bool = False) -> str:
    """devs: ``[{"handle", "mode", "inline_mode", "encap_mode"}]``."""
    if as_json:
        obj = {"dev": {d["handle"]: {"mode": d["mode"], "inline-mode": d["inline_mode"],
                                     "encap-mode": d["encap_mode"]} for d in devs}}
        return dump_json(obj, pretty)
    return "".join(f"{d['handle']}: mode {d['mode']} inline-mode {d['inline_mode']} encap-mode {d['encap_mode']}\n"
                   for d in devs)


def _port_attrs(port: dict) -> dict:
    return {k: port[k] for k in PORT_ATTR_ORDER if k in port and port[k] is not None}


def _function_attrs(port: dict) -> dict:
    fn = port.get("function") or {}
    return {k: fn[k] for k in FUNCTION_ATTR_ORDER if k in fn and fn[k] is not None}


def port_show(ports: list[dict], as_json: bool = False, pretty: bool = False) -> str:
    if as_json:
        obj: dict = {"port": {}}
        for p in ports:
            entry = _port_attrs(p)
            fn = _function_attrs(p)
            if fn:
                entry["function"] = fn
            obj["port"][p["handle"]] = entry
        return dump_json(obj, pretty)
    lines = []
    for p in ports:
        attrs = " ".join(f"{k} {_text_value(v)}" for k, v in _port_attrs(p).items())
        lines.append(f"{p['handle']}: {attrs}")
        fn = _function_attrs(p)
        if fn:
            lines.append("  function:")
            lines.append("    " + " ".join(f"{k} {_text_value(v)}" for k, v in fn.items()))
    return "".join(line + "\n" for line in lines)


def param_show(handle_params: list[tuple[str, list[dict]]], as_json: bool = False, pretty: bool = False) -> str:
    """handle_params: ``[(handle, [param, ...]), ...]`` in device order."""
    if as_json:
        obj: dict = {"param": {}}
        for handle, params in handle_params:
            obj["param"][handle] = [
                {"name": p["name"], "type": p["type"],
                 "values": [{"cmode": v["cmode"], "value": v["value"]} for v in p["values"]]}
                for p in params
            ]
        return dump_json(obj, pretty)
    out = []
    for handle, params in handle_params:
        for p in params:
            out.append(f"{handle}:")
            out.append(f"  name {p['name']} type {p['type']}")
            out.append("    values:")
            for v in p["values"]:
                out.append(f"      cmode {v['cmode']} value {_text_value(v['value'])}")
    return "".join(line + "\n" for line in out)


def dev_info(devs: list[dict], as_json: bool = False, pretty: bool = False) -> str:
    """devs: ``[{"handle", "driver", "serial_number"?, "board.serial_number"?, "versions": {...}}]``."""
    top_keys = ("driver", "serial_number", "board.serial_number")
    if as_json:
        obj: dict = {"info": {}}
        for d in devs:
            entry = {k: d[k] for k in top_keys if d.get(k) is not None}
            versions = {kind: dict(d["versions"][kind]) for kind in ("fixed", "running", "stored")
                        if d.get("versions", {}).get(kind)}
            if versions:
                entry["versions"] = versions
            obj["info"][d["handle"]] = entry
        return dump_json(obj, pretty)
    out = []
    for d in devs:
        out.append(f"{d['handle']}:")
        for k in top_keys:
            if d.get(k) is not None:
                out.append(f"  {k} {d[k]}")
        versions = d.get("versions") or {}
        if any(versions.get(kind) for kind in ("fixed", "running", "stored")):
            out.append("  versions:")
            for kind in ("fixed", "running", "stored"):
                if versions.get(kind):
                    out.append(f"      {kind}:")
                    for name, value in versions[kind].items():
                        out.append(f"        {name} {value}")
    return "".join(line + "\n" for line in out)
