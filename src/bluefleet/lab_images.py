"""Lab images without a registry: a Debian base from debootstrap + ``docker import``, then the
``gpu-host`` and ``dpu`` images from it with ``docker build --network host``.

Every image is tagged by a hash of its inputs (``bluefleet/<name>:<hash>``) and built only when
no image carries that tag. The base tag covers the suite, variant and package list (the mirror
is not an input: the same packages come from any mirror); the other tags cover their build
context (Dockerfile, package list, config files, the twin's sources) and the base tag, so a
base change rebuilds everything and a twin change rebuilds only the twin layers (the Dockerfiles
copy the twin last, and Docker's layer cache keeps the rest).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bluefleet import _collection

SUITE = "trixie"
VARIANT = "minbase"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
REPO = "bluefleet"
HASH_LEN = 12
# apt-get waits for another apt (make test builds images beside the sanity phase, which may install shellcheck)
APT_GET = ("apt-get", "-o", "DPkg::Lock::Timeout=300")


class LabError(Exception):
    """A lab step failed; the message names what is missing and what to do."""


def repo_root() -> Path:
    return _collection.collection_root()


def images_dir() -> Path:
    return repo_root() / "lab" / "images"


def twin_dir() -> Path:
    """The twin's sources copied into the images: ``src/dpusim``, or ``BLUEFLEET_TWIN_SRC`` (a snapshot;
    the lab tests pin one so edits to the tree during a run do not move the image tags)."""
    override = os.environ.get("BLUEFLEET_TWIN_SRC")
    path = Path(override) if override else repo_root() / "src" / "dpusim"
    if not (path / "cli.py").is_file():
        raise LabError(f"the twin's sources are not at {path} (no cli.py): fix BLUEFLEET_TWIN_SRC or the checkout")
    return path


def mirror() -> str:
    return os.environ.get("BLUEFLEET_DEBIAN_MIRROR", DEFAULT_MIRROR).rstrip("/")


def _log(msg: str) -> None:
    print(f"bluefleet lab: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ commands
def run(argv: list[str], timeout: float = 120, check: bool = True, input_text: str | None = None,
        what: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run one command (argv list, LC_ALL=C); raise LabError naming it when it fails."""
    env = dict(os.environ, LC_ALL="C")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, input=input_text,
                              check=False)
    except FileNotFoundError as exc:
        raise LabError(f"{argv[0]}: command not found ({exc})") from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError("{} timed out after {}s".format(" ".join(argv), timeout)) from exc
    if check and proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip())[-2000:]
        raise LabError(f"{what or ' '.join(argv)} failed (rc={proc.returncode}): {detail}")
    return proc


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(["docker", *args], timeout=timeout, check=check)


def require_docker() -> None:
    """Fail with one clear message when no Docker engine answers."""
    if shutil.which("docker") is None:
        raise LabError("the docker command is not installed: run scripts/ensure-docker.sh (as root it installs "
                       "Debian's docker.io and starts dockerd), then run this again")
    proc = run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise LabError(f"no Docker engine answers (docker info: {last}): start it with scripts/ensure-docker.sh "
                       "(or `make demo`, which does), then run this again")


def require_root(why: str) -> None:
    if os.geteuid() != 0:
        raise LabError(f"{why} needs root (this runs as uid {os.geteuid()}): run it as root, e.g. `sudo -E make demo`")


def image_exists(tag: str) -> bool:
    return docker("image", "inspect", "--format", "{{.Id}}", tag, check=False, timeout=30).returncode == 0


# ------------------------------------------------------------------ hashing
def _files(path: Path) -> list[Path]:
    out = []
    for p in sorted(path.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"):
            out.append(p)
    return out


def tree_hash(*parts: tuple[str, Path] | str) -> str:
    """Hash of named directory trees (relative path + mode + content of every file) and plain strings."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            h.update(b"str\0" + part.encode() + b"\0")
            continue
        name, root = part
        for f in _files(root):
            rel = f.relative_to(root).as_posix()
            h.update((f"{name}/{rel}\0{f.stat().st_mode & 0o111:o}\0").encode())
            h.update(f.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:HASH_LEN]


def read_package_list(path: Path) -> list[str]:
    names = []
    for raw in path.read_text().splitlines():
        name = raw.split("#", 1)[0].strip()
        if name:
            names.append(name)
    if not names:
        raise LabError(f"{path} lists no packages")
    return names


@dataclass(frozen=True)
class ImageSet:
    base: str
    gpu_host: str
    dpu: str

    def as_env(self) -> dict[str, str]:
        return {"BLUEFLEET_BASE_IMAGE": self.base, "BLUEFLEET_GPU_HOST_IMAGE": self.gpu_host,
                "BLUEFLEET_DPU_IMAGE": self.dpu}


def base_tag() -> str:
    d = images_dir() / "base"
    return "{}/base:{}".format(REPO, tree_hash(("base", d), f"suite={SUITE} variant={VARIANT}"))


def image_tag(name: str, base: str) -> str:
    return "{}/{}:{}".format(REPO, name, tree_hash(("ctx", images_dir() / name), ("common", images_dir() / "twin"),
                                              ("twin", twin_dir()), "base=" + base))


def planned_images() -> ImageSet:
    base = base_tag()
    return ImageSet(base=base, gpu_host=image_tag("gpu-host", base), dpu=image_tag("dpu", base))


# ------------------------------------------------------------------ base image
def _check_mirror(url: str) -> None:
    release = f"{url}/dists/{SUITE}/Release"
    try:
        with urllib.request.urlopen(release, timeout=15) as resp:  # noqa: S310 (an http mirror is the norm)
            resp.read(64)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise LabError(f"debootstrap cannot reach the package mirror {release} ({exc}): check the network or set "
                       "BLUEFLEET_DEBIAN_MIRROR to a reachable Debian mirror, then run again") from exc


def find_debootstrap() -> str | None:
    return shutil.which("debootstrap") or ("/usr/sbin/debootstrap" if os.path.exists("/usr/sbin/debootstrap") else None)


def _ensure_debootstrap() -> str:
    path = find_debootstrap()
    if path:
        return path
    require_root("installing debootstrap")
    _log("debootstrap is missing: installing it with apt-get ...")
    proc = run([*APT_GET, "install", "-y", "-q", "debootstrap"], timeout=300, check=False)
    if proc.returncode != 0:
        run([*APT_GET, "update", "-q"], timeout=300, check=False)
        proc = run([*APT_GET, "install", "-y", "-q", "debootstrap"], timeout=300, check=False)
    path = find_debootstrap()
    if proc.returncode != 0 or not path:
        raise LabError(f"debootstrap is not installed and `apt-get install debootstrap` failed "
                       f"({proc.stderr.strip()[-500:]}): install it (apt-get install debootstrap) and run again")
    return path


def build_base(tag: str) -> float:
    """debootstrap a root file system and import it as ``tag``; returns seconds taken."""
    require_root("building the base image with debootstrap")
    url = mirror()
    _check_mirror(url)
    debootstrap = _ensure_debootstrap()
    d = images_dir() / "base"
    packages = read_package_list(d / "packages.txt")
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="bluefleet-base-", dir="/var/tmp"))
    rootfs = work / "root"
    try:
        _log(f"debootstrap {SUITE} ({VARIANT}) from {url} into {rootfs} ...")
        run([debootstrap, f"--variant={VARIANT}", "--include={}".format(",".join(packages)), SUITE, str(rootfs), url],
            timeout=1200, what=f"debootstrap {SUITE} from {url}")
        shutil.copyfile(d / "sources.list", rootfs / "etc" / "apt" / "sources.list")
        for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (rootfs / sub).glob("*"):
                if p.is_file():
                    p.unlink()
        _log(f"docker import -> {tag}")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
        try:
            imp = subprocess.run(["docker", "import", "--change", 'CMD ["/bin/bash"]', "-", tag], stdin=tar.stdout,
                                 capture_output=True, text=True, timeout=600, check=False)
        finally:
            if tar.stdout:
                tar.stdout.close()
            tar.wait(timeout=60)
        if tar.returncode != 0 or imp.returncode != 0:
            raise LabError(f"docker import of the base root file system failed: {imp.stderr.strip()[-1000:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return time.monotonic() - t0


# ------------------------------------------------------------------ derived images
def build_image(name: str, tag: str, base: str) -> float:
    """``docker build --network host`` of ``lab/images/<name>`` FROM ``base``; returns seconds taken."""
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bluefleet-ctx-") as tmp:
        ctx = Path(tmp)
        shutil.copytree(images_dir() / name, ctx, dirs_exist_ok=True)
        shutil.copy2(images_dir() / "twin" / "dpusim", ctx / "dpusim")
        shutil.copytree(twin_dir(), ctx / "twin" / "dpusim",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"))
        _log(f"docker build --network host -t {tag} (FROM {base}) ...")
        run(["docker", "build", "--network", "host", "--build-arg", f"BASE={base}", "-t", tag, str(ctx)],
            timeout=1800, what=f"docker build of {tag}")
    return time.monotonic() - t0


def ensure_images(force: bool = False) -> tuple[ImageSet, dict[str, float]]:
    """Build what is missing; return the tags and the seconds each build took (empty when reused)."""
    require_docker()
    images = planned_images()
    timings: dict[str, float] = {}
    if force or not image_exists(images.base):
        timings["base"] = build_base(images.base)
    for name, tag in (("gpu-host", images.gpu_host), ("dpu", images.dpu)):
        if force or not image_exists(tag):
            timings[name] = build_image(name, tag, images.base)
    if timings:
        prune_stale(images)
    return images, timings


def prune_stale(images: ImageSet) -> list[str]:
    """Untag older ``bluefleet/{base,gpu-host,dpu}`` images (their inputs changed). An image a container
    still uses is kept (``docker rmi`` without force refuses it); its layers stay cached either way."""
    current = {images.base, images.gpu_host, images.dpu}
    out = docker("images", "--format", "{{.Repository}}:{{.Tag}}", timeout=60).stdout.split()
    stale = [t for t in out if t.split(":")[0] in ("%s/base" % REPO, "%s/gpu-host" % REPO, "%s/dpu" % REPO)
             and t not in current]
    removed = []
    for tag in stale:
        if docker("rmi", tag, check=False, timeout=120).returncode == 0:
            removed.append(tag)
    return removed


def image_size(tag: str) -> int:
    out = docker("image", "inspect", "--format", "{{.Size}}", tag, timeout=30).stdout.strip()
    return int(out)
