"""The three object stores side by side, and a disk: ``select`` of the same batch and ``extract`` of the same WARC in
each, with the seconds and the peak memory of each command, and whether its output has the bytes of the disk's.

Each store is its emulator on loopback, in its own process (moto's S3 server, fake-gcs-server, Azurite), so its
memory is not the command's. The emulators are not the clouds: moto reads a whole object for each ranged GET, so
the seconds in a store are an upper bound; the peak memory of the command does not depend on the server.

    python benchmarks/stores.py --articles 5000 --warc-mb 10

Azurite must be installed (``npm install --prefix .ci/node azurite``, as ``.ci/run`` does).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _batches import OUT, build_distinct, machine, prefect_env  # noqa: E402
from object_storage import S3_ENV, measured, moto_server  # noqa: E402
from overhead import CLI  # noqa: E402

from tests.support.object_stores import AzureServer, GCSServer, StoreServer, environment  # noqa: E402
from tests.support.prefect_fixtures import free_port  # noqa: E402

BUCKET = "bench"


@contextlib.contextmanager
def stores(scratch: Path) -> Iterator[dict[str, tuple[dict[str, str], Any]]]:
    """Each store's server started: its environment and a client, by protocol."""
    with moto_server(scratch) as endpoint:
        import s3fs

        running: dict[str, tuple[dict[str, str], Any]] = {
            "s3": ({**S3_ENV, "AWS_ENDPOINT_URL": endpoint}, s3fs.S3FileSystem(endpoint_url=endpoint, **_s3_keys()))
        }
        servers: list[StoreServer] = []
        try:
            for kind in (GCSServer, AzureServer):
                folder = scratch / kind.protocol
                folder.mkdir()
                server = kind(free_port(), folder)
                server.start()
                servers.append(server)
                running[kind.protocol] = (environment(server), server.fs())
            yield running
        finally:
            for server in servers:
                server.stop()


def _s3_keys() -> dict[str, str]:
    return {"key": S3_ENV["AWS_ACCESS_KEY_ID"], "secret": S3_ENV["AWS_SECRET_ACCESS_KEY"]}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=5000, help="articles of the batch")
    parser.add_argument("--warc-mb", type=int, default=10, help="size of the WARC, in MB")
    parser.add_argument("--out", type=Path, default=OUT / "stores.json")
    args = parser.parse_args(argv)
    from warc import MB, build_warc, load_pages

    result: dict[str, Any] = {"machine": machine()}
    with tempfile.TemporaryDirectory(prefix="cs-bench-stores-") as tmp, stores(Path(tmp)) as running:
        scratch = Path(tmp)
        batch = scratch / "batch_extracted.json"
        build_distinct(batch, args.articles)
        warc = scratch / "crawl.warc.gz"
        built = build_warc(warc, args.warc_mb * MB, load_pages())
        result.update(batch_bytes=batch.stat().st_size, warc_bytes=built["bytes"], pages=built["pages"])
        base_env = prefect_env(scratch / "home")

        disk_select = measured("select on disk", [*CLI, "select", str(batch), "-o", str(scratch / "s.json")], base_env)
        command = [*CLI, "extract", str(warc), "-o", str(scratch / "e.json"), "--workers", "1"]
        disk_extract = measured("extract on disk", command, base_env)
        selected, extracted = (scratch / "s.json").read_bytes(), (scratch / "e.json").read_bytes()
        rows: dict[str, Any] = {"disk": {"select": disk_select, "extract": disk_extract}}

        for protocol, (env, fs) in running.items():
            env = {**base_env, **env}
            fs.mkdir(BUCKET)
            for local in (batch, warc):
                fs.put_file(str(local), f"{BUCKET}/{local.name}")
            url = f"{protocol}://{BUCKET}"
            command = [*CLI, "select", f"{url}/{batch.name}", "-o", f"{url}/s.json"]
            select = measured(f"select in {protocol}", command, env)
            command = [*CLI, "extract", f"{url}/{warc.name}", "-o", f"{url}/e.json", "--workers", "1"]
            extract = measured(f"extract in {protocol}", command, env)
            select["same_bytes"] = digest(fs.cat_file(f"{BUCKET}/s.json")) == digest(selected)
            # the same batch but for the input's name, which it records
            named = extracted.replace(str(warc).encode(), f"{url}/{warc.name}".encode())
            extract["same_bytes"] = digest(fs.cat_file(f"{BUCKET}/e.json")) == digest(named)
            rows[protocol] = {"select": select, "extract": extract}
        result["rows"] = rows

    print(f"batch {result['batch_bytes']} bytes ({args.articles} articles); WARC {result['warc_bytes']} bytes "
          f"({result['pages']} pages)")  # fmt: skip
    print(f"{'where':6} {'select s':>9} {'peak MiB':>9} {'same':>5}   {'extract s':>9} {'peak MiB':>9} {'same':>5}")
    for where, row in rows.items():
        s, e = row["select"], row["extract"]
        print(f"{where:6} {s['seconds']:9.1f} {s['tree_peak_rss_mib']:9.0f} {str(s.get('same_bytes', '-')):>5}   "
              f"{e['seconds']:9.1f} {e['tree_peak_rss_mib']:9.0f} {str(e.get('same_bytes', '-')):>5}")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"(written to {args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
