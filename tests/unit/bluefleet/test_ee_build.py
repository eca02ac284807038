"""bluefleet ee build without Docker: the collection's cache key and ee-apt, the package manager command
ansible-builder calls in the Debian base (the image build itself: tests/integration/test_ee_runner.py)."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

from bluefleet import ee

ROOT = Path(__file__).resolve().parents[3]
EE_APT = ROOT / "ee" / "base" / "ee-apt"


def tarball(path: Path, files: dict[str, bytes], mtime: int) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


def test_collection_digest_ignores_build_times_not_content(tmp_path):
    files = {"bluefleet/dpu/plugins/modules/a.py": b"print(1)\n", "bluefleet/dpu/MANIFEST.json": b"{}"}
    first = ee.collection_digest(tarball(tmp_path / "a.tar.gz", files, mtime=1))
    rebuilt = ee.collection_digest(tarball(tmp_path / "b.tar.gz", dict(reversed(files.items())), mtime=99))
    assert first == rebuilt
    edited = dict(files, **{"bluefleet/dpu/plugins/modules/a.py": b"print(2)\n"})
    assert ee.collection_digest(tarball(tmp_path / "c.tar.gz", edited, mtime=1)) != first


def fake_apt(tmp_path: Path) -> dict[str, str]:
    """PATH with an apt-get that only logs its arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "apt.log"
    script = bindir / "apt-get"
    script.write_text('#!/bin/sh\necho "$*" >> %s\n' % log)
    script.chmod(0o755)
    return dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]))


def test_ee_apt_maps_dnf_install_onto_apt_get(tmp_path):
    env = fake_apt(tmp_path)
    # what ansible-builder's assemble / install-from-bindep run: dnf options, then the package names
    proc = subprocess.run([str(EE_APT), "install", "-y", "--nodocs", "--setopt", "install_weak_deps=0",
                           "openssh-client", "iproute2"], env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "apt.log").read_text().splitlines()
    assert lines == ["update -q", "install -y -q --no-install-recommends openssh-client iproute2"]


def test_ee_apt_installs_nothing_for_no_package(tmp_path):
    env = fake_apt(tmp_path)
    proc = subprocess.run([str(EE_APT), "install", "-y"], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and not (tmp_path / "apt.log").exists()


def test_ee_apt_refuses_what_it_does_not_map(tmp_path):
    env = fake_apt(tmp_path)
    proc = subprocess.run([str(EE_APT), "upgrade", "-y"], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "'upgrade' is not supported" in proc.stderr
    assert not (tmp_path / "apt.log").exists()
