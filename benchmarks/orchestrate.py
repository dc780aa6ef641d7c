"""The benchmark driver: moto server, both virtualenvs, every workload, the report.

``python -m benchmarks`` (what ``make bench`` runs):

1. points every AWS client at a loopback moto server started here as a
   subprocess (``python -m moto.server -H 127.0.0.1 -p PORT``), with dummy
   credentials and no AWS config files;
2. creates ``.venv-ref`` on first use (``benchmarks/requirements-ref.txt``,
   pinned), the reference saver's own virtualenv;
3. runs the codec measurement (``benchmarks.codecs``) and the load benchmark
   (``benchmarks.load``: 1,000 threads, 32 async workers, and cost against
   thread size; ours only; ``--quick`` for smoke-test sizes);
4. for every workload and repetition, for each saver (alternating which
   goes first): creates a fresh table and bucket (ours with
   ``DynamoDBSaver.setup()``, the reference's with string keys ``PK``/``SK``,
   on-demand), runs ``python -m benchmarks.runner`` with that saver's
   interpreter, then drops the table and bucket;
5. runs the cold-start probe in fresh interpreters;
6. writes ``benchmarks/results.json`` and regenerates ``docs/benchmarks.md``
   and ``docs/img/*.png`` from it (``--report-only`` does just this step).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.counting import LatencyModel
from benchmarks.sides import is_reference
from benchmarks.workloads import Params, params_to_dict

__all__ = ["PLAN", "ROOT", "main"]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results.json"
REF_VENV = ROOT / ".venv-ref"
REF_REQUIREMENTS = ROOT / "benchmarks" / "requirements-ref.txt"

#: Workloads and repetitions. ``delta`` and ``delta_history`` run once (the
#: reference is capped by the time budget); ``list`` and ``async`` twice (about a minute per pair).
PLAN: dict[str, int] = {
    "calls": 3,
    "linear": 3,
    "chat": 3,
    "delta": 1,
    "delta_history": 1,
    "big": 3,
    "list": 2,
    "async": 2,
    "fanout": 1,
}
COLD_STARTS = 3
#: Parts that run once, ours only, after the workloads: the codec measurement
#: (``benchmarks.codecs``, no AWS calls), the load benchmark
#: (``benchmarks.load``) and the inspector's page views (``benchmarks.ui``), both
#: against the same moto server, and packing's cost and loop lag by size
#: (``benchmarks.offload``, no AWS calls; issue 16 target 4).
SINGLE: tuple[str, ...] = ("codecs", "load", "ui", "offload")
#: Extra sides, once each: the reference with its checkpoint compression on.
#: ``ours-zlib``: ours with ``compression="zlib"``, the default before issue
#: 16 target 1 (bytes are compared with it), run as many times as the other
#: sides where the codec matters.
EXTRA_SIDES: dict[str, list[str]] = {"chat": ["ref-gz"], "big": ["ref-gz"]}
#: ``ours-iothread``: the async saver with ``io_thread=True`` (issue 16 target 4).
CODEC_SIDES: dict[str, list[str]] = {"chat": ["ours-zlib"], "big": ["ours-zlib"], "async": ["ours-iothread"]}

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    "AWS_EC2_METADATA_DISABLED": "true",
}

log = logging.getLogger("benchmarks")


# ------------------------------------------------------------------ moto


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """A moto server subprocess on 127.0.0.1; yields its endpoint URL."""
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **AWS_ENV},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.2)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -------------------------------------------------------- reference venv


def ensure_ref_venv(python: str | None = None) -> Path:
    """Create ``.venv-ref`` with the pinned reference saver unless it is already current."""
    stamp = REF_VENV / ".bench-requirements.sha256"
    want = hashlib.sha256(REF_REQUIREMENTS.read_bytes()).hexdigest()
    interp = REF_VENV / "bin" / "python"
    if interp.exists() and stamp.exists() and stamp.read_text().strip() == want:
        return interp
    log.info("creating %s (first run, or pins changed)", REF_VENV)
    if REF_VENV.exists():
        shutil.rmtree(REF_VENV)
    base = python or shutil.which("python3") or sys.executable
    subprocess.run([base, "-m", "venv", str(REF_VENV)], check=True)
    pip = subprocess.run(
        [
            str(interp),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "-r",
            str(REF_REQUIREMENTS),
        ],
        capture_output=True,
        text=True,
    )
    if pip.returncode != 0:
        raise RuntimeError(f"pip install into {REF_VENV} failed:\n{pip.stdout[-3000:]}\n{pip.stderr[-3000:]}")
    stamp.write_text(want + "\n")
    return interp


# ------------------------------------------------------- tables, buckets


def create_storage(side: str, name: str) -> None:
    """A fresh table and bucket for one run of one saver."""
    if not is_reference(side):
        from langgraph.checkpoint.dynamodb import DynamoDBSaver

        with DynamoDBSaver(table_name=name, bucket_name=name, region_name="us-east-1") as saver:
            saver.setup()
        return
    import boto3

    ddb = boto3.client("dynamodb", region_name="us-east-1")
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
    )
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2})
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=name)


def drop_storage(name: str) -> None:
    """Delete a run's table and bucket (moto keeps everything in memory)."""
    import boto3

    ddb = boto3.client("dynamodb", region_name="us-east-1")
    s3 = boto3.client("s3", region_name="us-east-1")
    with contextlib.suppress(Exception):
        ddb.delete_table(TableName=name)
    with contextlib.suppress(Exception):
        while True:
            resp = s3.list_objects_v2(Bucket=name)
            keys = [{"Key": o["Key"]} for o in resp.get("Contents", [])]
            if keys:
                s3.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})
            if not resp.get("IsTruncated"):
                break
        s3.delete_bucket(Bucket=name)


def single_part_cli(
    prog: str,
    doc: str,
    prefix: str,
    run: Callable[[str, str, bool, LatencyModel | None], dict[str, Any]],
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """The command line the single-part benchmarks share (``benchmarks.load``, ``benchmarks.ui``).

    ``[--quick] [--table T --bucket B] [--latency none|model] [--out F]``:
    ``run(table, bucket, quick, latency)`` against the given table, or a
    fresh one on a moto server of its own; the result is written to ``--out``
    as JSON and returned for the caller's summary.
    """
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    ap.add_argument("--table", help="existing table (default: create one on a fresh moto server)")
    ap.add_argument("--bucket")
    ap.add_argument("--latency", choices=("none", "model"), default="model")
    ap.add_argument("--out", help="write the JSON result here (default: print a summary)")
    args = ap.parse_args(argv)
    latency = LatencyModel() if args.latency == "model" else None
    if args.table:
        result = run(args.table, args.bucket or args.table, args.quick, latency)
    else:
        result = on_fresh_store(prefix, lambda name: run(name, name, args.quick, latency))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1, default=str)
    return result


def on_fresh_store(prefix: str, run: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """``run(name)`` against a fresh table and bucket ``name`` on a moto server of its own.

    For the single-part benchmarks' command lines (``benchmarks.load``,
    ``benchmarks.ui``) when no table is given.
    """
    os.environ.update(AWS_ENV)
    with moto_server() as endpoint:
        os.environ["AWS_ENDPOINT_URL"] = endpoint
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        create_storage("ours", name)
        try:
            return run(name)
        finally:
            drop_storage(name)


# ---------------------------------------------------------------- runs


def side_env(side: str) -> dict[str, str]:
    """The subprocess environment of one side.

    Ours gets this checkout's ``src`` first on the path: the virtualenv may
    hold an editable install of another checkout (a git worktree shares the
    main checkout's ``.venv``), and the numbers must be this tree's.
    """
    path = [str(ROOT)] if is_reference(side) else [str(ROOT / "src"), str(ROOT)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def run_one(
    python: str, side: str, workload: str, params: Params, *, verify: bool, latency: bool = True
) -> dict[str, Any]:
    """Run one workload for one saver in a subprocess; return its JSON result."""
    name = f"bench-{side}-{workload}-{uuid.uuid4().hex[:8]}"
    create_storage(side, name)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = Path(fh.name)
    cmd = [
        python,
        "-m",
        "benchmarks.runner",
        "--side",
        side,
        "--workload",
        workload,
        "--table",
        name,
        "--bucket",
        name,
        "--params",
        json.dumps(params_to_dict(params)),
        "--latency",
        "model" if latency else "none",
        "--out",
        str(out),
    ]
    if verify:
        cmd.append("--verify")
    env = side_env(side)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=params.budget_s + 900
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{side}/{workload} failed:\n{proc.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)
        drop_storage(name)
    result["process_s"] = time.perf_counter() - t0
    return result


def run_cold_start(python: str, side: str) -> dict[str, Any]:
    """One cold start in a fresh interpreter, against an existing empty table."""
    name = f"bench-{side}-cold-{uuid.uuid4().hex[:8]}"
    create_storage(side, name)
    try:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [python, "-m", "benchmarks.coldstart", "--side", side, "--table", name, "--bucket", name],
            cwd=ROOT,
            env=side_env(side),
            capture_output=True,
            text=True,
            timeout=120,
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"cold start ({side}) failed:\n{proc.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        drop_storage(name)
    result["process_wall_s"] = wall
    return result


def _strip(result: dict[str, Any]) -> dict[str, Any]:
    """Keep per-turn series of the first repetition only (results.json stays small)."""
    out = dict(result)
    if "turns" in out:
        out["turns"] = [{"turn": t["turn"], "seconds": t["seconds"]} for t in out["turns"]]
    return out


def run_single(part: str, *, quick: bool = False) -> dict[str, Any]:
    """Run ``codecs``, ``load``, ``ui`` or ``offload`` (ours only) in a subprocess; return its JSON result."""
    name = f"bench-{part}-{uuid.uuid4().hex[:8]}"
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = Path(fh.name)
    cmd = [sys.executable, "-m", f"benchmarks.{part}", "--out", str(out)]
    if part in ("load", "ui"):
        create_storage("ours", name)
        cmd += ["--table", name, "--bucket", name] + (["--quick"] if quick else [])
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, env=side_env("ours"), capture_output=True, text=True, timeout=1800
        )
        # benchmarks.load exits 1 when a growth is not as expected: still a result to report.
        if not out.exists() or not out.read_text().strip():
            raise RuntimeError(f"{part} failed:\n{proc.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)
        if part in ("load", "ui"):
            drop_storage(name)
    return result


def run_all(
    *,
    workloads: list[str],
    reps: dict[str, int],
    params: Params,
    ref_python: str,
    sides: list[str],
    quick: bool = False,
) -> dict[str, Any]:
    """Run the plan against a fresh moto server and return everything measured."""
    ours = sys.executable
    pythons = {
        "ours": ours,
        "ours-zlib": ours,
        "ours-iothread": ours,
        "ref": ref_python,
        "ref-gz": ref_python,
    }
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    cold: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    single: dict[str, Any] = {}
    started = time.perf_counter()
    load_start = os.getloadavg()
    os.environ.update(AWS_ENV)
    with moto_server() as endpoint:
        os.environ["AWS_ENDPOINT_URL"] = endpoint
        try:
            for workload in [w for w in workloads if w in SINGLE]:
                t0 = time.perf_counter()
                single[workload] = run_single(workload, quick=quick)
                log.info(
                    "%-6s ours   once: %6.1f s (total %5.0f s)",
                    workload,
                    time.perf_counter() - t0,
                    time.perf_counter() - started,
                )
            for workload in [w for w in workloads if w not in SINGLE]:
                runs[workload] = {s: [] for s in sides}
                extra = CODEC_SIDES.get(workload, []) if "ours" in sides else []
                for side in extra:
                    runs[workload][side] = []
                for rep in range(reps.get(workload, 1)):
                    these = [*sides, *extra]
                    order = these if rep % 2 == 0 else list(reversed(these))
                    for side in order:
                        t0 = time.perf_counter()
                        result = run_one(pythons[side], side, workload, params, verify=rep == 0)
                        runs[workload][side].append(result if rep == 0 else _strip(result))
                        log.info(
                            "%-6s %-6s rep %d: %6.1f s (total %5.0f s)",
                            workload,
                            side,
                            rep + 1,
                            time.perf_counter() - t0,
                            time.perf_counter() - started,
                        )
                for side in EXTRA_SIDES.get(workload, []) if "ref" in sides else []:
                    t0 = time.perf_counter()
                    runs[workload][side] = [run_one(pythons[side], side, workload, params, verify=True)]
                    log.info("%-6s %-6s once: %6.1f s", workload, side, time.perf_counter() - t0)
            for _ in range(COLD_STARTS):
                for side in sides:
                    cold[side].append(run_cold_start(pythons[side], side))
            log.info("cold starts done (total %.0f s)", time.perf_counter() - started)
        finally:
            os.environ.pop("AWS_ENDPOINT_URL", None)
    from importlib.metadata import version

    return {
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "total_s": time.perf_counter() - started,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg": {"start": load_start, "end": os.getloadavg()},
        },
        "moto": version("moto"),
        "params": params_to_dict(params),
        "reps": {w: reps.get(w, 1) for w in workloads if w not in SINGLE},
        "ref_requirements": REF_REQUIREMENTS.read_text(),
        "runs": runs,
        "coldstart": cold,
        **single,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line of ``python -m benchmarks``."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    every = [*PLAN, *SINGLE]
    ap.add_argument(
        "--workloads", default=",".join(every), help="comma-separated subset of " + ",".join(every)
    )
    ap.add_argument("--quick", action="store_true", help="the load benchmark at smoke-test sizes")
    ap.add_argument(
        "--reps", type=int, default=None, help="repetitions for every workload (default: per PLAN)"
    )
    ap.add_argument("--report-only", action="store_true", help="regenerate the report from results.json")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--ref-python", default=None, help="interpreter that creates .venv-ref")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    for noisy in ("werkzeug", "botocore", "boto3", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not args.report_only:
        workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
        unknown = set(workloads) - set(every)
        if unknown:
            ap.error(f"unknown workloads: {sorted(unknown)}")
        reps = {w: (args.reps if args.reps is not None else PLAN[w]) for w in workloads if w in PLAN}
        ref_python = str(ensure_ref_venv(args.ref_python))
        results = run_all(
            workloads=workloads,
            reps=reps,
            params=Params(),
            ref_python=ref_python,
            sides=["ours", "ref"],
            quick=args.quick,
        )
        results["command"] = "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:])
        args.results.write_text(json.dumps(results, indent=1, default=str) + "\n")
        log.info("wrote %s", args.results)
    if not args.no_report:
        from benchmarks.report import write_report

        written = write_report(json.loads(args.results.read_text()))
        for path in written:
            log.info("wrote %s", path)
    return 0
