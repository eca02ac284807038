"""Preflight's read answers the offload stage's two file checks: dpu_info's section ipsec_offload with the filter
bluefleet.dpu.ipsec_offload_plan (the switchdev role's ipsec_offload), and the section files read with file_lines
with the filter bluefleet.dpu.lineinfile_plan (the firewall role's include in nftables.conf).

The filters must agree with the modules: on the same machine (a file tree and the compat sysfs under tmp_path, laid
out as test_ipsec_offload lays them out) a plan is in state exactly when the module in check mode changes nothing -
for ipsec_offload, no file to write and no driver restart - and gives the same result keys. Where the module fails
the plan does not say "in state"; a read that cannot answer (another root or file, no such section, the node
changed after it, options the module refuses) answers nothing, so the module runs.
"""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible.modules import lineinfile
from ansible_collections.bluefleet.dpu.plugins.filter.ipsec_offload_plan import ipsec_offload_plan
from ansible_collections.bluefleet.dpu.plugins.filter.lineinfile_plan import lineinfile_plan
from ansible_collections.bluefleet.dpu.plugins.modules import dpu_info, ipsec_offload
from fake_tools import FakeRunner, fixture_text
from test_ipsec_offload import CONF, tree

MST = ("mst", "status", "-v")
NO = 'IPSEC_FULL_OFFLOAD="no"'
# ipsec_offload's check-mode result keys the plan gives (diff aside: the read keeps no text of the file)
KEYS = ("changed", "conf_file", "full_offload", "before", "previous", "driver_ipsec_mode", "restart_required",
        "reset_required")


def read(root, sections=("ipsec_offload",), **options):
    """dpu_info's read of the DPU under ``root`` (the BlueField-3 Arm side's mst status)."""
    runner = FakeRunner({MST: (0, fixture_text("mst-status", "bf3-arm-mst-status-v"), "")})
    return dpu_info.DpuInfo(runner, sections, fs_root=str(root), **options).gather()


def run(capsys, module, args, check_mode=True):
    """``module``'s result for ``args`` (check mode: what it would do), as a task with --check --diff gets it."""
    args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------------------------------------ ipsec_offload
FILES = {
    "no": CONF,
    "yes": CONF.replace(NO, 'IPSEC_FULL_OFFLOAD="yes"'),
    "yes by hand, with a comment": CONF.replace(NO, "IPSEC_FULL_OFFLOAD=yes  # set by hand"),
    "exported YES": CONF.replace(NO, "export IPSEC_FULL_OFFLOAD=YES"),
    "yes, then no (the last wins)": 'IPSEC_FULL_OFFLOAD="yes"\nX="1"\nIPSEC_FULL_OFFLOAD="no"\n',
    "no assignment": 'ALLOW_SHARED_RQ="no"\n',
    "empty": "",
    "missing": None,
}
MODES = {"full": ("full", "full"), "none": ("none", "none"), "mixed": ("full", "none"), "no compat sysfs": ()}


@pytest.mark.parametrize("want", [True, False])
@pytest.mark.parametrize("modes", sorted(MODES))
@pytest.mark.parametrize("conf", sorted(FILES))
def test_the_ipsec_plan_from_the_read_is_the_module_check(capsys, tmp_path, conf, modes, want):
    tree(tmp_path, FILES[conf], MODES[modes])
    options = {"full_offload": want, "fs_root": str(tmp_path)}
    plan = ipsec_offload_plan(read(tmp_path), options)
    module = run(capsys, ipsec_offload, options)
    assert plan["answered"] is True and plan["why"] == "", plan
    in_state = not module["changed"] and module["restart_required"] == "none"
    assert plan["in_state"] is in_state
    assert {key: plan[key] for key in KEYS} == {key: module[key] for key in KEYS}
    assert plan["changes"] == (["mlnx-bf.conf"] if module["changed"] else []) + (
        ["driver restart"] if module["restart_required"] == "driver" else [])
    offload_on = conf in ("yes", "yes by hand, with a comment", "exported YES")
    assert in_state is (conf != "missing" and offload_on is want
                        and all(mode == ("full" if want else "none") for mode in MODES[modes]))


def test_the_ipsec_section_is_asked_for_by_name_and_reads_what_the_module_reads(tmp_path):
    tree(tmp_path, FILES["yes by hand, with a comment"], ("full", "none"))
    assert "ipsec_offload" not in dpu_info.DEFAULT_SECTIONS
    assert "ipsec_offload" not in read(tmp_path, sections=("rshim",))
    section = read(tmp_path)["ipsec_offload"]
    assert section == {"available": True, "root": str(tmp_path), "path": "/etc/mellanox/mlnx-bf.conf",
                       "exists": True, "value": "yes", "driver_ipsec_mode": {"p0": "full", "p1": "none"}}
    assert "ALLOW_SHARED_RQ" not in json.dumps(section), "the value only: the rest of the file stays on the node"


def test_where_the_module_fails_the_ipsec_plan_does_not_answer(capsys, tmp_path):
    (tmp_path / "etc/mellanox/mlnx-bf.conf").mkdir(parents=True)
    options = {"full_offload": True, "fs_root": str(tmp_path)}
    module = run(capsys, ipsec_offload, options)
    assert module["failed"] is True and "is a directory, not mlnx-bf.conf" in module["msg"]
    section = read(tmp_path)["ipsec_offload"]
    assert section["available"] is False and section["reason"] == module["msg"]
    plan = ipsec_offload_plan(read(tmp_path), options)
    assert plan["answered"] is False and plan["in_state"] is False and module["msg"] in plan["why"]

    relative = dict(options, path="mlnx-bf.conf")
    module = run(capsys, ipsec_offload, relative)
    plan = ipsec_offload_plan(read(tmp_path), relative)
    assert module["failed"] is True and plan["answered"] is False
    assert plan["why"] == "ipsec_offload refuses the options: " + module["msg"]
    plan = ipsec_offload_plan(read(tmp_path), {"fs_root": str(tmp_path)})
    assert plan["answered"] is False and "full_offload" in plan["why"]


def test_a_read_that_cannot_answer_says_why(tmp_path):
    tree(tmp_path, FILES["yes"], MODES["full"])
    options = {"full_offload": True, "fs_root": str(tmp_path)}
    good = read(tmp_path)
    assert ipsec_offload_plan(good, options)["in_state"] is True
    cases = [
        (good, dict(options, fs_root=str(tmp_path / "other")), "the read was made of /etc/mellanox/mlnx-bf.conf"),
        (good, dict(options, path="/etc/mellanox/other.conf"), "not /etc/mellanox/other.conf under"),
        (read(tmp_path, sections=("rshim",)), options, "the read has no ipsec_offload section"),
        ({}, options, "there is no read of the node from this run"),
    ]
    for the_read, the_options, words in cases:
        plan = ipsec_offload_plan(the_read, the_options)
        assert plan["answered"] is False and plan["in_state"] is False and words in plan["why"], plan
    assert ipsec_offload_plan(good, options, reset=True)["answered"] is False
    assert ipsec_offload_plan(good, options, changed_at=good["read_at"])["answered"] is False
    assert ipsec_offload_plan(good, options, changed_at=good["read_at"] - 1)["in_state"] is True


# ------------------------------------------------------------------------------------------------ lineinfile
CONF_PATH = "/etc/nftables.conf"
LINE = 'include "/etc/nftables.d/bluefleet-firewall.nft"'
NFT = "#!/usr/sbin/nft -f\nflush ruleset\n"
TEXTS = {
    "the line alone": LINE + "\n",
    "the line after others": NFT + LINE + "\n",
    "the line, then others": LINE + "\n" + NFT,
    "the line twice": LINE + "\n" + NFT + LINE + "\n",
    "the line twice, the first with CR LF": LINE + "\r\n" + LINE + "\n",
    "the line twice, the last with CR LF": LINE + "\n" + LINE + "\r\n",
    "the line with CR LF": LINE + "\r\n",
    "the line without a final newline": NFT + LINE,
    "the line with a trailing blank": LINE + " \n",
    "another include": 'include "/etc/nftables.d/other.nft"\n',
    "empty": "",
    "missing": None,
}
IN_STATE = {"the line alone", "the line after others", "the line, then others", "the line twice",
            "the line twice, the first with CR LF"}


def nftables_conf(root, text, mode=0o755):
    path = root / CONF_PATH.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is not None:
        path.write_text(text, newline="")
        path.chmod(mode)
    return path


def line_read(root, lines=(LINE,)):
    return read(root, sections=("files",), files_root=str(root), file_lines={CONF_PATH: list(lines)})


@pytest.mark.parametrize("mode", [0o755, 0o644])
@pytest.mark.parametrize("text", sorted(TEXTS))
def test_the_line_plan_from_the_read_is_lineinfile_check(capsys, tmp_path, text, mode):
    path = nftables_conf(tmp_path, TEXTS[text], mode)
    plan = lineinfile_plan(line_read(tmp_path), CONF_PATH, LINE, "0755", fs_root=str(tmp_path))
    module = run(capsys, lineinfile, {"path": str(path), "line": LINE, "create": True, "mode": "0755"})
    assert not module.get("failed"), module
    assert plan["answered"] is True and plan["why"] == "", plan
    assert plan["in_state"] is (not module["changed"])
    assert plan["in_state"] is (text in IN_STATE and mode == 0o755)
    assert plan["changes"] == ([] if plan["in_state"] else [CONF_PATH])


def test_lineinfile_really_leaves_a_file_in_state_alone(capsys, tmp_path):
    """The plan's "in state" is what lineinfile does, not only what it predicts: a real run changes nothing."""
    for text in sorted(IN_STATE):
        path = nftables_conf(tmp_path, TEXTS[text])
        assert lineinfile_plan(line_read(tmp_path), CONF_PATH, LINE, "0755", fs_root=str(tmp_path))["in_state"]
        result = run(capsys, lineinfile, {"path": str(path), "line": LINE, "create": True, "mode": "0755"},
                     check_mode=False)
        assert result["changed"] is False and path.read_bytes() == TEXTS[text].encode(), text


def test_a_link_or_a_directory_is_not_in_state(capsys, tmp_path):
    """A symbolic link is left to lineinfile (the plan says it differs); a directory makes lineinfile fail."""
    target = tmp_path / "etc/nftables.real"
    nftables_conf(tmp_path, None)
    target.write_text(LINE + "\n")
    target.chmod(0o755)
    (tmp_path / CONF_PATH.lstrip("/")).symlink_to(target)
    plan = lineinfile_plan(line_read(tmp_path), CONF_PATH, LINE, "0755", fs_root=str(tmp_path))
    assert plan["answered"] is True and plan["in_state"] is False
    (tmp_path / CONF_PATH.lstrip("/")).unlink()
    (tmp_path / CONF_PATH.lstrip("/")).mkdir()
    plan = lineinfile_plan(line_read(tmp_path), CONF_PATH, LINE, "0755", fs_root=str(tmp_path))
    module = run(capsys, lineinfile, {"path": str(tmp_path / CONF_PATH.lstrip("/")), "line": LINE, "create": True,
                                      "mode": "0755"})
    assert module["failed"] is True and plan["answered"] is True and plan["in_state"] is False


def test_the_files_read_says_which_lines_a_file_holds(tmp_path):
    nftables_conf(tmp_path, NFT + LINE + "\n")
    section = line_read(tmp_path, lines=(LINE, "flush ruleset", "#!/usr/sbin/nft")).get("files")
    state = section["paths"][CONF_PATH]
    assert state["file"] is True and state["mode"] == "0755"
    assert state["has_lines"] == [LINE, "flush ruleset"]
    nftables_conf(tmp_path, None)
    (tmp_path / CONF_PATH.lstrip("/")).unlink()
    state = line_read(tmp_path)["files"]["paths"][CONF_PATH]
    assert state == {"link": None, "file": False, "sha256": None, "mode": None, "has_lines": []}


def test_a_line_read_that_cannot_answer_says_why(tmp_path):
    nftables_conf(tmp_path, LINE + "\n")
    good = line_read(tmp_path)
    assert lineinfile_plan(good, CONF_PATH, LINE, "0755", fs_root=str(tmp_path))["in_state"] is True
    cases = [
        (good, CONF_PATH, LINE, {"fs_root": str(tmp_path / "other")}, "the files were read under"),
        (good, "/etc/other.conf", LINE, {"fs_root": str(tmp_path)}, "/etc/other.conf was not read"),
        (good, CONF_PATH, "include \"/x.nft\"", {"fs_root": str(tmp_path)}, None),
        (read(tmp_path, sections=("files",), files=[CONF_PATH], files_root=str(tmp_path)), CONF_PATH, LINE,
         {"fs_root": str(tmp_path)}, "was read without its lines"),
        (read(tmp_path), CONF_PATH, LINE, {"fs_root": str(tmp_path)}, "the read has no files section"),
        (good, CONF_PATH, LINE, {"fs_root": str(tmp_path), "reset": True}, "was reset in this run"),
        (good, CONF_PATH, LINE, {"fs_root": str(tmp_path), "changed_at": good["read_at"]}, "changed the node"),
    ]
    for the_read, path, line, kwargs, words in cases:
        plan = lineinfile_plan(the_read, path, line, "0755", **kwargs)
        if words is None:  # a line the read was not asked about: it does not say the file holds it
            assert plan["answered"] is True and plan["in_state"] is False
            continue
        assert plan["answered"] is False and plan["in_state"] is False and words in plan["why"], plan


def test_dpu_info_refuses_file_lines_that_are_not_lists_of_lines(run_module, tmp_path):
    runner = FakeRunner({MST: (0, fixture_text("mst-status", "bf3-arm-mst-status-v"), "")})
    failed, result = run_module(dpu_info, {"filter": ["files"], "file_lines": {CONF_PATH: LINE}}, runner)
    assert failed and "file_lines must map each file to a list of lines" in result["msg"]
    nftables_conf(tmp_path, LINE + "\n")
    failed, result = run_module(dpu_info, {"filter": ["files"], "files_root": str(tmp_path),
                                           "file_lines": {CONF_PATH: [LINE]}}, runner)
    assert not failed and result["files"]["paths"][CONF_PATH]["has_lines"] == [LINE]
