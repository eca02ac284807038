# Copyright: (c) 2026, bluefleet developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Answering a module's check from a read made earlier in the run, and saying when that read no longer holds.

A stage whose node already holds everything asked can skip its module runs when a read made earlier in the same
run (preflight's ``dpu_info``) answers their checks. That read holds only while nothing changed the node since:

- ``stale_reason(read, changed_at, reset)``: why ``read`` (a dpu_info or gpu_info result, with ``read_at`` by the
  node's clock) cannot answer, or None. ``changed_at`` is the fact ``bluefleet_changed_at`` (the node's clock when a
  bluefleet module last changed something there; every changing module sets it). ``reset`` says that the card or its
  driver was reset in this run without a bluefleet module (the facts ``bluefleet_card_reset``, ``firmware_card_reset``
  and ``switchdev_card_reset``, of this node or of a GPU host's DPUs: ``__<role>_card_reset`` in each planning role's
  vars/main.yml).
- ``files_changes(section, files, links, root)``: the paths the ``files`` module would write, from dpu_info's
  ``files`` section, or a reason (str) when the section does not answer (not read, another root, a path not read).
- ``plain(value)``: a filter's options as plain dicts, lists and str (the templar's containers and tagged strings cost
  the argument spec checks about 0.3 s of CPU per call), the keys set to ``omit`` left out as Ansible leaves them out
  of a module's arguments; ``module_params(spec, options, label)``: the options as the module's argument spec
  (``spec``) validates them, or why the module would refuse them; ``answer_check(read, options, label, spec, plan,
  ...)``: the answer every ``*_plan`` filter gives (stale read, refused options, or the module's plan from the read).

Pure: data in, data out; no I/O, no AnsibleModule.
"""

from __future__ import annotations

import hashlib
import os

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._files import octal_mode
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._tooling import ToolError


def omitted(value):
    """True for Ansible's ``omit`` as a filter receives it in a dict of options: ansible-core 2.19's sentinel, or the
    older placeholder string. Ansible leaves such a key out of a module's arguments."""
    return type(value).__name__ == "_OmitType" or (isinstance(value, str) and value.startswith("__omit_place_holder__"))


def plain(value):
    """``value`` as plain dicts, lists, str and numbers, the keys whose value is ``omit`` left out (as Ansible leaves
    them out of the module's arguments, so a role can share one dict of options between a module and its plan): the
    templar's containers and tagged strings cost the argument spec checks about 0.3 s of CPU per call, the plain data
    a millisecond."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items() if not omitted(item)}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, str):
        return str(value)
    return value


def stale_reason(read, changed_at=None, reset=False):
    """Why ``read`` no longer holds (see the module docstring), or None."""
    if not isinstance(read, dict) or read.get("read_at") is None:
        return ("there is no read of the node from this run with its time (preflight's bluefleet_dpu_info or "
                "bluefleet_gpu_info)")
    if boolean(reset or False, strict=False):  # a template may give "True" / "False"
        return "the card or its driver was reset in this run after the read"
    if changed_at is not None and float(changed_at) >= float(read["read_at"]):
        return "a bluefleet module changed the node after the read (bluefleet_changed_at)"
    return None


def files_changes(section, files=(), links=(), root="/"):
    """The paths of ``files`` and ``links`` (the files module's options) that differ, or a reason (str)."""
    if not isinstance(section, dict) or not section.get("available"):
        return "the read has no files section"
    if os.path.normpath(section.get("root") or "/") != os.path.normpath(root or "/"):
        return "the files were read under %s, not %s" % (section.get("root"), root)
    paths = section.get("paths") or {}
    changes = []
    for entry in files:
        state = paths.get(entry["path"])
        if state is None or state.get("error"):
            return "%s was not read%s" % (entry["path"], (": " + state["error"]) if state else "")
        try:
            mode = octal_mode(entry.get("mode", "0644"), "mode of %s" % entry["path"])
        except ValueError as exc:
            return str(exc)
        digest = hashlib.sha256(entry["content"].encode("utf-8")).hexdigest()
        if not state["file"] or state["sha256"] != digest or int(state["mode"], 8) != mode:
            changes.append(entry["path"])
    for entry in links:
        state = paths.get(entry["path"])
        if state is None or state.get("error"):
            return "%s was not read%s" % (entry["path"], (": " + state["error"]) if state else "")
        if state["link"] != entry["src"]:
            changes.append(entry["path"])
    return changes


def module_params(spec, options, label, **rules):
    """``(params, None)``: ``options`` validated by the argument spec ``spec`` of the module ``label`` (and ``rules``,
    the module's ``mutually_exclusive``, ``required_one_of``, ...), defaults filled in, as the module gets them;
    ``(None, why)`` when the module would refuse them (its spec, or a timeout that is not positive)."""
    validated = ArgumentSpecValidator(spec, **rules).validate(plain(options))
    if validated.error_messages:
        return None, "%s refuses the options: %s" % (label, "; ".join(validated.error_messages))
    params = validated.validated_parameters
    if "timeout" in params and params["timeout"] <= 0:  # the check of _tooling.run_module
        return None, "%s refuses the options: timeout must be a positive number of seconds, got %d" % (
            label, params["timeout"])
    return params, None


def answer_check(read, options, label, spec, plan, changed_at=None, reset=False, check=None, done="changes",
                 **rules):
    """What a ``*_plan`` filter returns for the module ``label``: ``{answered: False, in_state: False, why}`` when
    ``read`` no longer holds (``stale_reason``) or the module would refuse ``options`` (``module_params`` with
    ``spec`` and ``rules``, then ``check(params)``, the module's own input checks, which raise ToolError); else
    ``plan(read, params)`` with ``in_state``: answered, and its ``done`` key (the changes) empty."""
    why = stale_reason(read, changed_at, reset)
    if not why:
        params, why = module_params(spec, options, label, **rules)
    if not why and check is not None:
        try:
            check(params)
        except ToolError as exc:
            why = "%s refuses the options: %s" % (label, exc.msg)
    if why:
        return {"answered": False, "in_state": False, "why": why}
    answer = plan(read, params)
    if not answer["answered"]:
        return dict(answer, in_state=False)
    return dict(answer, why="", in_state=not answer[done])
