"""Batches in object storage against the same files on a disk, each figure a ratio measured in one run.

1. ``select`` on a batch in an S3 server against the same file on disk: the time ratio, the peak memory of each
   (and against the input's size), and whether the outputs are the same bytes.
2. ``run --task-runner dask`` on a batch in the store with 1 and with 2 Dask workers that share no directory
   (each chunk read from the store by its worker, its bytes sent back): the same bytes as ``select`` on a disk,
   and the net speed-up of 2 workers against 1 (each net of the same command on a 10-article batch).

3. ``pipeline`` on a WARC object of ``--warc-mb`` MB (built as ``benchmarks/warc.py`` builds them) against the
   same WARC on disk: pages per second and peak memory of each, and whether the batches are the same bytes (but for
   the input's name, which they record).

The S3 server is moto's standalone server (the one the tests use), in its own process, so that its memory is
not counted in the stage's. moto reads a whole object to answer a ranged GET, so the time ratio of (1) is an
upper bound of what a real store costs; the peak memory of the stage does not depend on it.

    python benchmarks/object_storage.py --batch /tmp/b/b100k_extracted.json --dask-batch /tmp/b/b10860_extracted.json
    python benchmarks/object_storage.py --parts pipeline --warc-mb 200

Without ``--batch`` (``--dask-batch``), a batch of ``--articles`` (``--dask-articles``) distinct articles is built.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _batches import OUT, ROOT, build_distinct, dask_cluster, machine, prefect_env  # noqa: E402
from _child import run_tree  # noqa: E402
from overhead import CLI  # noqa: E402

BUCKET = "bench"
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


@contextlib.contextmanager
def moto_server(scratch: Path) -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 in its own process; yields its endpoint."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = open(scratch / "moto.log", "wb")  # noqa: SIM115
    env = {**os.environ, "TMPDIR": str(scratch)}  # its large objects are spooled to files there
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"moto's server did not start: see {scratch / 'moto.log'}")
            time.sleep(0.2)
        yield endpoint
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def sha256_of(opener: Any) -> str:
    digest = hashlib.sha256()
    with opener() as fh:
        for block in iter(lambda: fh.read(8 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def measured(label: str, command: list[str], env: dict[str, str]) -> dict[str, Any]:
    print(f"... {label}", file=sys.stderr, flush=True)
    row = run_tree(command, env, ROOT)
    if row["status"] != 0:
        raise SystemExit(f"{label} failed ({row['status']}): {row['stderr_tail']}")
    return {"label": label, **{k: row[k] for k in ("seconds", "tree_peak_rss_mib", "command_peak_rss_mib")}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=Path, help="the batch of part 1 (default: built)")
    parser.add_argument("--articles", type=int, default=20000, help="articles of a built batch for part 1")
    parser.add_argument("--dask-batch", type=Path, help="the batch of part 2 (default: built)")
    parser.add_argument("--dask-articles", type=int, default=4000, help="articles of a built batch for part 2")
    parser.add_argument("--warc-mb", type=int, default=200, help="size of the WARC of part 3, in MB")
    parser.add_argument("--parts", default="select,dask,pipeline", help="which parts to run (default: all)")
    parser.add_argument("--out", type=Path, default=OUT / "object_storage.json")
    args = parser.parse_args(argv)

    import s3fs

    result: dict[str, Any] = {"machine": machine()}
    with tempfile.TemporaryDirectory(prefix="cs-bench-s3-") as tmp, moto_server(Path(tmp)) as endpoint:
        scratch = Path(tmp)
        env = {**prefect_env(scratch / "home"), **S3_ENV, "AWS_ENDPOINT_URL": endpoint}
        os.environ.update(S3_ENV, AWS_ENDPOINT_URL=endpoint)
        fs = s3fs.S3FileSystem()
        fs.mkdir(BUCKET)

        def batch_file(given: Path | None, n: int, name: str) -> Path:
            if given is not None:
                return given
            path = scratch / name
            build_distinct(path, n)
            return path

        parts = set(args.parts.split(","))
        if "pipeline" in parts:
            result["pipeline"] = pipeline_part(fs, scratch, env, args.warc_mb)
        if "select" not in parts:
            return finish(result, args.out)

        # 1. select: the store against the disk
        batch = batch_file(args.batch, args.articles, "big_extracted.json")
        url = f"s3://{BUCKET}/{batch.name}"
        print(f"... uploading {batch.stat().st_size} bytes", file=sys.stderr, flush=True)
        fs.put_file(str(batch), url)
        disk = measured("select on disk", [*CLI, "select", str(batch), "-o", str(scratch / "disk.json")], env)
        store = measured("select in S3", [*CLI, "select", url, "-o", f"s3://{BUCKET}/selected.json"], env)
        same = sha256_of(lambda: open(scratch / "disk.json", "rb")) == sha256_of(
            lambda: fs.open(f"{BUCKET}/selected.json", "rb", block_size=8 << 20)
        )
        size_mib = batch.stat().st_size / 2**20
        result["select"] = {
            "input_bytes": batch.stat().st_size,
            "disk": disk,
            "s3": store,
            "time_ratio_s3_to_disk": round(store["seconds"] / disk["seconds"], 2),
            "peak_to_input_s3": round(store["tree_peak_rss_mib"] / size_mib, 3),
            "peak_to_input_disk": round(disk["tree_peak_rss_mib"] / size_mib, 3),
            "same_bytes": same,
        }
        (scratch / "disk.json").unlink()
        fs.rm(f"{BUCKET}/selected.json")
        fs.rm(url)

        if "dask" not in parts:
            return finish(result, args.out)

        # 2. Dask workers sharing no directory, the chunks read and written through the store
        dask_batch = batch_file(args.dask_batch, args.dask_articles, "dask_extracted.json")
        tiny = scratch / "tiny_extracted.json"
        build_distinct(tiny, 10)
        for local in (dask_batch, tiny):
            fs.put_file(str(local), f"s3://{BUCKET}/{local.name}")
        reference = scratch / "reference.json"
        measured("select on disk (reference)", [*CLI, "select", str(dask_batch), "-o", str(reference)], env)
        runs: dict[str, Any] = {}
        for workers in (1, 2):
            (scratch / f"cluster{workers}").mkdir()
            with dask_cluster(scratch / f"cluster{workers}", workers) as address:
                warm_up = [*CLI, "run", f"s3://{BUCKET}/{tiny.name}", "-o", f"s3://{BUCKET}/warm.json"]
                measured(f"warm-up on {workers} Dask worker(s)", [*warm_up, "--dask-address", address], env)
                for local in (tiny, dask_batch):
                    out = f"s3://{BUCKET}/out-{workers}-{local.name}"
                    command = [*CLI, "run", f"s3://{BUCKET}/{local.name}", "-o", out]
                    command += ["--task-runner", "dask", "--dask-address", address]
                    label = f"run on {workers} Dask worker(s): {local.name}"
                    runs[f"{workers}:{local.name}"] = measured(label, command, env)
            runs[f"{workers}:same_bytes"] = sha256_of(lambda: open(reference, "rb")) == sha256_of(
                lambda w=workers: fs.open(f"{BUCKET}/out-{w}-{dask_batch.name}", "rb", block_size=8 << 20)
            )
        net = {w: runs[f"{w}:{dask_batch.name}"]["seconds"] - runs[f"{w}:{tiny.name}"]["seconds"] for w in (1, 2)}
        result["dask"] = {
            "input_bytes": dask_batch.stat().st_size,
            "runs": runs,
            "net_seconds": {str(w): round(s, 2) for w, s in net.items()},
            "net_speed_up_2_to_1": round(net[1] / net[2], 2),
        }
    return finish(result, args.out)


def pipeline_part(fs: Any, scratch: Path, env: dict[str, str], warc_mb: int) -> dict[str, Any]:
    """``pipeline`` on a WARC object against the same WARC on disk."""
    from warc import MB, build_warc, load_pages

    warc = scratch / "crawl.warc.gz"
    built = build_warc(warc, warc_mb * MB, load_pages())
    url = f"s3://{BUCKET}/crawl.warc.gz"
    fs.put_file(str(warc), url)
    rows = {}
    for where, pages, extracted, selected in (
        ("disk", str(warc), str(scratch / "crawl_extracted.json"), str(scratch / "crawl_selected.json")),
        ("s3", url, f"s3://{BUCKET}/crawl_extracted.json", f"s3://{BUCKET}/crawl_selected.json"),
    ):
        command = [*CLI, "pipeline", pages, "--extracted", extracted, "-o", selected]
        rows[where] = measured(f"pipeline on {where}", command, env)
        rows[where]["pages_per_second"] = round(built["pages"] / rows[where]["seconds"], 2)
    disk_bytes = (scratch / "crawl_extracted.json").read_bytes().replace(str(warc).encode(), url.encode())
    same = hashlib.sha256(disk_bytes).hexdigest() == sha256_of(
        lambda: fs.open(f"{BUCKET}/crawl_extracted.json", "rb", block_size=8 << 20)
    )
    return {
        "warc_bytes": built["bytes"],
        "pages": built["pages"],
        **rows,
        "pages_per_second_ratio_s3_to_disk": round(
            rows["s3"]["pages_per_second"] / rows["disk"]["pages_per_second"], 2
        ),
        "same_extracted_bytes": same,
    }


def finish(result: dict[str, Any], out: Path) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    if "select" in result:
        s = result["select"]
        print(f"select, {s['input_bytes']} bytes: S3 {s['s3']['seconds']:.1f} s, disk {s['disk']['seconds']:.1f} s "
              f"(x{s['time_ratio_s3_to_disk']}); peak {s['s3']['tree_peak_rss_mib']:.0f} MiB in S3 "
              f"({s['peak_to_input_s3']}x of the input), {s['disk']['tree_peak_rss_mib']:.0f} MiB on disk; "
              f"same bytes: {s['same_bytes']}")  # fmt: skip
    if "dask" in result:
        d = result["dask"]
        print(f"dask, {d['input_bytes']} bytes: net {d['net_seconds']['1']} s on 1 worker, {d['net_seconds']['2']} s "
              f"on 2: speed-up x{d['net_speed_up_2_to_1']}; same bytes: "
              f"{d['runs']['1:same_bytes']} and {d['runs']['2:same_bytes']}")  # fmt: skip
    if "pipeline" in result:
        w = result["pipeline"]
        print(f"pipeline, {w['warc_bytes']} bytes, {w['pages']} pages: S3 {w['s3']['pages_per_second']} pages/s, "
              f"disk {w['disk']['pages_per_second']} (x{w['pages_per_second_ratio_s3_to_disk']}); peak "
              f"{w['s3']['tree_peak_rss_mib']:.0f} MiB in S3, {w['disk']['tree_peak_rss_mib']:.0f} MiB on disk; "
              f"same batch: {w['same_extracted_bytes']}")  # fmt: skip
    print(f"(written to {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
