"""A throwaway PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` in a temporary folder, on 127.0.0.1.

Debian's ``postgresql`` package provides the binaries (``make test``
installs it with apt on a fresh machine, as it does chromium). PostgreSQL
refuses to run as root: as root the server runs as the ``postgres`` user
the package creates (``runuser``), in a folder that user owns. Trust
authentication on loopback only, no fsync: it holds nothing worth keeping,
and is removed when the session ends.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["server_binaries", "throwaway_server"]

INSTALL_HINT = (
    "the PostgreSQL server binaries (initdb, pg_ctl) are not installed: `make test` installs Debian's "
    "postgresql with apt (as root); or run `sudo apt-get install -y postgresql`"
)


def server_binaries() -> Path:
    """The folder of the newest installed server's ``initdb`` and ``pg_ctl``."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).resolve().parent
    raise RuntimeError(INSTALL_HINT)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def throwaway_server() -> Iterator[str]:
    """Start a server; yield its DSN (``postgresql://postgres@127.0.0.1:PORT/postgres``); stop and remove it."""
    bin_dir = server_binaries()
    root = Path(tempfile.mkdtemp(prefix="lg-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            raise RuntimeError(
                "running as root, and there is no 'postgres' user to run the server as"
            ) from None
        os.chown(root, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = root / "data", _free_port()

    def run(*cmd: str, timeout: float = 120) -> None:
        proc = subprocess.run(
            [*prefix, *cmd], capture_output=True, text=True, timeout=timeout, check=False, cwd=root
        )
        if proc.returncode:
            log = (root / "log").read_text() if (root / "log").exists() else ""
            raise RuntimeError(
                f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}{log}"
            )

    try:
        run(
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c full_page_writes=off"
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)
