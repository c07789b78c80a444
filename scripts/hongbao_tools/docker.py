"""Docker for `sam local`: a daemon that answers (Debian's `docker.io`, installed by
scripts/install-deps.sh `--with-docker`; `dockerd` started when none answers, and stopped again
only if it was started here), and the Lambda base image `sam local` builds its emulation image
on, built here from Debian packages because no image registry is reachable.

The base image is what `public.ecr.aws/lambda/provided:al2023-<arch>` must hold for a Rust
`bootstrap`: the shared libraries it links (glibc's libc, libm and loader, libgcc_s) and a
`/bin/sh` with `mv` and `chmod` for the `RUN` line of SAM's own Dockerfile (a static busybox).
The packages come from Debian's archive (`apt-get download`); the image is labelled with the
SHA-256 of the recipe and of the packages' index checksums, so a second run that finds the same
label builds nothing."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from .deps import install_deps
from .paths import ROOT
from .procs import forget, kill_tree, log, spawn

# The Debian packages of the base image: a static shell, glibc, libgcc_s.
BASE_PACKAGES = ("busybox-static", "libc6", "libgcc-s1")
# Bumped when the recipe below changes what the image holds.
RECIPE = "hongbao-lambda-base-v1"
LABEL = "org.hongbao.base-sha256"
DOCKERD_LOG = ROOT / "target" / "sam-local" / "dockerd.log"


def lambda_arch() -> str:
    """This machine's Lambda architecture: `x86_64` or `arm64` (what the local image runs)."""
    return "arm64" if platform.machine().lower() in ("aarch64", "arm64") else "x86_64"


def base_image_name(arch: str | None = None) -> str:
    """The tag `sam local` looks for (`provided.al2023` with `Architectures: [<arch>]`)."""
    return f"public.ecr.aws/lambda/provided:al2023-{arch or lambda_arch()}"


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)


def daemon_answers() -> bool:
    """`docker info` succeeds (a client and a daemon it reaches)."""
    if shutil.which("docker") is None:
        return False
    return _run(["docker", "info", "--format", "{{.ServerVersion}}"]).returncode == 0


class DockerDaemon:
    """A Docker daemon for the run: the one that answers, or `dockerd` started here (as root,
    or through `sudo -n`) and stopped by `close()`. A context manager."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> DockerDaemon:
        if daemon_answers():
            return self
        if shutil.which("dockerd") is None:
            install_deps("--with-docker")
        if shutil.which("dockerd") is None:
            raise RuntimeError(
                "dockerd not found after scripts/install-deps.sh --with-docker "
                "(Debian's docker.io package)"
            )
        DOCKERD_LOG.parent.mkdir(parents=True, exist_ok=True)
        sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
        log(f"sam-local: starting dockerd (log {DOCKERD_LOG.relative_to(ROOT)})")
        with open(DOCKERD_LOG, "ab") as out:
            self.proc = spawn([*sudo, "dockerd"], stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not daemon_answers():
            if self.proc.poll() is not None:
                raise RuntimeError(f"dockerd exited with {self.proc.returncode}; see {DOCKERD_LOG}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"dockerd did not answer within {timeout} s; see {DOCKERD_LOG}")
            time.sleep(0.25)
        return self

    def close(self) -> None:
        """Stops `dockerd` if this object started it (its containers stop with it)."""
        if self.proc is not None:
            kill_tree(self.proc, grace=15.0)
            forget(self.proc)
            self.proc = None

    def __enter__(self) -> DockerDaemon:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def _package_uris() -> list[tuple[str, str, str]]:
    """(URI, file name, `SHA256:<hex>`) of each base package's candidate version, from the apt
    index (nothing downloaded)."""
    r = _run(["apt-get", "download", "--print-uris", *BASE_PACKAGES])
    if r.returncode != 0:
        _run(["apt-get", "update"])
        r = _run(["apt-get", "download", "--print-uris", *BASE_PACKAGES])
    if r.returncode != 0:
        raise RuntimeError(f"apt-get download --print-uris failed: {r.stderr.strip()}")
    found = re.findall(r"^'([^']+)' (\S+) \d+ (SHA256:[0-9a-f]{64})$", r.stdout, re.M)
    if len(found) != len(BASE_PACKAGES):
        raise RuntimeError(f"apt-get download --print-uris: unexpected answer {r.stdout!r}")
    return found


def _image_label(tag: str) -> str | None:
    r = _run(
        ["docker", "image", "inspect", "--format", f'{{{{index .Config.Labels "{LABEL}"}}}}', tag]
    )
    return r.stdout.strip() if r.returncode == 0 else None


def ensure_base_image(arch: str | None = None) -> tuple[str, bool]:
    """Builds the base image unless one with the same content label exists: (tag, built)."""
    arch = arch or lambda_arch()
    if arch != lambda_arch():
        raise RuntimeError(
            f"a {arch} base image cannot be built from this {lambda_arch()} machine's packages"
        )
    tag = base_image_name(arch)
    packages = _package_uris()
    digest = hashlib.sha256(
        "\n".join([RECIPE, arch, *(f"{name} {sha}" for _, name, sha in packages)]).encode()
    ).hexdigest()
    if _image_label(tag) == digest:
        return tag, False
    log(f"sam-local: building {tag} from {', '.join(BASE_PACKAGES)} (Debian)")
    with tempfile.TemporaryDirectory(prefix="hongbao-base-") as tmp:
        debs, rootfs = Path(tmp, "debs"), Path(tmp, "rootfs")
        debs.mkdir()
        rootfs.mkdir()
        # apt's sandbox user must be able to write the directory.
        os.chmod(debs, 0o777)
        r = _run(["apt-get", "download", *BASE_PACKAGES], cwd=debs)
        if r.returncode != 0:
            raise RuntimeError(f"apt-get download failed: {r.stderr.strip()}")
        for deb in sorted(debs.glob("*.deb")):
            r = _run(["dpkg-deb", "-x", str(deb), str(rootfs)])
            if r.returncode != 0:
                raise RuntimeError(f"dpkg-deb -x {deb.name} failed: {r.stderr.strip()}")
        busybox = rootfs / "bin" / "busybox"
        applets = _run([str(busybox), "--list"]).stdout.split()
        for applet in ("sh", "mv", "chmod", "cp", "rm", "mkdir", "ls", "cat", "env"):
            if applet not in applets:
                raise RuntimeError(f"busybox has no {applet}")
        for applet in applets:
            link = rootfs / "bin" / applet
            if not link.exists():
                link.symlink_to("busybox")
        for d in ("tmp", "var/task", "var/runtime", "var/rapid", "opt"):
            (rootfs / d).mkdir(parents=True, exist_ok=True)
        (rootfs / "tmp").chmod(0o1777)
        tarball = Path(tmp, "rootfs.tar")
        with tarfile.open(tarball, "w") as tar:
            tar.add(rootfs, arcname=".", filter=_normalise)
        r = _run(
            [
                "docker",
                "import",
                "--change",
                f"LABEL {LABEL}={digest}",
                "--change",
                "ENV PATH=/usr/local/bin:/usr/bin:/bin",
                "--change",
                "WORKDIR /var/task",
                str(tarball),
                tag,
            ]
        )
        if r.returncode != 0:
            raise RuntimeError(f"docker import failed: {r.stderr.strip()}")
    return tag, True


def _normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    return info
