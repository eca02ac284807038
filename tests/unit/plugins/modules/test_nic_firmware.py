"""nic_firmware: exact ordered argv against recorded tool outputs; one burn, re-read, reset_required.

Tool outputs:
* card query ``flint -d DEV q``: tests/unit/fixtures/parsers/flint-query/bf3-mstflint-q-nic-config-operator-pr97
  (a real BlueField-3, FW 32.41.1000, PSID MT_0000000998);
* image query ``flint -i IMAGE q``, the successful burn and the query after it (``FW Version(Running)``):
  recorded from the device twin (layout of shared/corpus/flint/FORMAT-from-source.md), no capture of an
  image query is in the corpus;
* PSID mismatch and ``--allow_psid_change`` burns: flint-burn/cx4lx-mstflint-burn-psid-mismatch and
  cx4lx-mstflint-burn-allow-psid-change (a real ConnectX-4 Lx, Dell PSID DEL2420110034);
* mlxfwmanager update: mlxfwmanager-query/cx7-mlxup-update-2-devices (same print code as ``-u``).
"""

from __future__ import annotations

import hashlib
import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.bluefleet.dpu.plugins.module_utils.plumbing._runner import CommandResult
from ansible_collections.bluefleet.dpu.plugins.modules import nic_firmware
from fake_tools import fixture_text

DEV = "/dev/mst/mt41692_pciconf0"
BDF = "0000:e2:00.0"  # what mstflint takes (it refuses an mst device file)
CARD_Q = fixture_text("flint-query", "bf3-mstflint-q-nic-config-operator-pr97")
IMAGE_Q = """\
Image type:            FS4
FW Version:            32.43.1014
FW Release Date:       N/A
Product Version:       32.43.1014
Rom Info:              type=UEFI Virtio net version=21.4.13 cpu=AMD64,AARCH64
                       type=UEFI Virtio blk version=22.4.13 cpu=AMD64,AARCH64
                       type=UEFI version=14.34.12 cpu=AMD64,AARCH64
                       type=PXE version=3.7.400 cpu=AMD64
Image VSD:             N/A
PSID:                  MT_0000000998
Security Attributes:   N/A
"""
IMAGE_Q_OTHER_PSID = IMAGE_Q.replace("MT_0000000998", "MT_0000000999")
BURN_OK = """
    Current FW version on flash:  32.41.1000
    New FW version:               32.43.1014

 Do you want to continue ? (y/n) [n] : y

Burning FW image without signatures - OK
Restoring signature                     - OK
-I- To load new FW run mlxfwreset or reboot machine.
"""
CARD_PENDING = """\
Image type:            FS4
FW Version:            32.43.1014
FW Version(Running):   32.41.1000
FW Release Date:       N/A
Product Version:       32.43.1014
Description:           UID                GuidsNumber
Base GUID:             946dae03004f296a        38
Base MAC:              946dae4f296a            38
Image VSD:             N/A
Device VSD:            N/A
PSID:                  MT_0000000998
Security Attributes:   N/A
"""
CARD_NEW = CARD_PENDING.replace("FW Version(Running):   32.41.1000\n", "")
CARD_OTHER_PENDING = CARD_PENDING.replace("32.43.1014", "32.42.1000")
PSID_MISMATCH = fixture_text("flint-burn", "cx4lx-mstflint-burn-psid-mismatch")
PSID_CHANGE = fixture_text("flint-burn", "cx4lx-mstflint-burn-allow-psid-change")
MLXUP = fixture_text("mlxfwmanager-query", "cx7-mlxup-update-2-devices")

NOT_MODELLED = (1, "", "-E- Invalid command: --version\n")


class FakeRunner:
    """Answers a script of (argv, rc, stdout, stderr) in order; fails on any other command."""

    def __init__(self, steps, on_path=("flint", "mstflint", "mlxfwmanager")):
        self.steps = list(steps)
        self.cmd = []
        self.on_path = set(on_path)
        self.environ = {}

    def which(self, program):
        return "/usr/bin/" + program if program in self.on_path else None

    def run(self, argv, timeout=None):
        argv = list(argv)
        self.cmd.append(argv)
        assert self.steps, "unexpected command %r" % (argv,)
        want, rc, out, err = self.steps.pop(0)
        assert argv == want, "expected %r, ran %r" % (want, argv)
        return CommandResult(argv, rc, out, err, missing=rc == 127)


@pytest.fixture
def image(tmp_path):
    path = tmp_path / "fw-BlueField-3-rel-32_43_1014.bin"
    path.write_bytes(b"firmware image bytes")
    return str(path)


def run(monkeypatch, capsys, args, steps, check_mode=False, on_path=("flint", "mstflint", "mlxfwmanager")):
    runner = FakeRunner(steps, on_path)
    monkeypatch.setattr(nic_firmware, "ToolRunner", lambda timeout, environ=None: runner)
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    args = dict(args, _ansible_diff=True)  # the tests read the diff, as --diff shows it
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            nic_firmware.main()
    result = json.loads(capsys.readouterr().out)
    assert not runner.steps, "commands not run: %r" % (runner.steps,)
    return result


def img_q(path, out=IMAGE_Q):
    return (["flint", "-i", path, "q"], 0, out, "")


def card_q(out=CARD_Q):
    return (["flint", "-d", DEV, "q"], 0, out, "")


def burn_argv(path, *extra):
    return ["flint", "-d", DEV, "-i", path, "-y", *extra, "burn"]


VERSION = (["flint", "--version"], *NOT_MODELLED)


def test_burns_once_rereads_and_needs_a_firmware_reset(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [
        img_q(image), card_q(), (burn_argv(image), 0, BURN_OK, ""), card_q(CARD_PENDING), VERSION])
    assert result["changed"] is True
    assert result["cmd"] == [["flint", "-i", image, "q"], ["flint", "-d", DEV, "q"], burn_argv(image),
                             ["flint", "-d", DEV, "q"], ["flint", "--version"]]
    assert result["firmware"] == {"flashed": "32.43.1014", "running": "32.41.1000", "psid": "MT_0000000998",
                                  "pending": True}
    assert result["reset_required"] == "firmware_reset"
    assert "mlxfwreset" in result["reset_reason"]
    assert result["image"] == {"path": image, "version": "32.43.1014", "psid": "MT_0000000998", "sha256": None}
    assert result["tool"] == "flint"
    assert result["tool_version"] is None


def test_flashed_and_running_is_no_change_and_no_reset(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image},
                 [img_q(image), card_q(CARD_NEW), VERSION])
    assert result["changed"] is False
    assert result["reset_required"] == "none"
    assert result["reset_reason"] == ""
    assert not any("burn" in argv for argv in result["cmd"])


def test_flashed_but_not_running_is_no_change_that_still_needs_its_reset(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image},
                 [img_q(image), card_q(CARD_PENDING), VERSION])
    assert result["changed"] is False
    assert result["firmware"]["pending"] is True
    assert result["reset_required"] == "firmware_reset"


def test_check_mode_burns_nothing_and_predicts_the_flash(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [img_q(image), card_q(), VERSION],
                 check_mode=True)
    assert result["changed"] is True
    assert [argv[-1] for argv in result["cmd"]] == ["q", "q", "--version"]
    assert result["firmware"] == {"flashed": "32.43.1014", "running": "32.41.1000", "psid": "MT_0000000998",
                                  "pending": True}
    assert result["reset_required"] == "firmware_reset"


def test_diff_names_flashed_running_and_psid(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [
        img_q(image), card_q(), (burn_argv(image), 0, BURN_OK, ""), card_q(CARD_PENDING), VERSION])
    assert result["diff"]["before"] == {"flashed": "32.41.1000", "running": "32.41.1000", "psid": "MT_0000000998"}
    assert result["diff"]["after"] == {"flashed": "32.43.1014", "running": "32.41.1000", "psid": "MT_0000000998"}
    assert result["diff"]["before_header"] == "%s firmware before" % DEV


def test_psid_mismatch_is_refused_before_burning_with_both_psids(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image},
                 [img_q(image, IMAGE_Q_OTHER_PSID), card_q()])
    assert result["failed"] is True
    assert result["msg"] == (
        "burn firmware to %s failed: PSID mismatch: the card has PSID MT_0000000998, the image %s is for PSID "
        "MT_0000000999; use the image made for MT_0000000998, or set allow_psid_change to cross-flash (it changes "
        "the card's identity)" % (DEV, image))
    assert result["firmware"]["flashed"] == "32.41.1000"
    assert len(result["cmd"]) == 2


def test_tool_psid_refusal_is_reported_with_its_text(monkeypatch, capsys, image):
    """If the card's PSID changed between query and burn, flint's own refusal (a real capture) is the error."""
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [
        img_q(image), card_q(), (burn_argv(image), 1, PSID_MISMATCH, ""), card_q()])
    assert result["failed"] is True
    assert result["msg"].startswith(
        "burn %s to %s with flint failed: -E- PSID mismatch. The PSID on flash (DEL2420110034) differs from the "
        "PSID in the given image (MT_2420110034)." % (image, DEV))
    assert result["msg"].endswith("; the card still runs 32.41.1000 and its flash holds 32.41.1000")
    assert result["rc"] == 1
    assert result["stdout"] == PSID_MISMATCH


def test_allow_psid_change_passes_the_flag(monkeypatch, capsys, image):
    after = CARD_NEW.replace("MT_0000000998", "MT_0000000999")
    result = run(monkeypatch, capsys, {"device": BDF, "image": image, "allow_psid_change": True, "tool": "mstflint"}, [
        (["mstflint", "-i", image, "q"], 0, IMAGE_Q_OTHER_PSID, ""), (["mstflint", "-d", BDF, "q"], 0, CARD_Q, ""),
        (["mstflint", "-d", BDF, "-i", image, "-y", "--allow_psid_change", "burn"], 0, PSID_CHANGE, ""),
        (["mstflint", "-d", BDF, "q"], 0, after, ""), (["mstflint", "--version"], *NOT_MODELLED)])
    assert result["changed"] is True
    assert result["firmware"]["psid"] == "MT_0000000999"
    assert result["diff"]["before"]["psid"] == "MT_0000000998"


def test_mlxfwmanager_cannot_cross_flash(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image, "allow_psid_change": True,
                                       "tool": "mlxfwmanager"}, [img_q(image, IMAGE_Q_OTHER_PSID), card_q()])
    assert result["failed"] is True
    assert "mlxfwmanager only offers images of the card's PSID" in result["msg"]


def test_mlxfwmanager_burn_argv(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image, "tool": "mlxfwmanager"}, [
        img_q(image), card_q(), (["mlxfwmanager", "-d", DEV, "-i", image, "-u", "-y"], 0, MLXUP, ""),
        card_q(CARD_PENDING), (["mlxfwmanager", "--version"], *NOT_MODELLED)])
    assert result["changed"] is True
    assert result["tool"] == "mlxfwmanager"


def test_tool_auto_falls_back_to_mstflint(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": BDF, "image": image}, [
        (["mstflint", "-i", image, "q"], 0, IMAGE_Q, ""), (["mstflint", "-d", BDF, "q"], 0, CARD_NEW, ""),
        (["mstflint", "--version"], 0, "mstflint, mstflint 4.26.0-1, Git SHA Hash: N/A\n", "")],
        on_path=("mstflint",))
    assert result["tool"] == "mstflint"
    assert result["tool_version"] == "mstflint, mstflint 4.26.0-1, Git SHA Hash: N/A"


def test_corrupt_image_burn_failure_names_the_tool_error_and_the_unchanged_card(monkeypatch, capsys, image):
    err = "-E- Burning FS4 image failed: Bad CRC.\n"
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [
        img_q(image), card_q(), (burn_argv(image), 1, err, ""), card_q()])
    assert result["failed"] is True
    assert result["msg"] == ("burn %s to %s with flint failed: -E- Burning FS4 image failed: Bad CRC.; the card "
                             "still runs 32.41.1000 and its flash holds 32.41.1000" % (image, DEV))
    assert result["firmware"]["pending"] is False


def test_error_printed_with_status_0_is_a_failure(monkeypatch, capsys, image):
    err = ("-E- Burning FS4 image failed: FW image file cannot be programmed to device BlueField3, it is intended "
           "for: BlueField2 only\n")
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [
        img_q(image), card_q(), (burn_argv(image), 0, err, ""), card_q()])
    assert result["failed"] is True
    assert "it is intended for: BlueField2 only" in result["msg"]


def test_sha256_mismatch_is_refused_before_any_tool_runs(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image, "sha256": "0" * 64}, [])
    assert result["failed"] is True
    digest = hashlib.sha256(b"firmware image bytes").hexdigest()
    assert result["msg"] == ("burn firmware to %s failed: the image %s has sha256 %s, expected %s; the file is "
                             "damaged or not the one meant, download it again" % (DEV, image, digest, "0" * 64))
    assert result["cmd"] == []


def test_sha256_match_is_returned(monkeypatch, capsys, image):
    digest = hashlib.sha256(b"firmware image bytes").hexdigest()
    result = run(monkeypatch, capsys, {"device": DEV, "image": image, "sha256": digest.upper()},
                 [img_q(image), card_q(CARD_NEW), VERSION])
    assert result["image"]["sha256"] == digest


def test_interrupted_burn_says_the_old_firmware_runs_and_to_run_again(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [
        img_q(image), card_q(), (burn_argv(image), 130, "\n    Current FW version on flash:  32.41.1000\n", ""),
        card_q()])
    assert result["failed"] is True
    assert result["msg"] == ("burn %s to %s with flint failed: the burn was interrupted (exit status 130); the card "
                             "still runs 32.41.1000 and its flash holds 32.41.1000: run the task again to complete "
                             "the burn" % (image, DEV))
    assert result["interrupted"] is True


def test_another_firmware_waiting_for_its_reset_is_refused(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [img_q(image), card_q(CARD_OTHER_PENDING)])
    assert result["failed"] is True
    assert result["msg"] == ("burn firmware to %s failed: firmware 32.42.1000 is already flashed and waits for a "
                             "reset (running 32.41.1000); the card refuses another burn until then: activate it "
                             "(bluefleet.dpu.fw_reset) and run again" % DEV)


def test_version_the_image_does_not_carry_is_refused(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image, "version": "32.44.1000"}, [img_q(image)])
    assert result["failed"] is True
    assert result["msg"] == ("burn firmware to %s failed: the image %s carries firmware 32.43.1014, not 32.44.1000; "
                             "use the image of 32.44.1000" % (DEV, image))


def test_missing_image_file_is_refused(monkeypatch, capsys, tmp_path):
    path = str(tmp_path / "nope.bin")
    result = run(monkeypatch, capsys, {"device": DEV, "image": path}, [])
    assert result["failed"] is True
    assert result["msg"] == ("burn firmware to %s failed: the image %s is not a readable file; copy it to this node "
                             "first" % (DEV, path))


def test_burn_that_leaves_the_old_version_fails(monkeypatch, capsys, image):
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [
        img_q(image), card_q(), (burn_argv(image), 0, BURN_OK, ""), card_q()])
    assert result["failed"] is True
    assert result["msg"] == ("burn firmware to %s failed: flint reported success but the flash holds 32.41.1000, "
                             "not 32.43.1014" % DEV)


def test_unreadable_card_query_fails_with_the_tool_text(monkeypatch, capsys, image):
    err = "-E- Cannot open Device: %s. No such file or directory\n" % DEV
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [img_q(image), (["flint", "-d", DEV, "q"], 1,
                                                                                       err, "")])
    assert result["failed"] is True
    assert result["msg"] == ("query firmware of %s with flint failed: -E- Cannot open Device: %s. No such file or "
                             "directory" % (DEV, DEV))


def test_image_of_another_generation_is_refused_without_psid_advice(monkeypatch, capsys, image):
    """A BlueField-2 image (24.x, PSID MT_0000000539 of the bluefield2 profile) on a BlueField-3 (32.x)."""
    bf2 = IMAGE_Q.replace("32.43.1014", "24.42.1000").replace("MT_0000000998", "MT_0000000539")
    result = run(monkeypatch, capsys, {"device": DEV, "image": image, "allow_psid_change": True},
                 [img_q(image, bf2), card_q()])
    assert result["failed"] is True
    assert "made for another device generation (firmware 24.x)" in result["msg"]
    assert "use the image made for this card (32.x)" in result["msg"]
    assert "set allow_psid_change" not in result["msg"]
    assert len(result["cmd"]) == 2  # refused before any burn


# --- issue 18 (2): mstflint refuses an mst device file; issue 17: another PSID at the same version ----------------

def test_mstflint_refuses_an_mst_device_file_before_running_anything(monkeypatch, capsys, image):
    """Before the fix DEV went to mstflint, which answers 'Unable to parse device name'."""
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [], on_path=("mstflint",))
    assert result["failed"] is True
    assert result["cmd"] == []
    assert result["msg"].startswith("mstflint cannot open the MST device file %s" % DEV)


def test_same_version_for_another_psid_is_refused_without_allow_psid_change(monkeypatch, capsys, image):
    """Before the fix the same version was 'no change' whatever the image's PSID."""
    image_q = IMAGE_Q_OTHER_PSID.replace("32.43.1014", "32.41.1000")
    result = run(monkeypatch, capsys, {"device": DEV, "image": image}, [img_q(image, image_q), card_q()])
    assert result["failed"] is True
    assert "PSID mismatch: the card has PSID MT_0000000998" in result["msg"]


def test_same_version_for_another_psid_is_a_change_with_allow_psid_change(monkeypatch, capsys, image):
    image_q = IMAGE_Q_OTHER_PSID.replace("32.43.1014", "32.41.1000")
    after = CARD_Q.replace("MT_0000000998", "MT_0000000999")
    result = run(monkeypatch, capsys, {"device": BDF, "image": image, "allow_psid_change": True, "tool": "mstflint"}, [
        (["mstflint", "-i", image, "q"], 0, image_q, ""), (["mstflint", "-d", BDF, "q"], 0, CARD_Q, ""),
        (["mstflint", "-d", BDF, "-i", image, "-y", "--allow_psid_change", "burn"], 0, PSID_CHANGE, ""),
        (["mstflint", "-d", BDF, "q"], 0, after, ""), (["mstflint", "--version"], *NOT_MODELLED)])
    assert result["changed"] is True
    assert result["firmware"]["psid"] == "MT_0000000999"
    assert result["reset_required"] == "firmware_reset"
