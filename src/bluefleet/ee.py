"""``bluefleet ee build``: the execution environment image AWX / Automation Platform run the playbooks in.

Three images, each tagged by a hash of its inputs and built only when no image carries that tag (the lab's
rule, ``lab_images``), so a second run builds nothing and a change rebuilds only what depends on it:

``bluefleet/ee-base:<hash>``
    the lab's Debian base (debootstrap, no registry) plus ``ee/base`` (pip, venv, ``ee-apt``: the package
    manager command ansible-builder calls); inputs: ``ee/base`` and the base tag.
``bluefleet/ee:<hash>``
    ``ansible-builder build`` of ``execution-environment.yml`` on that base: ansible-core, ansible-runner and
    ``ee/requirements.txt`` from PyPI, ``ee/bindep.txt`` with apt, and this collection from the tarball
    ``ansible-galaxy collection build`` writes (no Galaxy server). Inputs: the EE file, ``ee/``, the
    collection's files (the tarball's members, not its timestamps) and the ee-base tag.
``bluefleet/ee-sim:<hash>`` (``--sim``)
    the EE plus the device twin (``dpusim``), for running a sim fleet inside the EE: on a sim fleet the
    controller is also every node, so the twin's tools must be where the modules run. Never for real fleets.

    bluefleet ee build [--sim] [--force] [--print-tag]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bluefleet import lab_images
from bluefleet.lab_images import HASH_LEN, REPO, LabError

EE_FILE = "execution-environment.yml"
BUILDER_TIMEOUT = 1800


def _log(msg: str) -> None:
    print(f"bluefleet ee: {msg}", file=sys.stderr, flush=True)


def _bin(name: str) -> str:
    """A command of this Python's environment (the venv's ansible-builder), else PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if not found:
        raise LabError(f"{name} is not installed: run `make venv` (the dev extra of pyproject.toml pins it)")
    return found


def _utf8_env() -> dict[str, str]:
    return dict(os.environ, LC_ALL="C.UTF-8")


@dataclass(frozen=True)
class EeImages:
    base: str
    ee_base: str
    ee: str
    sim: str | None


def extra_ca() -> bytes:
    """Certificates pip in the build must trust besides Debian's (a TLS-inspecting proxy's CA):
    the file ``BLUEFLEET_EE_CA_BUNDLE`` names, else ``PIP_CERT``'s; empty when neither is set."""
    for var in ("BLUEFLEET_EE_CA_BUNDLE", "PIP_CERT"):
        name = os.environ.get(var)
        if not name:
            continue
        try:
            return Path(name).read_bytes()
        except OSError as exc:
            raise LabError(f"{var}={name} cannot be read ({exc}): point it at a PEM bundle or unset it") from exc
    return b""


def ee_base_tag(base: str) -> str:
    root = lab_images.repo_root()
    ca = hashlib.sha256(extra_ca()).hexdigest()
    return "{}/ee-base:{}".format(REPO, lab_images.tree_hash(("ee-base", root / "ee" / "base"), "base=" + base,
                                                             "extra-ca=" + ca))


def collection_digest(tarball: Path) -> str:
    """Hash of the collection tarball's members (name, mode, content): equal for equal sources, whatever
    the build's timestamps."""
    members = []
    with tarfile.open(tarball, "r|gz") as tar:  # one pass in stream order (random access re-inflates the file)
        for member in tar:
            data = tar.extractfile(member) if member.isfile() else None
            content = hashlib.sha256(data.read() if data else b"").hexdigest()
            members.append(f"{member.name}\0{member.mode & 0o111:o}\0{member.type!r}\0{content}\0")
    h = hashlib.sha256()
    for line in sorted(members):
        h.update(line.encode())
    return h.hexdigest()


def ee_tag(ee_base: str, collection: str) -> str:
    root = lab_images.repo_root()
    ee_dir = root / "ee"
    h = hashlib.sha256()
    h.update((root / EE_FILE).read_bytes())
    h.update(lab_images.tree_hash(("ee", ee_dir)).encode())
    h.update(("collection=%s ee-base=%s" % (collection, ee_base)).encode())
    return f"{REPO}/ee:{h.hexdigest()[:HASH_LEN]}"


SIM_DOCKERFILE = """\
# bluefleet/ee-sim: the execution environment plus the device twin (sim fleets only)
ARG EE
FROM ${EE}
USER root
COPY twin/ /opt/bluefleet/twin/
COPY dpusim /usr/local/bin/dpusim
# compiled once here: every run's container starts from the image, and the twin's tools run often
RUN chmod 0755 /usr/local/bin/dpusim && /usr/bin/python3 -m compileall -q /opt/bluefleet/twin \\
    && dpusim tools >/dev/null
USER 1000
"""


def sim_tag(ee: str) -> str:
    return "{}/ee-sim:{}".format(REPO, lab_images.tree_hash(
        ("twin", lab_images.twin_dir()), ("launcher", lab_images.images_dir() / "twin"), "ee=" + ee,
        "dockerfile=" + SIM_DOCKERFILE))


def build_collection(out: Path) -> Path:
    """``ansible-galaxy collection build`` of this checkout into ``out``; the tarball's path."""
    out.mkdir(parents=True, exist_ok=True)
    argv = [_bin("ansible-galaxy"), "collection", "build", "--force", "--output-path", str(out),
            str(lab_images.repo_root())]
    # not lab_images.run: Ansible refuses LC_ALL=C (it needs a UTF-8 locale)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False,
                          env=_utf8_env())
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()[-2000:]
        raise LabError(f"ansible-galaxy collection build failed (rc={proc.returncode}): {detail}")
    tarballs = sorted(out.glob("bluefleet-dpu-*.tar.gz"))
    if len(tarballs) != 1:
        raise LabError(f"ansible-galaxy collection build left {len(tarballs)} tarballs in {out}, expected one")
    return tarballs[0]


def build_ee_base(tag: str, base: str) -> float:
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bluefleet-ee-base-") as tmp:
        ctx = Path(tmp) / "ctx"
        shutil.copytree(lab_images.repo_root() / "ee" / "base", ctx)
        (ctx / "extra-ca.crt").write_bytes(extra_ca())
        _log(f"docker build --network host -t {tag} (FROM {base}) ...")
        lab_images.run(["docker", "build", "--network", "host", "--build-arg", f"BASE={base}", "-t", tag, str(ctx)],
                       timeout=BUILDER_TIMEOUT, what=f"docker build of {tag}")
    return time.monotonic() - t0


def build_ee(tag: str, ee_base: str, tarball: Path) -> float:
    """``ansible-builder build`` in a scratch folder holding the EE file, ``ee/`` and the tarball."""
    t0 = time.monotonic()
    root = lab_images.repo_root()
    with tempfile.TemporaryDirectory(prefix="bluefleet-ee-") as tmp:
        work = Path(tmp)
        shutil.copy2(root / EE_FILE, work / EE_FILE)
        shutil.copytree(root / "ee", work / "ee")
        (work / "build" / "ee").mkdir(parents=True)
        shutil.copy2(tarball, work / "build" / "ee" / tarball.name)
        argv = [_bin("ansible-builder"), "build", "-f", EE_FILE, "-t", tag, "--context", str(work / "context"),
                "--container-runtime", "docker", "--build-arg", f"EE_BASE_IMAGE={ee_base}",
                "--extra-build-cli-args=--network host", "-v", "2"]
        _log(f"ansible-builder build -t {tag} (EE_BASE_IMAGE={ee_base}) ...")
        proc = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=BUILDER_TIMEOUT, check=False,
                              env=_utf8_env())
        if proc.returncode != 0:
            detail = (proc.stdout + proc.stderr).strip()[-3000:]
            raise LabError(f"ansible-builder build of {tag} failed (rc={proc.returncode}): {detail}")
    return time.monotonic() - t0


def build_sim(tag: str, ee: str) -> float:
    """The EE plus the twin at /opt/bluefleet/twin and its launcher as /usr/local/bin/dpusim."""
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bluefleet-ee-sim-") as tmp:
        ctx = Path(tmp)
        shutil.copytree(lab_images.twin_dir(), ctx / "twin" / "dpusim",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"))
        shutil.copy2(lab_images.images_dir() / "twin" / "dpusim", ctx / "dpusim")
        (ctx / "Dockerfile").write_text(SIM_DOCKERFILE)
        _log(f"docker build -t {tag} (FROM {ee}) ...")
        lab_images.run(["docker", "build", "--build-arg", f"EE={ee}", "-t", tag, str(ctx)], timeout=600,
                       what=f"docker build of {tag}")
    return time.monotonic() - t0


def ensure_ee(sim: bool = False, force: bool = False) -> tuple[EeImages, dict[str, float]]:
    """Build what is missing; the tags and the seconds each build took (empty when all were there)."""
    lab_images.require_docker()
    timings: dict[str, float] = {}
    base = lab_images.base_tag()
    if force or not lab_images.image_exists(base):
        timings["base"] = lab_images.build_base(base)
    ee_base = ee_base_tag(base)
    if force or not lab_images.image_exists(ee_base):
        timings["ee-base"] = build_ee_base(ee_base, base)
    with tempfile.TemporaryDirectory(prefix="bluefleet-collection-") as tmp:
        tarball = build_collection(Path(tmp))
        ee = ee_tag(ee_base, collection_digest(tarball))
        if force or not lab_images.image_exists(ee):
            timings["ee"] = build_ee(ee, ee_base, tarball)
    sim_image = None
    if sim:
        sim_image = sim_tag(ee)
        if force or not lab_images.image_exists(sim_image):
            timings["ee-sim"] = build_sim(sim_image, ee)
    images = EeImages(base=base, ee_base=ee_base, ee=ee, sim=sim_image)
    if timings:
        prune_stale(images)
    return images, timings


def prune_stale(images: EeImages) -> list[str]:
    """Untag older ``bluefleet/{ee-base,ee,ee-sim}`` images (their inputs changed); one a container uses is kept
    (``docker rmi`` without force refuses it), and the layers a new build shares stay cached."""
    current = {images.ee_base, images.ee, images.sim}
    repos = {f"{REPO}/ee-base", f"{REPO}/ee"} | ({f"{REPO}/ee-sim"} if images.sim else set())
    out = lab_images.docker("images", "--format", "{{.Repository}}:{{.Tag}}", timeout=60).stdout.split()
    removed = []
    for tag in out:
        if tag.split(":")[0] in repos and tag not in current:
            if lab_images.docker("rmi", tag, check=False, timeout=120).returncode == 0:
                removed.append(tag)
    return removed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bluefleet ee", description="the execution environment image (AWX)")
    sub = p.add_subparsers(dest="action", required=True)
    b = sub.add_parser("build", help="build the EE images that are missing (tags = hash of their inputs)")
    b.add_argument("--sim", action="store_true", help="also the EE plus the device twin (bluefleet/ee-sim)")
    b.add_argument("--force", action="store_true", help="rebuild even when the tags exist")
    b.add_argument("--print-tag", action="store_true", help="print only the tag (ee-sim's with --sim)")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    try:
        images, timings = ensure_ee(sim=args.sim, force=args.force)
    except LabError as exc:
        print(f"bluefleet ee: {exc}", file=sys.stderr)
        return 1
    if args.print_tag:
        print(images.sim if args.sim else images.ee)
        return 0
    for name, tag in (("base", images.base), ("ee-base", images.ee_base), ("ee", images.ee), ("ee-sim", images.sim)):
        if tag:
            took = "built in %.1f s" % timings[name] if name in timings else "reused"
            print(f"{name:8} {tag}  {took}")
    print("ee ready in %.1f s" % (time.monotonic() - t0))
    return 0
