# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``ip [-d] [-s] xfrm state`` and ``ip xfrm policy`` (iproute2 ip/ipxfrm.c, ip/xfrm_*.c).

Layout (``shared/corpus/ip-xfrm/FORMAT-from-source.md`` and the verbatim samples): a record starts
with a line ``src A dst B [selector]`` at column 0; its attributes follow on lines indented by a TAB
(published copies: spaces), each a run of ``key value`` words:

state::

    src 192.169.101.2 dst 192.169.101.1
    <TAB>proto esp spi 0xc88b7652 reqid 1 mode tunnel
    <TAB>replay-window 0 flag af-unspec esn
    <TAB>aead rfc4106(gcm(aes)) 0x<key> 128          (or: enc NAME 0x<key> / auth|auth-trunc NAME 0x<key> [bits])
    <TAB>anti-replay esn context: ...                (followed by <TAB><space> lines)
    <TAB>crypto offload parameters: dev eth2 dir out mode packet

policy::

    src 192.170.0.0/16 dst 192.170.0.0/16
    <TAB>dir out priority 383615 ptype main           ("socket in|out" for socket policies)
    <TAB>tmpl src 192.169.101.2 dst 192.169.101.1
    <TAB><TAB>proto esp spi 0xc88b7652 reqid 1 mode tunnel
    <TAB>crypto offload parameters: dev eth2 mode packet

Policy and state lines are read by keyword (the word after ``priority``, ``reqid`` ...), so the
optional words of ``ip -s`` (``action allow``, ``index``, ``share``, ``flag ...``, ``seq``) do not
shift anything (iproute2 ip/ipxfrm.c xfrm_state_info_print / xfrm_policy_info_print, read at
iproute2/iproute2@048bff6e0206bca33ee70516521f3048e7714752).
The offload line is ``dev X dir D`` on iproute2 <= 6.1 and gained ``mode crypto|packet`` later;
policies print no ``dir``. Key material (the hex after the algorithm name) is never returned:
parsed data ends up in logs and reports. Lines this parser does not know (lifetime, stats, -d
extras) are skipped. Empty output (no SA / no policy) is an empty list.
"""

from __future__ import annotations

import re

from ansible_collections.bluefleet.dpu.plugins.module_utils.parsers._parse_common import (
    LazyPattern,
    ParseError,
    split_lines,
    to_int,
)

_ANNOTATION_RE = LazyPattern(r"\([^()]*\)$")
_BITS_RE = LazyPattern(r"\s\(\d+ bits\)")
_OFFLOAD_RE = LazyPattern(r"^(?:crypto )?offload parameters:\s*(?P<rest>.*)$")


def _pairs(tokens):
    out = {}
    for i in range(0, len(tokens) - 1, 2):
        out[tokens[i]] = tokens[i + 1]
    return out


def _after(tokens, key):
    """The word after ``key`` in ``tokens`` (None when absent): robust to flag words between pairs.

    ``ip -s`` glues a second rendering to some values (``spi 0x0000abcd(43981)``, ``reqid 1(0x00000001)``,
    ipxfrm.c xfrm_id_info_print); that suffix is dropped.
    """
    for i, token in enumerate(tokens[:-1]):
        if token == key:
            return _ANNOTATION_RE.sub("", tokens[i + 1]) or tokens[i + 1]
    return None


def _int_after(tokens, key):
    value = to_int(_after(tokens, key) or "")
    return value if isinstance(value, int) else None


def _records(kind, text):
    """``[(line_no, head_line, [(line_no, stripped_body_line, raw_line), ...]), ...]``."""
    lines = split_lines(text)
    records = []
    first_other = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if line.startswith("src ") and " dst " in line:
            records.append((number, line, []))
        elif line[:1].isspace() and records:
            records[-1][2].append((number, line.strip(), line))
        elif first_other is None:
            first_other = (number, line)
    if not records and first_other is not None:
        raise ParseError(kind, "no 'src ... dst ...' record (ip xfrm output expected)", *first_other)
    return records


def _head(kind, number, line):
    tokens = line.split()
    attrs = _pairs(tokens)
    if "src" not in attrs or "dst" not in attrs:
        raise ParseError(kind, "record line without 'src A dst B'", number, line)
    selector = {k: to_int(v) for k, v in attrs.items() if k not in ("src", "dst")}
    return attrs["src"], attrs["dst"], selector


def _offload(rest):
    attrs = _pairs(rest.split())
    return {"dev": attrs.get("dev"), "dir": attrs.get("dir"), "mode": attrs.get("mode")}


def _algorithm(tokens):
    """``enc NAME 0xKEY`` / ``auth-trunc NAME 0xKEY 128`` / ``aead NAME 0xKEY 128`` -> name and bit counts.

    ``ip -s`` inserts `` (N bits)`` after the key (ipxfrm.c __xfrm_algo_print); those words are dropped.
    """
    words = _BITS_RE.sub("", " ".join(tokens)).split()
    algo = {"name": words[1] if len(words) > 1 else None, "key_bits": None, "icv_bits": None}
    if len(words) > 2 and re.match(r"^0x(?:[0-9a-fA-F]{2})+$", words[2]):
        algo["key_bits"] = (len(words[2]) - 2) * 4  # whole bytes only; anything else is not a key
    if len(words) > 3:
        bits = to_int(words[3])
        algo["icv_bits"] = bits if isinstance(bits, int) else None
    return algo


def parse_state(text):
    kind = "xfrm-state"
    states = []
    for number, head, body in _records(kind, text):
        src, dst, selector = _head(kind, number, head)
        state = {
            "src": src, "dst": dst, "proto": None, "spi": None, "reqid": None, "mode": None,
            "replay_window": None, "flags": [], "esn": False,
            "aead": None, "enc": None, "auth": None, "aead_info": None, "enc_info": None, "auth_info": None,
            "encap": None, "sel": None, "sa_dir": None, "offload": None,
        }
        for _line_no, stripped, _raw in body:
            tokens = stripped.split()
            first = tokens[0]
            offload = _OFFLOAD_RE.match(stripped)
            if offload:
                state["offload"] = _offload(offload.group("rest"))
            elif first == "proto" and state["proto"] is None:
                state["proto"] = _after(tokens, "proto")
                state["spi"] = _after(tokens, "spi")
                state["reqid"] = _int_after(tokens, "reqid")
                state["mode"] = _after(tokens, "mode")
            elif first == "replay-window":
                # "replay-window N [seq 0x..] [flag f1 f2 ...] [(0x..)]" (seq and the mask only with -s)
                state["replay_window"] = _int_after(tokens, "replay-window")
                if "flag" in tokens:
                    state["flags"] = [t for t in tokens[tokens.index("flag") + 1:] if not t.startswith("(")]
                    state["esn"] = "esn" in state["flags"]
            elif first in ("aead", "enc"):
                info = _algorithm(tokens)
                state[first] = info["name"]
                state[first + "_info"] = info
            elif first in ("auth", "auth-trunc"):
                info = _algorithm(tokens)
                state["auth"] = info["name"]
                state["auth_info"] = info
            elif first == "encap":
                attrs = _pairs(tokens[1:])
                state["encap"] = {k: to_int(v) for k, v in attrs.items()}
            elif first == "sel":
                state["sel"] = {k: to_int(v) for k, v in _pairs(tokens[1:]).items()}
            elif first == "dir" and len(tokens) == 2:
                state["sa_dir"] = tokens[1]
        if state["proto"] is None:
            raise ParseError(kind, "state without a 'proto ... spi ...' line", number, head)
        states.append(state)
    return {"states": states}


def parse_policy(text):
    kind = "xfrm-policy"
    policies = []
    for number, head, body in _records(kind, text):
        src, dst, selector = _head(kind, number, head)
        policy = {"src": src, "dst": dst, "selector": selector, "dir": None, "socket": False, "priority": None,
                  "ptype": None, "index": None, "action": None, "tmpl": [], "offload": None}
        tmpl = None
        for line_no, stripped, raw in body:
            tokens = stripped.split()
            first = tokens[0]
            offload = _OFFLOAD_RE.match(stripped)
            if offload:
                policy["offload"] = _offload(offload.group("rest"))
            elif first in ("dir", "socket"):
                # "dir|socket D [action A] [index N] priority N [ptype T] [share S] [flag ...]"
                policy["dir"] = _after(tokens, first)
                policy["socket"] = first == "socket"
                policy["priority"] = _int_after(tokens, "priority")
                policy["ptype"] = _after(tokens, "ptype")
                policy["index"] = _int_after(tokens, "index")
                policy["action"] = _after(tokens, "action")
            elif first == "tmpl":
                attrs = _pairs(tokens[1:])
                tmpl = {"src": attrs.get("src"), "dst": attrs.get("dst"), "proto": None, "spi": None, "reqid": None,
                        "mode": None, "level": None}
                policy["tmpl"].append(tmpl)
            elif first in ("proto", "level") and tmpl is not None:
                for key in ("proto", "spi", "mode", "level"):
                    if key in tokens:
                        tmpl[key] = _after(tokens, key)
                if "reqid" in tokens:
                    tmpl["reqid"] = _int_after(tokens, "reqid")
                    if tmpl["reqid"] is None:
                        raise ParseError(kind, "reqid is not a number", line_no, raw)
        if policy["dir"] is None:
            raise ParseError(kind, "policy without a 'dir ...' line", number, head)
        policies.append(policy)
    return {"policies": policies}


PARSERS = {"xfrm-state": parse_state, "xfrm-policy": parse_policy}
