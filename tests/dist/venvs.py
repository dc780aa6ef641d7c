"""Cached virtualenvs for the tests that need packages the dev venv cannot hold.

The LangGraph API server (``langgraph-cli[inmem]``) and aioboto3 (which pins
an older boto3) each get a venv of their own, built once and kept under
``~/.cache/langgraph-checkpoint-dynamodb-s3/venvs/`` (``LANGGRAPH_DYNAMODB_VENV_CACHE``
overrides it, e.g. for a CI cache), in a folder named by a hash of what
decides its content: the Python version, the pinned requirements and this
project's own dependency lists from ``pyproject.toml``. A change to any of
them builds a new venv; nothing else does, so a warm run needs no network.

This project itself is reinstalled from the checkout whenever its sources
changed since the venv last saw them (a regular, non-editable install,
``--no-deps``, no build isolation: hatchling lives in the venv), so the venv
always runs the code under test, from its own ``site-packages``, never from
the checkout.

A venv is built and used under an exclusive file lock: two test processes
that want the same venv (``pytest -n 2``, two checkouts on one machine)
take turns instead of reinstalling the package under each other.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(
    os.environ.get(
        "LANGGRAPH_DYNAMODB_VENV_CACHE",
        Path.home() / ".cache" / "langgraph-checkpoint-dynamodb-s3" / "venvs",
    )
)
#: Bump to rebuild every cached venv (a change in how they are built).
LAYOUT = 1
_DONE = ".complete"
_INSTALLED = ".installed-sources"


def clean_env(**extra: str) -> dict[str, str]:
    """A subprocess environment with nothing from the host's AWS or Python set-up.

    No ``PYTHONPATH`` (the checkout must not shadow the installed package), no
    AWS profile or credentials files, no metadata service; only what a step is
    given in ``extra``.
    """
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PIP_CERT", "PIP_INDEX_URL", "PIP_DEFAULT_TIMEOUT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    env.update(extra)
    return env


def _run(cmd: Sequence[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        list(cmd), capture_output=True, text=True, check=False, timeout=timeout, env=clean_env(), **kw
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}"
        )
    return proc


def _project_key() -> str:
    """What of ``pyproject.toml`` decides the venv's content: our dependency lists.

    The ``dependencies = [...]`` array of ``[project]`` and the whole
    ``[project.optional-dependencies]`` table, as text (``tomllib`` is 3.11+):
    a new classifier or pytest setting must not rebuild the venvs.
    """
    kept: list[str] = []
    table, in_deps = "", False
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("["):
            table = line.strip()
        elif table == "[project]" and line.startswith("dependencies"):
            in_deps = True
        if table == "[project.optional-dependencies]" or in_deps:
            kept.append(line)
        if in_deps and line.rstrip().endswith("]") and not line.lstrip().startswith("#"):
            in_deps = False
    return "\n".join(kept)


def _source_hash() -> str:
    """A hash of what the wheel is built from: the package's files and the build metadata."""
    h = hashlib.sha256()
    files = [ROOT / "pyproject.toml", ROOT / "README.md", ROOT / "LICENSE"]
    files += sorted(p for p in (ROOT / "src").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        if path.is_file():
            h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def venv_key(name: str, requirements: Sequence[str], extras: str) -> str:
    """The cache key of a venv: a hash of everything that decides what it holds."""
    blob = json.dumps(
        {
            "layout": LAYOUT,
            "name": name,
            "python": list(sys.version_info[:2]),
            "requirements": sorted(requirements),
            "extras": extras,
            "project": _project_key(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _build(root: Path, requirements: Sequence[str], extras: str) -> None:
    if root.exists():
        shutil.rmtree(root)  # a build that died half way
    _run([sys.executable, "-m", "venv", str(root)], timeout=120)
    py = str(root / "bin" / "python")
    # One resolver run over everything (the pins, hatchling for the later
    # reinstalls, and this project with its extras), so pip sees every
    # constraint at once. --no-compile: the server's dependencies are large.
    _run(
        [
            py,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-compile",
            "hatchling>=1.27",
            *requirements,
            f"{ROOT}[{extras}]",
        ],
        timeout=1200,
    )
    (root / _DONE).write_text(json.dumps({"requirements": list(requirements), "extras": extras}))


@contextmanager
def cached_venv(name: str, requirements: Sequence[str], *, extras: str = "async") -> Iterator[Path]:
    """A venv with ``requirements`` and this project (its ``extras``) installed from the checkout.

    Yields the venv's folder while holding its lock. Built on first use,
    then reused; the project is reinstalled (``--no-deps``) when its sources changed.

    Example:
        ```python
        with cached_venv("aioboto3", ["aioboto3==15.5.0"]) as venv:
            subprocess.run([venv / "bin" / "python", "script.py"], check=True)
        ```
    """
    CACHE.mkdir(parents=True, exist_ok=True)
    root = CACHE / f"{name}-{venv_key(name, requirements, extras)}"
    with open(CACHE / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (root / _DONE).is_file():
                _build(root, requirements, extras)
            # Reinstall only when the sources changed since the last install
            # (a build takes ~15 s on these machines, the hash ~0.1 s).
            stamp, current = root / _INSTALLED, _source_hash()
            if not stamp.is_file() or stamp.read_text() != current:
                stamp.unlink(missing_ok=True)
                _run(
                    [
                        str(root / "bin" / "python"),
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--no-deps",
                        "--no-build-isolation",
                        "--force-reinstall",
                        "--no-index",
                        str(ROOT),
                    ],
                    timeout=300,
                )
                stamp.write_text(current)
            yield root
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
