"""Every module has the house shape (docs/anatomy-of-a-module.md).

Parametrised over the modules found in plugins/modules (not a list kept by hand): entry point, parseable
DOCUMENTATION / EXAMPLES / RETURN with the attributes block, the common result keys documented, the shared
argument-spec fragments for the shared option names, no module-level state, files written only through
plumbing/_files.py, and no ``diff`` key in a result unless the user asked for one.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import yaml
from ansible.module_utils import basic
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing import _argspec, _tooling
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from fake_tools import fixture_text

MODULES_DIR = Path(__file__).resolve().parents[4] / "plugins" / "modules"
MODULES = sorted(p.stem for p in MODULES_DIR.glob("*.py") if p.stem != "__init__")
# Modules whose work an action plugin of the same name does on the controller (plugins/action): their file in
# plugins/modules holds the documentation only, as ansible.builtin.set_fact's does.
ACTIONS_DIR = MODULES_DIR.parent / "action"
# Action plugins around a module that does its work on the node (the plugin adds a step on the controller, as
# ansible.builtin.reboot's wait): that module file is a whole module; the options the plugin takes off before the
# module runs (its CONTROLLER_OPTIONS) are in the module's spec and documentation with the same defaults.
WRAPPERS = ("fw_reset",)
ACTIONS = sorted(p.stem for p in ACTIONS_DIR.glob("*.py") if p.stem not in ("__init__",) + WRAPPERS)

# Modules that run tools but do not report the tool's version yet (the version argv of each must be
# checked against the real tool and the twin first). The test below fails when one of them starts to
# document it, so the list only shrinks.
NO_TOOL_VERSION_YET = {"ipsec_child", "nccl_allreduce", "netdev", "rdma_info", "rdma_link_info", "roce_qos"}
# Modules that run no tool at all (they read and write files): no cmd / tool_version to report.
RUNS_NO_TOOL = {"ipsec_offload", "upgrade_record"}
# Modules that run only a command the user gives (files' validate): cmd, but no tool of their own to version.
RUNS_GIVEN_COMMAND = {"files"}
# Option names whose spec must come from plumbing/_argspec.py, and how to rebuild the expected spec
# from the module's own default.
SHARED = {
    "timeout": lambda spec: _argspec.timeout_spec(spec.get("default")),
    "fs_root": lambda spec: _argspec.fs_root_spec(spec.get("aliases", ())),
    "side": lambda spec: _argspec.side_spec(),
    "device": lambda spec: _argspec.device_spec(spec.get("required", False)),
    "wait": lambda spec: _argspec.wait_spec(spec.get("default")),
}
# ib_write_bw's device is the RDMA device (mlx5_0), a different thing from the card's PCI/MST device.
OTHER_MEANING = {("ib_write_bw", "device")}
# Options that name a file although their name does not say so (doca_service's image is a container image).
FILE_OPTIONS = {("nic_firmware", "image"), ("bfb_install", "bfb"), ("bfb_install", "rshim")}


def _source(name):
    return (MODULES_DIR / (name + ".py")).read_text(encoding="utf-8")


def _tree(name):
    return ast.parse(_source(name), filename=name + ".py")


def _docs(name):
    module = importlib.import_module("ansible_collections.bluefleet.dpu.plugins.modules." + name)
    return {key: yaml.safe_load(getattr(module, key)) for key in ("DOCUMENTATION", "EXAMPLES", "RETURN")}


class _Captured(Exception):
    pass


def _argument_spec(name, monkeypatch):
    """The argument_spec the module gives AnsibleModule (captured before any option is checked)."""
    module = importlib.import_module("ansible_collections.bluefleet.dpu.plugins.modules." + name)
    seen = {}

    def capture(self, argument_spec=None, **kwargs):
        seen["spec"] = argument_spec
        raise _Captured()

    monkeypatch.setattr(basic.AnsibleModule, "__init__", capture)
    with pytest.raises(_Captured):
        module.main()
    return seen["spec"]


@pytest.mark.parametrize("name", MODULES)
def test_entry_point(name):
    tree = _tree(name)
    if name in ACTIONS:
        assigned = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets]
        assert sorted(assigned) == ["DOCUMENTATION", "EXAMPLES", "RETURN"], "%s: documentation only" % name
        assert not any(isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.If)) for n in tree.body), name
        return
    assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), "%s has no main()" % name
    guards = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "__name__ == '__main__'"]
    assert guards and ast.unparse(guards[-1].body[0]) == "main()", "%s does not end with the __main__ guard" % name


@pytest.mark.parametrize("name", MODULES)
def test_docs_parse_and_declare_check_and_diff_mode(name):
    docs = _docs(name)
    doc = docs["DOCUMENTATION"]
    assert doc["module"] == name
    assert "check_mode" in doc["attributes"] and "diff_mode" in doc["attributes"]
    for attr in ("check_mode", "diff_mode"):
        assert doc["attributes"][attr]["support"] in ("full", "partial", "none")
    assert "bluefleet.dpu.%s" % name in docs["EXAMPLES"][0].keys() or any(
        "bluefleet.dpu.%s" % name in task for task in docs["EXAMPLES"]), "EXAMPLES must use the FQCN"


@pytest.mark.parametrize("name", MODULES)
def test_return_documents_the_common_keys(name):
    ret = _docs(name)["RETURN"]
    assert "changed" in ret
    if name in RUNS_NO_TOOL:
        assert "ToolRunner" not in _source(name)
        return
    assert "cmd" in ret, "%s runs tools but RETURN does not document cmd" % name
    if name in RUNS_GIVEN_COMMAND:
        assert "tool_version" not in ret, "%s runs no tool of its own: it has no tool_version" % name
    elif name in NO_TOOL_VERSION_YET:
        assert "tool_version" not in ret, "%s reports tool_version now: remove it from NO_TOOL_VERSION_YET" % name
    elif name.endswith("_info") and "tool_versions" in ret:
        pass  # an *_info module talks to many tools and reports each one's version
    else:
        assert "tool_version" in ret


@pytest.mark.parametrize("name", MODULES)
def test_check_mode_prediction_documented_where_returned(name):
    source = _source(name)
    ret = _docs(name)["RETURN"]
    says = "predicts=" in source or "check_mode_prediction" in source
    assert says == ("check_mode_prediction" in ret)


@pytest.mark.parametrize("name", MODULES)
def test_shared_options_come_from_the_fragments(name, monkeypatch):
    if name in ACTIONS:
        spec = importlib.import_module("ansible_collections.bluefleet.dpu.plugins.action." + name).ARGUMENT_SPEC
        assert set(spec) == set(_docs(name)["DOCUMENTATION"]["options"]), "%s: the action's options" % name
    else:
        spec = _argument_spec(name, monkeypatch)
    for option, expected in SHARED.items():
        if option not in spec or (name, option) in OTHER_MEANING:
            continue
        assert spec[option] == expected(spec[option]), "%s: option %s differs from _argspec" % (name, option)
    for option, entry in spec.items():
        if option.endswith(("_root", "_dir", "_path")) or option == "path" or (name, option) in FILE_OPTIONS:
            assert entry.get("type") == "path", "%s: %s names a file or folder; type it path" % (name, option)
    assert "sysfs_root" not in spec or name == "peermem", "%s: sysfs_root is the fs_root option's alias" % name


@pytest.mark.parametrize("name", MODULES)
def test_no_module_level_state(name):
    tree = _tree(name)
    top = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            top.update(t.id for t in node.targets if isinstance(t, ast.Name))
            assert not isinstance(node.value, (ast.List, ast.Set, ast.ListComp, ast.SetComp)), (
                "%s: module-level list/set %s; use a tuple or frozenset" % (name, ast.unparse(node.targets[0])))
    mutators = {"append", "extend", "insert", "update", "pop", "clear", "setdefault", "add", "remove", "discard"}
    for node in ast.walk(tree):
        assert not isinstance(node, (ast.Global, ast.Nonlocal)), "%s uses global/nonlocal" % name
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    assert target.value.id not in top, "%s changes module-level %s" % (name, target.value.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in mutators:
            owner = node.func.value
            assert not (isinstance(owner, ast.Name) and owner.id in top), (
                "%s changes module-level %s" % (name, owner.id))


@pytest.mark.parametrize("name", MODULES)
def test_files_written_only_through_the_helper(name):
    tree = _tree(name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = ast.unparse(node.func)
        assert func not in ("os.replace", "os.rename", "os.fdopen", "module.atomic_move", "tempfile.mkstemp",
                            "shutil.copyfile", "shutil.move"), "%s calls %s; use plumbing/_files.py" % (name, func)
        if func in ("open", "io.open"):
            mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"),
                                                                None)
            text = mode.value if isinstance(mode, ast.Constant) else "r"
            assert not set(text) & set("wax+"), "%s opens a file for writing; use plumbing/_files.py" % name


@pytest.mark.parametrize("name", MODULES)
def test_every_exit_goes_through_the_diff_rule(name):
    """A module either ends in _tooling.run_module or hands its result to without_unasked_diff; a module
    that returns no diff at all (the *_info modules) is free."""
    source = _source(name)
    tree = _tree(name)
    exits = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "module.exit_json"]
    if '"diff"' not in source and "diff=" not in source:
        return
    for call in exits:
        assert any(isinstance(k.value, ast.Call) and ast.unparse(k.value.func) == "without_unasked_diff"
                   for k in call.keywords if k.arg is None), "%s: exit_json with a diff the user did not ask" % name


# Modules that act from the controller (BMC over Redfish, the upgrade record): their clock is not the node's, so they
# leave the change time out; playbooks/bmc_upgrade.yml sets bluefleet_card_reset instead.
CONTROLLER_SIDE = ("bmc_bfb", "bmc_firmware", "bmc_reset", "upgrade_record")


@pytest.mark.parametrize("name", MODULES)
def test_a_module_that_changes_the_node_says_when(name):
    """A module that can change the node ends in _tooling.run_module (which adds the change time) or hands every
    result to with_change_time: a read of the node made earlier in the run (preflight's) no longer answers after
    it. The *_info modules only read."""
    source = _source(name)
    if name in CONTROLLER_SIDE or name.endswith("_info") or "run_module(" in source:
        return
    exits = [n for n in ast.walk(_tree(name)) if isinstance(n, ast.Call) and ast.unparse(n.func) == "module.exit_json"]
    assert exits, name
    for call in exits:
        assert "with_change_time(module, " in ast.unparse(call), "%s: exit_json without the change time" % name


class _FakeModule:
    def __init__(self, check_mode, diff):
        self.params = {"timeout": 5}
        self.check_mode = check_mode
        self._diff = diff
        self.exited = None

    def exit_json(self, **kwargs):
        self.exited = kwargs

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs)


class _Runner:
    def __init__(self, timeout):
        self.cmd = []

    def run(self, argv, timeout=None):
        self.cmd.append(list(argv))
        return CommandResult(argv, 0, "tool 1.2\n", "")


@pytest.mark.parametrize("diff", [False, True])
@pytest.mark.parametrize("check_mode,predicts", [(False, True), (True, True), (True, False), (True, None)])
def test_run_module_result_keys(diff, check_mode, predicts):
    module = _FakeModule(check_mode, diff)

    def work(runner):
        runner.run(["tool", "show"])
        return {"changed": True, "thing": {"a": 1}, "diff": {"before": {"a": 0}, "after": {"a": 1}}}

    _tooling.run_module(module, "test", _Runner, work, lambda result: ["tool", "--version"], predicts=predicts)
    out = module.exited
    assert ("diff" in out) is diff
    assert out["cmd"] == [["tool", "show"], ["tool", "--version"]] and out["tool_version"] == "tool 1.2"
    if check_mode and predicts is not None:
        assert out["check_mode_prediction"] is predicts
    else:
        assert "check_mode_prediction" not in out


def test_a_real_module_leaves_out_the_diff_without_diff_mode(run_module, fake_runner, tmp_path):
    """peermem end to end through main(): the same check-mode run with and without --diff."""
    from ansible_collections.bluefleet.dpu.plugins.modules import peermem

    lsmod = fixture_text("lsmod", "gpu-operator-doc-lsmod-grep-nvidia")
    without = "".join(line + "\n" for line in lsmod.splitlines() if not line.startswith("nvidia_peermem "))
    answers = {("lsmod",): (0, without, ""), ("modprobe", "--version"): (0, "kmod version 30\n", "")}
    args = {"fs_root": str(tmp_path)}
    failed, plain = run_module(peermem, args, fake_runner(answers), check_mode=True, diff=False)
    assert not failed, plain
    assert plain["changed"] is True and "diff" not in plain
    assert plain["check_mode_prediction"] is True and plain["peermem"]["loaded"] is True
    assert list(tmp_path.iterdir()) == [], "check mode wrote nothing"
    failed, with_diff = run_module(peermem, args, fake_runner(answers), check_mode=True, diff=True)
    assert not failed and with_diff["diff"]["after"]["loaded"] is True


def test_roce_qos_keeps_sysfs_root_as_alias(monkeypatch):
    spec = _argument_spec("roce_qos", monkeypatch)
    assert spec["fs_root"]["aliases"] == ["sysfs_root"] and "sysfs_root" not in spec


def test_ipsec_child_wait_seconds_still_work_deprecated(run_module, fake_runner, monkeypatch):
    """ipsec_child's old ``wait`` (seconds) reaches wait_timeout; Ansible warns about it (deprecated_aliases)."""
    from ansible_collections.bluefleet.dpu.plugins.modules import ipsec_child

    seen = {}

    def child(runner, params, check_mode):
        seen.update(params)
        return {"changed": False}

    monkeypatch.setattr(ipsec_child, "run_child", child)
    failed, result = run_module(ipsec_child, {"ike": "a", "child": "b", "wait": 7}, fake_runner({}))
    assert not failed and seen["wait_timeout"] == 7
    deprecated = ipsec_child.argument_spec()["wait_timeout"]["deprecated_aliases"]
    assert deprecated == [{"name": "wait", "version": "2.0.0", "collection_name": "bluefleet.dpu"}]


def test_one_device_handle_type():
    """The collection has one Card class (domain/_cards.py); modules import it instead of defining their own."""
    root = MODULES_DIR.parent
    defined = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if any(isinstance(n, ast.ClassDef) and n.name.endswith("Card")
                            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))))
    assert defined == ["module_utils/domain/_cards.py"], defined


@pytest.mark.parametrize("name", WRAPPERS)
def test_a_wrapping_action_plugin_passes_the_module_its_options(name, monkeypatch):
    assert (ACTIONS_DIR / (name + ".py")).exists() and name in MODULES
    own = importlib.import_module("ansible_collections.bluefleet.dpu.plugins.action." + name).CONTROLLER_OPTIONS
    spec = _argument_spec(name, monkeypatch)
    options = _docs(name)["DOCUMENTATION"]["options"]
    for option, default in own.items():
        assert spec[option].get("default") == default and options[option].get("default") == default, option


def test_every_action_plugin_has_its_documentation_module():
    assert ACTIONS, "plugins/action holds no action plugin"
    for name in ACTIONS:
        assert name in MODULES, "plugins/action/%s.py has no plugins/modules/%s.py documenting it" % (name, name)
        action = importlib.import_module("ansible_collections.bluefleet.dpu.plugins.action." + name)
        assert hasattr(action, "ActionModule") and hasattr(action, "ARGUMENT_SPEC"), name
