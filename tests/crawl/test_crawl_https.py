"""A crawl of Common Crawl as most users reach it: its listing and WARCs over HTTPS (a real nginx on 127.0.0.1, its
certificate trusted through ``SSL_CERT_FILE`` alone), as ``content-selection crawl`` runs it. It selects what a crawl
of the same WARCs in a folder selects, in both formats; a WARC the server does not have fails alone, named with its
status; an output on the server is refused before anything runs. (Faults and kills: ``test_https_faults.py``.)"""

from __future__ import annotations

import gzip
import os
import shutil
import uuid
from pathlib import Path

import orjson
import pytest

from selection_crawl.job import CrawlJob
from selection_crawl.unit import crawl_warc
from tests.support import DATA
from tests.support.faultkit import run_command, stderr_lines
from tests.support.https_server import HttpsServer

pytestmark = pytest.mark.slow  # real extractors on real pages

CRAWL = DATA / "crawl"
LISTING = "crawl-data/CC-MAIN-2024-18/warc.paths.gz"


@pytest.fixture(scope="module")
def served(https_server: HttpsServer) -> str:
    """The crawl fixture (4 WARCs of real pages in Common Crawl's layout) under a folder of the server: its name."""
    name = f"cc-{uuid.uuid4().hex[:8]}"
    shutil.copytree(CRAWL, https_server.root / name)
    return name


def _crawl(  # noqa: ANN202
    server: HttpsServer, api: dict[str, str], listing: str, base: str, out: Path, tmp_path: Path, *extra: str
):
    args = ["crawl", listing, "--base", base, "-o", str(out), "--workers", "2", "--time-limit", "30", *extra]
    return run_command(args, tmp_path, {"PREFECT_HOME": str(tmp_path / "home"), **server.env, **api}, timeout=900)


def _rows(output: Path, output_format: str) -> list[dict]:
    """The output's articles (rows), each without the WARC's place (``path``, ``file_path``)."""
    if output_format == "dataset":
        import pyarrow.parquet as pq

        return [{k: v for k, v in row.items() if k != "file_path"} for row in pq.read_table(output).to_pylist()]
    return [{k: v for k, v in orjson.loads(line).items() if k != "path"} for line in output.read_bytes().splitlines()]


@pytest.mark.parametrize("output_format", ["batch", "dataset"])
def test_a_crawl_over_https_selects_what_a_crawl_of_the_same_warcs_in_a_folder_selects(
    https_server: HttpsServer, served: str, tmp_path: Path, output_format: str, session_api: dict[str, str]
) -> None:
    out = tmp_path / "over-https"
    listing, base = https_server.url(f"{served}/{LISTING}"), https_server.url(f"{served}/")
    done = _crawl(https_server, session_api, listing, base, out, tmp_path, "--format", output_format)
    assert done.returncode == 0, done.stderr

    reference = CrawlJob.plan(str(CRAWL / LISTING), str(tmp_path / "folder"), str(CRAWL), 30.0, None, output_format)
    for index in reference.todo:
        assert crawl_warc(reference.warc_job(index)).state == "done"
    summary = orjson.loads((out / "crawl.json").read_bytes())
    assert summary["totals"]["done"] == len(reference.warcs) == 4 and summary["totals"]["failed"] == 0
    for warc in reference.warcs:
        rows = _rows(out / warc.relative, output_format)
        assert rows and rows == _rows(tmp_path / "folder" / warc.relative, output_format)
    first = reference.warcs[0].relative
    if output_format == "batch":  # each article names its WARC by the URL it was read from
        key = first.removesuffix(".jsonl") + ".warc.gz"
        assert orjson.loads((out / first).read_bytes().splitlines()[0])["path"] == f"{base}{key}"

    again = _crawl(
        https_server, session_api, listing, base, out, tmp_path, "--format", output_format
    )  # a re-run: nothing to do
    assert again.returncode == 0, again.stderr
    totals = orjson.loads((out / "crawl.json").read_bytes())["totals"]
    assert totals["done_before"] == 4 and totals["done"] == 4
    if output_format == "batch":  # a WARC the server has replaced (a new ETag) is done again, and it alone
        changed = https_server.root / served / (first.removesuffix(".jsonl") + ".warc.gz")
        os.utime(changed, (changed.stat().st_atime, changed.stat().st_mtime + 60))
        third = _crawl(https_server, session_api, listing, base, out, tmp_path)
        assert third.returncode == 0, third.stderr
        summary = orjson.loads((out / "crawl.json").read_bytes())
        assert summary["totals"]["done_before"] == 3 and summary["totals"]["done"] == 4
        (entry,) = [w for w in summary["warcs"] if w["output"] == first]
        assert entry["input_version"]["tag"] == f'ETag:"{int(changed.stat().st_mtime):x}-{changed.stat().st_size:x}"'


def test_a_warc_the_server_does_not_have_fails_alone_named_with_its_status(
    https_server: HttpsServer, served: str, tmp_path: Path, session_api: dict[str, str]
) -> None:
    keys = gzip.decompress((CRAWL / LISTING).read_bytes()).decode().split()
    missing = keys[0].replace("-00000.warc.gz", "-99999.warc.gz")
    listing = https_server.write(f"{served}/missing/warc.paths.gz", gzip.compress(f"{keys[0]}\n{missing}\n".encode()))
    base = https_server.url(f"{served}/")
    done = _crawl(https_server, session_api, listing, base, tmp_path / "out", tmp_path)
    assert done.returncode == 65, done.stderr
    lines = stderr_lines(done.stderr)
    assert f"content-selection: {base}{missing}: the server answered 404 (no such file); check the URL" in lines
    assert lines[-1].startswith("content-selection: error: 1 of 2 WARCs failed")
    summary = orjson.loads((tmp_path / "out" / "crawl.json").read_bytes())
    assert [w["state"] for w in summary["warcs"]] == ["done", "failed"]


def test_an_output_on_a_web_server_is_refused_before_anything_runs(
    https_server: HttpsServer, served: str, tmp_path: Path
) -> None:
    listing, base = https_server.url(f"{served}/{LISTING}"), https_server.url(f"{served}/")
    prefix = https_server.url(f"{served}/selected")
    args = ["crawl", listing, "--base", base, "-o", prefix]
    done = run_command(args, tmp_path, {"PREFECT_HOME": str(tmp_path / "home"), **https_server.env})
    assert done.returncode == 65
    assert stderr_lines(done.stderr) == [
        f"content-selection: error: output {prefix}: a web server's files are only read, never written; give "
        "another output: a path on this machine, or an s3://, gs:// or az:// URL"
    ]
    assert not (https_server.root / served / "selected").exists() and not (tmp_path / "home").exists()
