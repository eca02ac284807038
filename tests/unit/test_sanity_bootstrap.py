"""scripts/sanity-bootstrap.sh: what scripts/sanity.sh decides before ansible-test runs (issue 14).

Run with and without the offline stand-in for ansible-test's pip bootstrap, and with and without the CA
bundle for PIP_CERT; the paths come from the script's env overrides, so nothing here needs ../shared.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "sanity-bootstrap.sh"


def bootstrap(tmp_path: Path, standin: Path, cert: Path, pip_cert: str | None = None) -> tuple[Path, str, str]:
    """Source the script, call sanity_bootstrap, print PIP_CERT as it is afterwards."""
    env = {k: v for k, v in os.environ.items() if k != "PIP_CERT"}
    env.update(BLUEFLEET_GETPIP_STANDIN=str(standin), BLUEFLEET_PIP_CERT=str(cert))
    if pip_cert is not None:
        env["PIP_CERT"] = pip_cert
    cache = tmp_path / "cache"
    proc = subprocess.run(
        ["bash", "-c", 'set -euo pipefail; . "$0"; sanity_bootstrap "$1" 24_2; echo "PIP_CERT=${PIP_CERT-<unset>}"',
         str(SCRIPT), str(cache)],
        env=env, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    return cache, proc.stdout.strip(), proc.stderr


def test_the_standin_is_used_where_present(tmp_path):
    standin = tmp_path / "tools" / "ansible-test-get-pip.py"
    standin.parent.mkdir()
    standin.write_text("# offline stand-in\nprint('pip')\n")
    cache, _out, err = bootstrap(tmp_path, standin, tmp_path / "no-cert.crt")
    assert (cache / "get_pip_24_2.py").read_text() == standin.read_text()
    assert "offline stand-in %s" % standin in err


def test_without_the_standin_ansible_test_downloads_its_own(tmp_path):
    standin = tmp_path / "tools" / "ansible-test-get-pip.py"  # not created: a clone with no ../shared
    cache, _out, err = bootstrap(tmp_path, standin, tmp_path / "no-cert.crt")
    assert cache.is_dir() and not list(cache.iterdir()), "nothing may be put where ansible-test looks for get-pip"
    assert "ansible-test downloads its own" in err


def test_pip_cert_only_when_the_bundle_exists(tmp_path):
    cert = tmp_path / "ca.crt"
    _cache, out, err = bootstrap(tmp_path, tmp_path / "none.py", cert)
    assert out == "PIP_CERT=<unset>" and "not set" in err
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    _cache, out, _err = bootstrap(tmp_path, tmp_path / "none.py", cert)
    assert out == "PIP_CERT=%s" % cert


@pytest.mark.parametrize("bundle_exists", [True, False])
def test_a_pip_cert_the_user_set_is_kept(tmp_path, bundle_exists):
    cert = tmp_path / "ca.crt"
    if bundle_exists:
        cert.write_text("x")
    _cache, out, _err = bootstrap(tmp_path, tmp_path / "none.py", cert, pip_cert="/opt/corp/ca.pem")
    assert out == "PIP_CERT=/opt/corp/ca.pem"


def test_sanity_sh_has_no_fixed_path_of_its_own():
    """The only place that names the stand-in is the bootstrap script's overridable default."""
    text = (ROOT / "scripts" / "sanity.sh").read_text()
    assert "../shared" not in text and "ca-certificates.crt" not in text
    assert "sanity_bootstrap" in text
