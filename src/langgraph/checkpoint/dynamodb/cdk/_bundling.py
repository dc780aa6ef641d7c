"""Lambda packaging without Docker.

CDK bundles asset code in a Docker container unless a *local* bundler says it
did the job. No Docker engine is assumed anywhere in this project (CI and
laptops alike), so :class:`PipLocalBundling` builds the asset on the host:
``pip install --platform manylinux2014_<arch> --only-binary=:all: --target``
fetches Lambda-compatible wheels (never compiles anything for the host), then
the handler sources and this library's own package are copied next to them,
and the whole asset is compiled to bytecode by an interpreter of the
runtime's version (Lambda's code directory is read-only: without it, every
cold start compiles every module again).

This module imports nothing from ``aws_cdk`` at import time except what the
``ILocalBundling`` protocol needs, and :func:`bundle_python_lambda` itself is
plain Python, so tests can build an asset directory and import it in a
subprocess without a CDK synth.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import ILocalBundling

__all__ = [
    "DISTRIBUTION",
    "PipLocalBundling",
    "asset_fingerprint",
    "bundle_python_lambda",
    "bytecode_interpreter",
    "compile_bytecode",
    "library_package_dir",
    "library_requirements",
    "pip_platform",
]

#: The distribution whose runtime dependencies the asset needs.
DISTRIBUTION = "langgraph-checkpoint-dynamodb-s3"

_EXTRA_MARKER = re.compile(r"\bextra\s*==")

#: Bump when the bundling recipe changes, so cached assets are rebuilt.
_RECIPE_VERSION = "3"

#: Never shipped to Lambda: the CDK code itself (it imports aws_cdk) and caches.
_LIBRARY_EXCLUDES = ("cdk", "__pycache__", "*.pyc", "*.pyo")
_SOURCE_EXCLUDES = ("__pycache__", "*.pyc", "*.pyo", "tests", ".pytest_cache", ".mypy_cache", ".ruff_cache")


def library_package_dir() -> Path:
    """Directory of the installed ``langgraph.checkpoint.dynamodb`` package.

    Works for an editable install (``src/`` of this repo) and for a wheel
    installed from PyPI alike, which is why it is found through the import
    system rather than relative to a repository checkout.
    """
    import langgraph.checkpoint.dynamodb as pkg

    return Path(pkg.__file__).resolve().parent


def library_requirements() -> list[str]:
    """Runtime dependencies of this library, read from its installed metadata.

    ``pyproject.toml`` stays the one place they are declared; optional extras
    (``async``, ``cdk``, ``dev``...) are left out: a handler that wants one
    names it in ``extra_requirements``. Environment markers are kept and
    evaluated by pip against the *target* Python version.
    """
    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:  # pragma: no cover - source tree without install
        return ["langgraph-checkpoint>=4.3.2,<5", "boto3>=1.34", "zstandard>=0.22; python_version<'3.14'"]
    return [req for req in declared if not _EXTRA_MARKER.search(req)]


def pip_platform(architecture: str) -> str:
    """The manylinux wheel tag for a Lambda architecture (``x86_64``/``arm64``)."""
    return {"x86_64": "manylinux2014_x86_64", "arm64": "manylinux2014_aarch64"}[architecture]


def _included(path: Path, root: Path, include: Sequence[str] | None) -> bool:
    """Whether ``path`` (under ``root``) belongs to the asset.

    With ``include``, only those top-level folders are taken, plus top-level
    ``.py`` files: shared helper modules that handlers may import.
    """
    rel = path.relative_to(root)
    if any(part in _SOURCE_EXCLUDES for part in rel.parts):
        return False
    if path.suffix in (".pyc", ".pyo"):
        return False
    if include is None:
        return True
    if len(rel.parts) == 1:
        return path.is_file() and path.suffix == ".py"
    return rel.parts[0] in include


def _source_files(source_dir: Path | None, include: Sequence[str] | None) -> list[tuple[Path, str]]:
    """``(file, path relative to source_dir)`` of the asset's own sources (none without a folder)."""
    if source_dir is None:
        return []
    return [
        (p, p.relative_to(source_dir).as_posix())
        for p in sorted(source_dir.rglob("*"))
        if p.is_file() and _included(p, source_dir, include)
    ]


def _library_files(library_dir: Path) -> list[Path]:
    files = []
    for p in sorted(library_dir.rglob("*")):
        rel = p.relative_to(library_dir)
        if (
            not p.is_file()
            or rel.parts[0] == "cdk"
            or "__pycache__" in rel.parts
            or p.suffix in (".pyc", ".pyo")
        ):
            continue
        files.append(p)
    return files


def asset_fingerprint(
    source_dir: Path | None,
    *,
    include: Sequence[str] | None,
    requirements: Iterable[str],
    python_version: str,
    platform: str,
    include_library: bool = True,
) -> str:
    """A hash of everything that goes into the asset, computed *without* bundling.

    CDK uses it as the asset hash (``AssetHashType.CUSTOM``): a synth whose
    inputs did not change reuses the staged asset in ``cdk.out`` instead of
    running pip again, and a change to a handler, to this library or to the
    requirements yields a new hash, hence a new deployment.
    """
    h = hashlib.sha256()
    h.update(f"recipe={_RECIPE_VERSION}\npy={python_version}\nplatform={platform}\n".encode())
    for req in requirements:
        h.update(f"req={req}\n".encode())
    for p, rel in _source_files(source_dir, include):
        h.update(f"src={rel}\n".encode())
        h.update(p.read_bytes())
    if include_library:
        lib = library_package_dir()
        for p in _library_files(lib):
            h.update(f"lib={p.relative_to(lib).as_posix()}\n".encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def bundle_python_lambda(
    output_dir: str | Path,
    source_dir: str | Path | None = None,
    *,
    include: Sequence[str] | None = None,
    requirements: Sequence[str] = (),
    python_version: str = "3.12",
    platform: str = "manylinux2014_x86_64",
    include_library: bool = True,
    python_executable: str | None = None,
) -> Path:
    """Build a Lambda asset directory: wheels, then this library, then handlers.

    Args:
        output_dir: Directory to fill (created if missing; CDK passes an empty one).
        source_dir: Your handlers' root, or ``None`` for the library and its
            wheels alone (the maintenance handlers are in the library).
        include: Top-level folders of ``source_dir`` to ship (``None``: all).
        requirements: pip requirement strings; this library's own runtime
            dependencies are added when ``include_library`` is true.
        python_version: Target interpreter, ``"3.12"`` for ``python3.12``.
        platform: pip ``--platform`` tag of the Lambda architecture.
        include_library: Copy ``langgraph.checkpoint.dynamodb`` (minus its
            ``cdk`` subpackage) into the asset. The library is not fetched from
            PyPI, so the deployed code is exactly the code being tested.
        python_executable: Interpreter whose pip runs (default: the current one).

    Returns:
        ``output_dir`` as a :class:`~pathlib.Path`.

    Example:
        >>> bundle_python_lambda("/tmp/asset", "lambdas", include=["pruner"])  # doctest: +SKIP
    """
    out = Path(output_dir)
    src = Path(source_dir) if source_dir is not None else None
    out.mkdir(parents=True, exist_ok=True)
    reqs = [*(library_requirements() if include_library else []), *requirements]
    if reqs:
        cmd = [
            python_executable or sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            # The host's installed packages are irrelevant to the asset; pip's
            # conflict report against them is noise.
            "--no-warn-conflicts",
            # pip would compile with the host's interpreter, maybe the wrong
            # version: compile_bytecode compiles the whole asset for its runtime.
            "--no-compile",
            "--target",
            str(out),
            "--platform",
            platform,
            "--implementation",
            "cp",
            "--python-version",
            python_version,
            # Wheels only: nothing is compiled on this host for the Lambda host.
            "--only-binary=:all:",
            *reqs,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"pip failed ({proc.returncode}) for {reqs}:\n{proc.stderr[-4000:]}")
        # Console scripts point at the host's interpreter: useless in Lambda.
        shutil.rmtree(out / "bin", ignore_errors=True)
    if include_library:
        lib = library_package_dir()
        dest = out / "langgraph" / "checkpoint" / "dynamodb"
        shutil.copytree(lib, dest, ignore=shutil.ignore_patterns(*_LIBRARY_EXCLUDES), dirs_exist_ok=True)
    for p, rel in _source_files(src, include):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
    compile_bytecode(out, python_version)
    return out


def bytecode_interpreter(python_version: str) -> str | None:
    """An interpreter of ``python_version`` (``"3.12"``) here: the running one, ``python3.12``, or pyenv's.

    Bytecode is per minor version: a ``.pyc`` of another version is ignored
    (and, on Lambda's read-only code directory, the module is compiled again
    on every cold start).
    """
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python_version:
        return sys.executable
    candidates = [shutil.which(f"python{python_version}")]
    # pyenv's shim runs only the selected versions; its installed ones are under versions/.
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates += sorted(str(p) for p in pyenv.glob(f"{python_version}.*/bin/python{python_version}"))
    for exe in filter(None, candidates):
        probe = subprocess.run(
            [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == python_version:
            return exe
    return None


def compile_bytecode(out: Path, python_version: str) -> bool:
    """Compile every module of an asset for its runtime; ``False`` (with a warning) if no interpreter.

    Lambda's code directory is read-only, so without bytecode in the asset
    every cold start compiles every module it imports (1.5 s of a saver's
    import, 3-4 s of a LangGraph agent's). ``unchecked-hash`` pycs are used
    whatever the sources' timestamps (an asset zip does not keep them), and
    nothing checks them against the sources, which never change in a
    deployed asset.
    """
    exe = bytecode_interpreter(python_version)
    if exe is None:
        warnings.warn(
            f"no Python {python_version} on this host: the Lambda asset ships without bytecode, so every cold "
            f"start compiles the modules it imports. Install python{python_version}, or deploy the runtime "
            f"of the interpreter that builds the asset (runtime=lambda_.Runtime.PYTHON_"
            f"{sys.version_info.major}_{sys.version_info.minor})",
            stacklevel=2,
        )
        return False
    cmd = [exe, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        # A file that does not compile for this version (a wheel's test data, say) is left as it is.
        tail = (proc.stdout + proc.stderr)[-2000:]
        warnings.warn(f"compileall reported errors while compiling the Lambda asset:\n{tail}", stacklevel=2)
    return True


@jsii.implements(ILocalBundling)
class PipLocalBundling:
    """``ILocalBundling`` that runs :func:`bundle_python_lambda` on the host.

    Args:
        source_dir: The handlers' root folder.
        include: Top-level folders of ``source_dir`` to ship (``None``: all).
        requirements: Extra pip requirements (e.g. ``["langgraph==1.2.24"]``).
        python_version: Target Python (``"3.12"``).
        platform: pip platform tag (``"manylinux2014_x86_64"``).

    Example:
        >>> from aws_cdk import BundlingOptions, DockerImage, aws_lambda as lambda_
        >>> code = lambda_.Code.from_asset(  # doctest: +SKIP
        ...     "lambdas",
        ...     bundling=BundlingOptions(
        ...         image=DockerImage.from_registry("unused"),
        ...         local=PipLocalBundling("lambdas", include=["pruner"]),
        ...     ),
        ... )
    """

    def __init__(
        self,
        source_dir: str | Path | None,
        *,
        include: Sequence[str] | None = None,
        requirements: Sequence[str] = (),
        python_version: str = "3.12",
        platform: str = "manylinux2014_x86_64",
        include_library: bool = True,
    ) -> None:
        self.source_dir = Path(source_dir) if source_dir is not None else None
        self.include = list(include) if include is not None else None
        self.requirements = list(requirements)
        self.python_version = python_version
        self.platform = platform
        self.include_library = include_library

    def try_bundle(self, output_dir: str, *_options: Any, **_kw_options: Any) -> bool:
        """Bundle into ``output_dir``; ``True`` tells CDK not to try Docker.

        The jsii kernel passes the ``BundlingOptions`` positionally (the
        Python protocol stub shows them as keywords); neither is needed.
        """
        bundle_python_lambda(
            output_dir,
            self.source_dir,
            include=self.include,
            requirements=self.requirements,
            python_version=self.python_version,
            platform=self.platform,
            include_library=self.include_library,
        )
        return True
