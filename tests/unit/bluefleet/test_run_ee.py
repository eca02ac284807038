"""execution-environment.yml: `ansible-builder create` makes a build context with the pinned versions and this
collection (the image itself is built by `bluefleet ee build` and used in tests/integration/test_ee_runner.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out = {}
    for spec in project["dependencies"] + project["optional-dependencies"]["dev"]:
        name, version = (spec.split("==", 1) + [""])[:2]
        out[name.split("[")[0].lower()] = version
    return out


def test_ee_pins_match_pyproject():
    ee = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    deps = ee["dependencies"]
    project = pins()
    assert deps["ansible_core"]["package_pip"] == "ansible-core==%s" % project["ansible-core"]
    assert deps["ansible_runner"]["package_pip"] == "ansible-runner==%s" % project["ansible-runner"]
    for line in (ROOT / deps["python"]).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = (line.split("==", 1) + [""])[:2]
            assert project.get(name.lower()) == version, "%s: pin %s, pyproject.toml has %s" % (
                line, version, project.get(name.lower()))


def test_ansible_builder_create_makes_the_context(tmp_path):
    builder = BIN / "ansible-builder"
    assert builder.exists(), "ansible-builder is missing from %s: run `make venv` (pyproject dev extra)" % BIN
    work = tmp_path / "ee"
    work.mkdir()
    shutil.copy(ROOT / "execution-environment.yml", work)
    shutil.copytree(ROOT / "ee", work / "ee")
    build = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path",
                            str(work / "build" / "ee"), str(ROOT)], capture_output=True, text=True, timeout=300,
                           check=False)
    assert build.returncode == 0, build.stderr
    proc = subprocess.run([str(builder), "create", "-f", "execution-environment.yml", "--context", "context",
                           "--output-filename", "Containerfile"], cwd=work, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    context = work / "context"
    containerfile = (context / "Containerfile").read_text()
    assert re.search(r'^ARG EE_BASE_IMAGE="[^"]+"$', containerfile, re.M)  # overridable with --build-arg
    assert "ansible-core==%s" % pins()["ansible-core"] in containerfile
    assert "ansible-runner==%s" % pins()["ansible-runner"] in containerfile
    assert "ansible-galaxy collection install --offline" in containerfile
    built = context / "_build"
    assert (built / "requirements.txt").read_text() == (ROOT / "ee" / "requirements.txt").read_text()
    assert (built / "bindep.txt").is_file()
    assert "requirements.yml" not in containerfile  # no Galaxy server: the collection needs no other collection
    assert "PKGMGR=\"/usr/local/bin/ee-apt\"" in containerfile  # Debian base: apt-get behind ee/base/ee-apt
    tarballs = list((built / "bluefleet").glob("bluefleet-dpu-*.tar.gz"))
    assert len(tarballs) == 1, "the collection tarball is not in the build context"
    listing = subprocess.run(["tar", "tzf", str(tarballs[0])], capture_output=True, text=True, check=True).stdout
    assert "plugins/modules/dpu_info.py" in listing and "playbooks/validate.yml" in listing
    assert "tests/validation/conftest.py" in listing  # playbooks/validate.yml runs the suite from the collection
