# ruff: noqa: UP031  (printf-style formats on purpose: they mirror the C printf formats of the real tools)
"""``mlxconfig`` / ``mstconfig``: q, -e q, set (s), reset, -y, -d by mst path or PCI address.

Layouts follow corpus/mlxconfig/FORMAT-from-source.md (mstflint mlxcfg_ui.cpp); three eras are
modelled and chosen by the profile's ``mlxconfig_layout`` (override: ``DPUSIM_MLXCONFIG_LAYOUT``):

* ``2022`` (mstflint <= 2022-07, old MFT): labels %-16s%-16s, 9-space indent, name %-36s,
  values %-16s; verified by bf2-query-e-old-format-abridged.
* ``2023`` (mstflint 2023-07..2024-11): labels %-16s%-16s, 8-char prefix, name %-44s,
  values %-16s; verified by bf3-b3220-mstconfig-q-dpu-mode-head.
* ``2025`` (mstflint >= 2025-01 = MFT 4.30): labels %-20s%-20s, 8-char prefix, name %-44s,
  values %-20s with one space between columns; verified by cx7-query-filtered-egrep.

The set layout ("Next Boot       New" column, prompt echo, "Applying... Done!") is taken from
public captures of ``mlxconfig set`` on ConnectX-4/5/6/7 with the same eras.

Semantics: set/reset write Next Boot only; ``dpusim.device`` moves Next Boot to Current on the
right reset. A restricted host (mlxprivhost r) cannot write.
"""

from __future__ import annotations

import os
import re
import sys

from dpusim import profiles, state
from dpusim.tools._common import (
    ToolExit,
    check_arm_up,
    emit,
    find_function,
    pop_flag,
    pop_value,
    privileged_for_write,
    run_tool,
    visible_cards,
)

NAMES = ("mlxconfig", "mstconfig")

DIFF_FOOTER = "The '*' shows parameters with next value different from default/current value.\n"


def layout_of(card: state.Card) -> str:
    return os.environ.get("DPUSIM_MLXCONFIG_LAYOUT") or card.profile.get("mlxconfig_layout", "2025")


def render_value(spec: dict, raw) -> str:
    kind = spec["type"]
    if kind == "array":
        return str(raw)
    if kind == "bool":
        return "True(1)" if raw else "False(0)"
    if kind == "enum":
        for sym, num in spec["values"].items():
            if num == raw:
                return "%s(%d)" % (sym, num)
        return str(raw)
    return str(raw)


def parse_value(name: str, spec: dict, text: str):
    """Accept what mlxconfig accepts: a number, a symbolic name, True/False; None if invalid."""
    kind = spec["type"]
    t = text.strip()
    m = re.fullmatch(r"(\w+)\((\d+)\)", t)
    if m:
        t = m.group(2)
    if kind == "array":
        return None
    if kind == "bool":
        low = t.lower()
        if low in ("1", "true"):
            return 1
        if low in ("0", "false"):
            return 0
        return None
    if kind == "enum":
        for sym, num in spec["values"].items():
            if t.upper() == sym.upper():
                return num
        if t.isdigit() and int(t) in spec["values"].values():
            return int(t)
        return None
    if re.fullmatch(r"0x[0-9a-fA-F]+", t):
        return int(t, 16)
    if t.isdigit():
        return int(t)
    return None


class Layout:
    def __init__(self, era: str):
        self.era = era
        self.label_w = 20 if era == "2025" else 16
        self.name_w = 36 if era == "2022" else 44
        self.val_w = 20 if era == "2025" else 16
        self.sep = " " if era == "2025" else ""

    def label(self, key: str, value: str) -> str:
        return "%-*s%-*s\n" % (self.label_w, key, self.label_w, value)

    def conf_header(self, columns: list[str]) -> str:
        if columns == ["Next Boot"]:
            if self.era == "2022":
                return "%-16s%38s\n" % ("Configurations:", "Next Boot")
            return "%-*s%46s\n" % (self.label_w, "Configurations:", "Next Boot")
        if columns == ["Next Boot", "New"]:
            if self.era == "2022":
                return "%-16s%38s%10s\n" % ("Configurations:", "Next Boot", "New")
            return "%-*s%46s%10s\n" % (self.label_w, "Configurations:", "Next Boot", "New")
        # Default / Current / Next Boot
        if self.era == "2022":
            return "%-16s%36s%16s%18s\n" % ("Configurations:", "Default", "Current", "Next Boot")
        if self.era == "2023":
            return "%-16s%44s%16s%18s\n" % ("Configurations:", "Default", "Current", "Next Boot")
        return "%-20s%44s%20s%18s\n" % ("Configurations:", "Default", "Current", "Next Boot")

    def param(self, name: str, values: list[str], star: bool = False) -> str:
        if self.era == "2022":
            prefix = "*        " if star else "         "
        else:
            prefix = ("*" if star else " ") + "  " + "     "
        cols = self.sep.join("%-*s" % (self.val_w, v) for v in values)
        return "%s%-*s%s\n" % (prefix, self.name_w, name, cols)


def device_header(out: list[str], lay: Layout, index: int, card: state.Card, dev: str) -> None:
    prof = card.profile
    out.append("\nDevice #%d:\n" % index)
    out.append("----------\n\n")
    out.append(lay.label("Device type:", prof["device_type"]))
    out.append(lay.label("Name:", card.ident("part_number")))
    out.append(lay.label("Description:", card.ident("description")))
    out.append(lay.label("Device:", dev))
    out.append("\n")


def check_names(card: state.Card, names: list[str]) -> None:
    catalogue = card.profile["mlxconfig"]
    for name in names:
        if name in catalogue:
            continue
        if any(name in profiles.get(p)["mlxconfig"] for p in profiles.NAMES):
            # The parameter exists, but not on this device / firmware (bf3-error-strings-unknown-param).
            raise ToolExit("-E- Failed to find Param / TLV with name '%s'" % name)
        raise ToolExit("-E- Unknown Parameter: %s" % name)


def render_query(card: state.Card, dev: str, names: list[str], extended: bool, index: int = 1) -> str:
    lay = Layout(layout_of(card))
    catalogue = card.profile["mlxconfig"]
    cfg = card.data["mlxconfig"]
    out: list[str] = []
    device_header(out, lay, index, card, dev)
    wanted = names or list(catalogue)
    if extended:
        out.append(lay.conf_header(["Default", "Current", "Next Boot"]))
        for name in wanted:
            spec = catalogue[name]
            d, c, n = spec["default"], cfg["current"].get(name, spec["default"]), cfg["next"].get(name, spec["default"])
            out.append(lay.param(name, [render_value(spec, d), render_value(spec, c), render_value(spec, n)],
                                 star=(n != d or n != c)))
        out.append(DIFF_FOOTER)
    else:
        out.append(lay.conf_header(["Next Boot"]))
        for name in wanted:
            spec = catalogue[name]
            out.append(lay.param(name, [render_value(spec, cfg["next"].get(name, spec["default"]))]))
    return "".join(out)


def ask(question: str, assume_yes: bool) -> bool:
    """askUser: "\\n <question> (y/n) [n] : " and, with -y, the tool echoes "y"."""
    emit("\n %s (y/n) [n] : " % question)
    if assume_yes:
        emit("y\n")
        return True
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def resolve(node: state.Node, device: str | None) -> list[tuple[state.Card, str]]:
    if device is None:
        return [(c, node.card_entry(c)["mst"]) for c in visible_cards(node)]
    found = find_function(node, device)
    if found is None:
        # No capture of this error in the corpus; text per mstflint mlxcfg ("-E- Failed to open device").
        raise ToolExit("-E- Failed to open device: %s. No such file or directory" % device)
    return [(found[0], device)]


def body(argv: list[str], prog: str) -> int:
    argv = list(argv)
    device = pop_value(argv, "-d", "--dev")
    assume_yes = pop_flag(argv, "-y", "--yes")
    extended = pop_flag(argv, "-e", "--enable_verbosity")
    if not argv:
        raise ToolExit("-E- No command found. Use: %s -d <device> q|set|reset" % prog)
    cmd, rest = argv[0], argv[1:]
    if cmd in ("q", "query"):
        node = state.load_node()
        check_arm_up(node)
        targets = resolve(node, device)
        for card, _dev in targets:
            if card.data.get("mode_change_unsettled"):
                # corpus/mlxconfig/bf2-error-nv-access-registers.txt (mstflint issue #1191): a BlueField
                # whose INTERNAL_CPU_MODEL changed and was reset without a power cycle.
                raise ToolExit("-E- Error when trying to check if NV access registers are supported")
        if targets:
            check_names(targets[0][0], rest)
        out = [render_query(card, dev, rest, extended, i + 1) for i, (card, dev) in enumerate(targets)]
        emit("".join(out))
        return 0
    if cmd in ("s", "set", "set_raw"):
        return do_set(device, rest, assume_yes)
    if cmd in ("r", "reset"):
        return do_reset(device, assume_yes)
    raise ToolExit("-E- Invalid command: %s" % cmd)


def do_set(device: str | None, assignments: list[str], assume_yes: bool) -> int:
    if device is None:
        raise ToolExit("-E- Please specify a device (-d) for the set command")
    if not assignments:
        raise ToolExit("-E- No parameters to set were given; use NAME=VALUE")
    node = state.load_node()
    check_arm_up(node)
    card, dev = resolve(node, device)[0]
    catalogue = card.profile["mlxconfig"]
    pairs = []
    for item in assignments:
        name, sep, text = item.partition("=")
        if not sep:
            raise ToolExit("-E- Bad configuration format: '%s', expected NAME=VALUE" % item)
        check_names(card, [name])
        value = parse_value(name, catalogue[name], text)
        if value is None:
            # Not captured in the corpus: twin wording.
            raise ToolExit("-E- Bad value '%s' for parameter %s" % (text, name))
        pairs.append((name, value))
    lay = Layout(layout_of(card))
    out: list[str] = []
    device_header(out, lay, 1, card, dev)
    out.append(lay.conf_header(["Next Boot", "New"]))
    nxt = card.data["mlxconfig"]["next"]
    for name, value in pairs:
        spec = catalogue[name]
        out.append(lay.param(name, [render_value(spec, nxt.get(name, spec["default"])), render_value(spec, value)]))
    emit("".join(out))
    if not ask("Apply new Configuration?", assume_yes):
        raise ToolExit("Aborted by user")
    emit("Applying... ")
    with state.open_node() as wnode:
        wcard = next(c for c in wnode.cards if c.dir == card.dir)
        if not privileged_for_write(wnode, wcard):
            emit("Failed!\n")
            # No RESTRICTED capture in the corpus (INDEX.md "Gaps"): twin wording.
            raise ToolExit("-E- Failed to set configuration: the host is restricted (mlxprivhost); "
                           "change it from the DPU Arm side")
        for name, value in pairs:
            wcard.data["mlxconfig"]["next"][name] = value
    emit("Done!\n")
    emit("-I- Please reboot machine to load new configurations.\n")
    return 0


def do_reset(device: str | None, assume_yes: bool) -> int:
    if device is None:
        raise ToolExit("-E- Please specify a device (-d) for the reset command")
    node = state.load_node()
    check_arm_up(node)
    card, dev = resolve(node, device)[0]
    if not ask("Reset configuration for device %s?" % dev, assume_yes):
        raise ToolExit("Aborted by user")
    emit("Applying... ")
    with state.open_node() as wnode:
        wcard = next(c for c in wnode.cards if c.dir == card.dir)
        if not privileged_for_write(wnode, wcard):
            emit("Failed!\n")
            raise ToolExit("-E- Failed to reset configuration: the host is restricted (mlxprivhost); "
                           "change it from the DPU Arm side")
        for name, spec in wcard.profile["mlxconfig"].items():
            wcard.data["mlxconfig"]["next"][name] = spec["default"]
    emit("Done!\n")
    emit("-I- Please reboot machine to load new configurations.\n")
    return 0


def main(argv: list[str], prog: str) -> int:
    return run_tool(body, argv, prog)
