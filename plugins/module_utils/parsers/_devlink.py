# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for iproute2 ``devlink`` output: dev info, dev eswitch, port, dev param.

Both forms are read: the text form and the JSON form (``devlink -j`` / ``-jp``), told apart by
the first non-space character. Layout references: ``shared/corpus/devlink/FORMAT-from-source.md``
(iproute2 devlink/devlink.c) and the verbatim samples next to it.

Text form, in short:
* a device or port handle starts a record: ``bus/name`` or ``bus/name/index``, followed by ``:``
  and either the attributes on the same line (eswitch, port, older param) or nothing, with the
  attributes on indented lines below (info, param);
* attributes are ``key value`` pairs separated by single spaces;
* ``devlink monitor`` prefixes lines with ``[object,cmd]``; that prefix is accepted and dropped.

Lines that are not part of a record (shell prompts ``$ ...`` or ``# ...`` in pasted captures, blank
lines, remarks) are ignored; output with no record at all is a ParseError naming its first line.
"""

from __future__ import annotations

import json
import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
)

_HANDLE_RE = LazyPattern(r"^[a-z][a-z0-9_]*/[^\s/]+(?:/\d+)?$")
_MONITOR_PREFIX_RE = LazyPattern(r"^\[[a-z_]+,[a-z_]+\]\s*")
_PORT_INT_KEYS = ("controller", "pfnum", "vfnum", "sfnum", "port", "lanes", "split_group", "max_io_eqs", "lc")
_PORT_BOOL_KEYS = ("external", "splittable")


def _is_json(text):
    stripped = text.lstrip()
    return stripped.startswith("{")


def _load_json(kind, text, section):
    """The ``{section: {handle: ...}}`` object of a ``devlink -j`` answer."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(kind, f"invalid JSON (devlink -j output expected): {exc}") from None
    if not isinstance(data, dict) or section not in data:
        raise ParseError(kind, f"JSON without the {section!r} section that devlink -j prints")
    body = data[section]
    if not isinstance(body, dict):
        raise ParseError(kind, f"JSON section {section!r} is not an object of handles")
    for handle in body:
        if not _HANDLE_RE.match(handle):
            raise ParseError(kind, f"JSON key {handle!r} is not a devlink handle (bus/device[/index])")
    return body


def _split_handle(line):
    """``(handle, rest)`` when ``line`` starts with a devlink handle, else ``(None, None)``.

    ``rest`` is the text after ``handle:`` (may be empty). Accepts the handle with or without
    the trailing colon (``devlink dev show`` prints bare handles).
    """
    line = _MONITOR_PREFIX_RE.sub("", line.strip())
    if not line:
        return None, None
    first, dummy, rest = line.partition(" ")
    handle = first[:-1] if first.endswith(":") else first
    if not _HANDLE_RE.match(handle):
        return None, None
    return handle, rest.strip()


def _pairs(kind, tokens, line_no, line):
    """``["k1", "v1", "k2", "v2"]`` -> dict. A lone last token (unknown flag) is kept with value None."""
    out = {}
    for i in range(0, len(tokens) - 1, 2):
        out[tokens[i]] = tokens[i + 1]
    if len(tokens) % 2:
        out[tokens[-1]] = None
    if not out:
        raise ParseError(kind, "expected 'key value' attributes", line_no, line)
    return out


def _text_scalar(value):
    """devlink prints numbers and booleans bare in text; make them what ``-j`` gives."""
    if value == "true":
        return True
    if value == "false":
        return False
    if value is not None and re.match(r"^-?\d+$", value):
        return int(value)
    return value


def _no_records(kind, lines, what):
    for number, line in enumerate(lines, 1):
        if line.strip():
            raise ParseError(kind, f"no {what} found (devlink output expected)", number, line)
    raise ParseError(kind, "empty output")


# ---------------------------------------------------------------------------------------------
# devlink dev info
# ---------------------------------------------------------------------------------------------

def _info_record(driver=None, serial=None):
    return {
        "driver": driver,
        "serial_number": serial,
        "board_serial_number": None,
        "other": {},  # further top-level attributes as printed (e.g. function.uid on recent kernels)
        "versions": {"fixed": {}, "running": {}, "stored": {}},
    }


def parse_dev_info(text):
    kind = "devlink-dev-info"
    if _is_json(text):
        body = _load_json(kind, text, "info")
        devices = {}
        for handle, attrs in body.items():
            if not isinstance(attrs, dict):
                raise ParseError(kind, f"JSON info of {handle} is not an object")
            record = _info_record(attrs.get("driver"), attrs.get("serial_number"))
            record["board_serial_number"] = attrs.get("board.serial_number")
            known = ("driver", "serial_number", "board.serial_number", "versions")
            record["other"] = {
                str(k): v for k, v in attrs.items() if k not in known and not isinstance(v, dict | list)
            }
            versions = attrs.get("versions") or {}
            if not isinstance(versions, dict):
                raise ParseError(kind, f"JSON versions of {handle} is not an object")
            for section in ("fixed", "running", "stored"):
                entries = versions.get(section) or {}
                if not isinstance(entries, dict):
                    raise ParseError(kind, f"JSON versions.{section} of {handle} is not an object")
                record["versions"][section] = {str(k): str(v) for k, v in entries.items()}
            devices[handle] = record
        return {"devices": devices}

    lines = split_lines(text)
    devices = {}
    current = None
    section = None  # None, "versions" or a versions section name
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        handle, rest = _split_handle(line)
        if handle is not None and not line[:1].isspace():
            current = section = None
            if handle.count("/") != 1:
                continue  # a port handle: not dev info output
            current = devices.setdefault(handle, _info_record())
            if rest:
                # some iproute2 versions print the first attributes on the handle line
                tokens = rest.split()
                for key, value in _pairs(kind, tokens, number, line).items():
                    _info_attr(current, key, value)
            continue
        if current is None or not line[:1].isspace():
            continue  # prompt, error text or remark outside a record
        if stripped == "versions:":
            section = "versions"
            continue
        if stripped in ("fixed:", "running:", "stored:") and section is not None:
            section = stripped[:-1]
            continue
        if stripped.endswith(":") and " " not in stripped:
            section = "other"  # an attribute block this parser does not know (e.g. nested_devlink)
            continue
        tokens = stripped.split(None, 1)
        if len(tokens) != 2:
            raise ParseError(kind, "expected 'name value'", number, line)
        key, value = tokens[0], tokens[1].strip()
        if section in ("fixed", "running", "stored"):
            current["versions"][section][key] = value
        elif section is None:
            _info_attr(current, key, value)
    # every dev info record names its driver; a handle without one is some other devlink output
    devices = {h: r for h, r in devices.items() if r["driver"] is not None or any(r["versions"].values())}
    if not devices:
        _no_records(kind, lines, "device with 'driver' or 'versions:'")
    return {"devices": devices}


def _info_attr(record, key, value):
    if key == "driver":
        record["driver"] = value
    elif key == "serial_number":
        record["serial_number"] = value
    elif key == "board.serial_number":
        record["board_serial_number"] = value
    else:
        record["other"][key] = value


# ---------------------------------------------------------------------------------------------
# devlink dev eswitch show
# ---------------------------------------------------------------------------------------------

def _eswitch_record(attrs):
    # iproute2 prints ``encap-mode none|basic``; older releases printed ``encap enable`` (a public capture is
    # among the fixtures). The value is kept as printed.
    encap = attrs.get("encap-mode", attrs.get("encap"))
    return {"mode": attrs.get("mode"), "inline_mode": attrs.get("inline-mode"), "encap_mode": encap}


def parse_eswitch(text):
    kind = "devlink-eswitch"
    if _is_json(text):
        body = _load_json(kind, text, "dev")
        devices = {}
        for handle, attrs in body.items():
            if not isinstance(attrs, dict):
                raise ParseError(kind, f"JSON eswitch of {handle} is not an object")
            record = _eswitch_record(attrs)
            devices[handle] = {k: (v if v is None else str(v)) for k, v in record.items()}
        return {"devices": devices}
    lines = split_lines(text)
    devices = {}
    for number, line in enumerate(lines, 1):
        handle, rest = _split_handle(line)
        if handle is None or not rest:
            continue
        attrs = _pairs(kind, rest.split(), number, line)
        if "mode" not in attrs:
            raise ParseError(kind, "eswitch line without 'mode'", number, line)
        devices[handle] = _eswitch_record(attrs)
    if not devices:
        _no_records(kind, lines, "'HANDLE: mode ...' line")
    return {"devices": devices}


# ---------------------------------------------------------------------------------------------
# devlink port show
# ---------------------------------------------------------------------------------------------

def _port_record(handle, attrs, function):
    record = {
        "device": handle.rsplit("/", 1)[0],
        "type": None,
        "netdev": None,
        "ibdev": None,
        "flavour": None,
        "controller": None,
        "pfnum": None,
        "vfnum": None,
        "sfnum": None,
        "port": None,
        "external": None,
        "splittable": None,
        "function": function,
    }
    for key, value in attrs.items():
        if key in _PORT_INT_KEYS + _PORT_BOOL_KEYS and isinstance(value, str):
            record[key] = _text_scalar(value)
        else:
            record[key] = value
    return record


def parse_port(text):
    kind = "devlink-port"
    if _is_json(text):
        body = _load_json(kind, text, "port")
        ports = {}
        for handle, attrs in body.items():
            if not isinstance(attrs, dict) or handle.count("/") != 2:
                raise ParseError(kind, f"JSON port {handle} is not an object keyed by bus/dev/index")
            function = attrs.get("function")
            if function is not None and not isinstance(function, dict):
                raise ParseError(kind, f"JSON function of {handle} is not an object")
            others = {key: value for key, value in attrs.items() if key != "function"}
            ports[handle] = _port_record(handle, others, function)
        return {"ports": ports}

    lines = split_lines(text)
    ports = {}
    current = None
    in_function = False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        handle, rest = _split_handle(line)
        if handle is not None and not line[:1].isspace():
            current = None
            in_function = False
            if handle.count("/") != 2 or not rest:
                continue  # a device handle (devlink dev show), not a port
            attrs = _pairs(kind, rest.split(), number, line)
            current = ports[handle] = _port_record(handle, attrs, None)
            continue
        if current is None or not line[:1].isspace():
            current = None  # a prompt or remark ends the record
            continue
        if stripped == "function:":
            in_function = True
            current["function"] = {}
            continue
        if in_function:
            for key, value in _pairs(kind, stripped.split(), number, line).items():
                current["function"][key] = _text_scalar(value) if key == "max_io_eqs" else value
    if not ports:
        # no devlink device at all prints nothing; devices without ports print bare device handles
        bare = [_split_handle(line) for line in lines if line.strip()]
        if all(handle is not None and handle.count("/") == 1 and not rest for handle, rest in bare):
            return {"ports": {}}
        _no_records(kind, lines, "'HANDLE/INDEX: type ...' port line")
    return {"ports": ports}


# ---------------------------------------------------------------------------------------------
# devlink dev param show
# ---------------------------------------------------------------------------------------------

def _param_value(value):
    return _text_scalar(value) if isinstance(value, str) else value


def parse_param(text):
    kind = "devlink-param"
    if _is_json(text):
        body = _load_json(kind, text, "param")
        devices = {}
        for handle, params in body.items():
            if not isinstance(params, list):
                raise ParseError(kind, f"JSON params of {handle} is not an array")
            device = devices.setdefault(handle, {})
            for param in params:
                if not isinstance(param, dict) or not isinstance(param.get("name"), str):
                    raise ParseError(kind, f"JSON param of {handle} without a name")
                values = {}
                for item in param.get("values") or []:
                    if not isinstance(item, dict) or "cmode" not in item:
                        raise ParseError(kind, "JSON value of {} {} without cmode".format(handle, param["name"]))
                    values[str(item["cmode"])] = item.get("value")
                device[param["name"]] = {"type": param.get("type"), "values": values}
        return {"devices": devices}

    lines = split_lines(text)
    devices = {}
    device = None
    param = None
    for number, line in enumerate(lines, 1):
        stripped = _MONITOR_PREFIX_RE.sub("", line.strip())
        if not stripped:
            continue
        handle, rest = _split_handle(line)
        if handle is not None and (not line[:1].isspace() or line.lstrip().startswith("[")):
            device = param = None
            if handle.count("/") != 1:
                continue  # a port handle: not param output
            device = devices.setdefault(handle, {})
            if rest.startswith("name "):
                param = _param_line(kind, device, rest, number, line)
            continue
        if device is None:
            continue
        if not line[:1].isspace():
            device = param = None  # prompt or remark ends the record
            continue
        if stripped.startswith("name "):
            param = _param_line(kind, device, stripped, number, line)
        elif stripped == "values:":
            continue
        elif stripped.startswith("cmode ") and param is not None:
            attrs = _pairs(kind, stripped.split(), number, line)
            if "value" not in attrs:
                raise ParseError(kind, "cmode line without 'value'", number, line)
            param["values"][attrs["cmode"]] = _param_value(attrs["value"])
    devices = {handle: params for handle, params in devices.items() if params}
    if not devices:
        if not any(line.strip() for line in lines):
            return {"devices": {}}
        _no_records(kind, lines, "'name ... type ...' parameter")
    return {"devices": devices}


def _param_line(kind, device, text, number, line):
    attrs = _pairs(kind, text.split(), number, line)
    name = attrs.get("name")
    if not name:
        raise ParseError(kind, "parameter line without a name", number, line)
    # devlink monitor repeats a parameter when it changes: later lines update the earlier record
    param = device.setdefault(name, {"type": None, "values": {}})
    param["type"] = attrs.get("type", param["type"])
    return param


PARSERS = {
    "devlink-dev-info": parse_dev_info,
    "devlink-eswitch": parse_eswitch,
    "devlink-port": parse_port,
    "devlink-param": parse_param,
}
