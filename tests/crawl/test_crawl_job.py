"""A crawl's listing, one WARC done by ``crawl_warc``, and a job resumed by content: real extractors, real WARCs.

No Prefect and no Dask here: the job's core (``selection_crawl``) as a worker and the coordinator use it.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
import shutil
from pathlib import Path

import orjson
import pytest

from selection_crawl.job import CrawlFailedError, CrawlJob
from selection_crawl.listing import CrawlListingError, read_listing
from selection_crawl.unit import WarcOutcome, crawl_warc
from selection_engine import select_file
from selection_engine.language import identify
from selection_extraction import ExtractionSettings, extract_to_file, stop_kept_workers
from tests.support import DATA
from tests.support.object_stores import StoreServer

CRAWL = DATA / "crawl"
PATHS = CRAWL / "crawl-data" / "CC-MAIN-2024-18" / "warc.paths.gz"
KEYS = gzip.decompress(PATHS.read_bytes()).decode().split()


@pytest.fixture(autouse=True, scope="module")
def _stop_workers():
    yield
    stop_kept_workers()


def _bucket(tmp_path: Path, keys: list[str]) -> Path:
    """A copy of the fixture crawl's WARCs ``keys`` (the input is never written: a copy lets a test change one)."""
    root = tmp_path / "bucket"
    for key in keys:
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CRAWL / key, root / key)
    return root


def _listing(tmp_path: Path, lines: list[str], name: str = "warc.paths.gz") -> Path:
    path = tmp_path / name
    text = "".join(f"{line}\n" for line in lines).encode()
    path.write_bytes(gzip.compress(text, mtime=0) if name.endswith(".gz") else text)
    return path


def _run(job: CrawlJob) -> None:
    for index in job.todo:
        job.finish_warc(index, crawl_warc(job.warc_job(index)))
    job.close()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the listing ------------------------------------------------------------------------------


def test_common_crawls_listing_of_relative_keys_needs_a_base(tmp_path: Path) -> None:
    with pytest.raises(CrawlListingError, match=r"line 1 .* is relative and no base was given; give --base URL"):
        read_listing(str(PATHS))
    units = read_listing(str(PATHS), "s3://commoncrawl/")
    assert [u.source for u in units] == [f"s3://commoncrawl/{key}" for key in KEYS]
    assert [u.relative for u in units] == [key.removesuffix(".warc.gz") + ".jsonl" for key in KEYS]


def test_a_plain_listing_of_absolute_lines_blank_lines_skipped(tmp_path: Path) -> None:
    listing = _listing(tmp_path, [str(CRAWL / KEYS[0]), "", f"  {CRAWL / KEYS[1]}  "], "list.txt")
    units = read_listing(str(listing), str(CRAWL))
    assert [u.relative for u in units] == [KEYS[0][: -len(".warc.gz")] + ".jsonl", KEYS[1][:-8] + ".jsonl"]
    outside = read_listing(str(listing))  # not under a base: the path without its root
    assert outside[0].relative == str(CRAWL / KEYS[0]).lstrip("/")[:-8] + ".jsonl"


def test_a_folder_lists_its_warcs_in_name_order(tmp_path: Path) -> None:
    units = read_listing(str(CRAWL))
    assert [u.relative for u in units] == sorted(["bad/not-a-warc.jsonl", *(key[:-8] + ".jsonl" for key in KEYS)])


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["a/x.warc.gz", "a/x.warc"], r"line 2 \('a/x.warc'\) has the same output as line 1"),
        ([], r"lists no WARC"),
    ],
)
def test_listings_refused_in_one_line(tmp_path: Path, lines: list[str], message: str) -> None:
    with pytest.raises(CrawlListingError, match=message):
        read_listing(str(_listing(tmp_path, lines, "l.txt")), "/data")


def test_a_missing_or_broken_listing_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CrawlListingError, match="no such file or folder"):
        read_listing(str(tmp_path / "nope.gz"))
    broken = tmp_path / "warc.paths.gz"
    broken.write_bytes(gzip.compress(b"".join(b"k%d.warc.gz\n" % i for i in range(500)))[:300])
    with pytest.raises(CrawlListingError, match="not a complete gzip file"):
        read_listing(str(broken), "/data")


# --- one WARC, and the job ----------------------------------------------------------------------


@pytest.mark.slow  # real extractors: about 1 s a WARC
def test_a_warcs_output_is_what_extract_then_select_write_for_it_alone(tmp_path: Path) -> None:
    source = str(CRAWL / KEYS[0])
    job = CrawlJob.plan(str(_listing(tmp_path, [KEYS[0]])), str(tmp_path / "out"), str(CRAWL), 30.0)
    (index,) = job.todo
    outcome = crawl_warc(job.warc_job(index))
    assert outcome.state == "done" and outcome.pages == outcome.articles == 6

    extracted = tmp_path / "alone_extracted.jsonl"
    extract_to_file(source, extracted, ExtractionSettings(time_limit_seconds=30.0, workers=1))
    alone = select_file(extracted, tmp_path / "alone_selected.jsonl")
    output = tmp_path / "out" / job.warcs[index].relative
    assert output.read_bytes() == (tmp_path / "alone_selected.jsonl").read_bytes()
    assert outcome.sha256 == alone.output_sha256 == _sha(output)
    record = orjson.loads(output.with_name(output.name[: -len(".jsonl")] + ".extraction.json").read_bytes())
    assert record["extraction"]["input"] == source and record["extraction"]["warc_records"]["not_200"] == 1
    assert (record["crawl"]["sha256"], record["crawl"]["size"]) == (outcome.sha256, output.stat().st_size)


@pytest.mark.slow  # real extractors: about 1 s a WARC
def test_a_rerun_does_only_what_is_left_and_leaves_valid_outputs_untouched(tmp_path: Path) -> None:
    bucket = _bucket(tmp_path, KEYS[:3])
    out = tmp_path / "out"
    first = CrawlJob.plan(str(_listing(tmp_path, KEYS[:2])), str(out), str(bucket), 30.0)
    _run(first)
    outputs = [out / u.relative for u in first.warcs]
    stamps = [(p.read_bytes(), p.stat().st_mtime_ns) for p in outputs]
    summary = orjson.loads((out / "crawl.json").read_bytes())
    assert summary["totals"]["done"] == 2 and [w["state"] for w in summary["warcs"]] == ["done", "done"]

    # the listing grew by one WARC: only it is done
    grown = CrawlJob.plan(str(_listing(tmp_path, KEYS[:3])), str(out), str(bucket), 30.0)
    assert grown.todo == [2] and grown.done_before == 2
    _run(grown)
    assert [(p.read_bytes(), p.stat().st_mtime_ns) for p in outputs] == stamps

    # crawl.json damaged (a line without its counts), then lost: the records alone say what is done
    lines = (out / "crawl.json").read_bytes().split(b"\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(b'{"warc":'))
    lines[first] = lines[first].replace(b'"pages":', b'"pagez":')
    (out / "crawl.json").write_bytes(b"\n".join(lines))
    assert CrawlJob.plan(str(_listing(tmp_path, KEYS[:3])), str(out), str(bucket), 30.0).todo == []
    (out / "crawl.json").unlink()
    assert CrawlJob.plan(str(_listing(tmp_path, KEYS[:3])), str(out), str(bucket), 30.0).todo == []

    # a WARC changed: it alone is done again; other settings: every one is
    changed = bucket / KEYS[1]
    changed.write_bytes(changed.read_bytes())  # same bytes, a new version (modification time)
    os.utime(changed, ns=(1, 1))
    assert CrawlJob.plan(str(_listing(tmp_path, KEYS[:3])), str(out), str(bucket), 30.0).todo == [1]
    assert CrawlJob.plan(str(_listing(tmp_path, KEYS[:3])), str(out), str(bucket), 31.0).todo == [0, 1, 2]

    # an output whose record is missing (its writer died in between) is done again
    record = outputs[0].with_name(outputs[0].name[: -len(".jsonl")] + ".extraction.json")
    record.unlink()
    assert 0 in CrawlJob.plan(str(_listing(tmp_path, KEYS[:3])), str(out), str(bucket), 30.0).todo


@pytest.mark.slow  # real extractors: about 1 s a WARC
def test_bad_warcs_fail_alone_with_their_reason_and_status(tmp_path: Path) -> None:
    listing = _listing(tmp_path, [KEYS[0], "bad/not-a-warc.warc.gz", "crawl-data/missing.warc.gz"], "l.txt")
    job = CrawlJob.plan(str(listing), str(tmp_path / "out"), str(CRAWL), 30.0)
    _run(job)
    states = [(o.state, o.exit_code) for o in map(job.outcome, range(len(job.warcs))) if o is not None]
    assert states == [("done", 0), ("failed", 65), ("failed", 65)]
    reasons = [o.reason for o in map(job.outcome, range(1, len(job.warcs))) if o is not None]
    assert "not-a-warc.warc.gz: not a WARC file" in reasons[0] and "missing.warc.gz: no such file" in reasons[1]
    with pytest.raises(CrawlFailedError, match=r"2 of 3 WARCs failed, each named in .*crawl.json") as failed:
        job.check()
    assert failed.value.exit_code == 65
    lines = (tmp_path / "out" / "crawl.json").read_bytes().splitlines()
    assert orjson.loads(lines[2].rstrip(b","))["state"] == "done"  # one WARC a line, listing order
    assert orjson.loads(b"".join(lines))["totals"]["failed"] == 2
    assert not (tmp_path / "out" / "bad").exists() or not any((tmp_path / "out" / "bad").iterdir())


@pytest.mark.slow
def test_another_version_of_lxml_or_an_extractor_has_every_warc_done_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selection_extraction import extracted as batch

    listing, out = str(_listing(tmp_path, KEYS[:1])), str(tmp_path / "out")
    _run(CrawlJob.plan(listing, out, str(CRAWL), 30.0))
    assert CrawlJob.plan(listing, out, str(CRAWL), 30.0).todo == []
    real = batch.library_version
    for upgraded in ("lxml", "trafilatura"):  # as if this library were upgraded where the coordinator runs
        monkeypatch.setattr(batch, "library_version", lambda name, u=upgraded: "99.0" if name == u else real(name))
        assert CrawlJob.plan(listing, out, str(CRAWL), 30.0).todo == [0], upgraded


@pytest.mark.slow
def test_an_output_the_store_refuses_fails_the_warc_with_its_line(s3_server: StoreServer) -> None:
    job = CrawlJob.plan(str(PATHS), "s3://no-such-bucket-of-the-test/out", str(CRAWL), 30.0)
    outcome = crawl_warc(job.warc_job(0))
    assert (outcome.state, outcome.exit_code) == ("failed", 65)  # a wrong path, as everywhere in the stage
    assert outcome.reason is not None and outcome.reason.startswith("s3://no-such-bucket-of-the-test/out/crawl-data/")
    assert outcome.reason.endswith(".jsonl.tries: the bucket does not exist; check the URL")  # its first write


def test_a_warc_tried_more_than_once_says_so_in_its_line_and_the_totals(tmp_path: Path) -> None:
    job = CrawlJob.plan(str(_listing(tmp_path, KEYS[:2])), str(tmp_path / "out"), str(CRAWL), 30.0)
    dying = dataclasses.replace(WarcOutcome.failed("x.warc.gz: its workers kept dying", 74), tries=4)
    job.finish_warc(0, dying)
    job.finish_warc(1, WarcOutcome.failed("y.warc.gz: not a WARC file", 65))
    job.close()
    summary = orjson.loads((tmp_path / "out" / "crawl.json").read_bytes())
    assert [w.get("tries") for w in summary["warcs"]] == [4, None] and summary["totals"]["retried"] == 3
    assert job.outcome(0) == dying


@pytest.mark.slow  # real extractors: about 1 s a WARC, each WARC done twice (a batch and a dataset)
def test_a_crawl_as_a_dataset_is_read_by_duckdb_over_its_glob_with_each_warcs_selected_text(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    listing = str(_listing(tmp_path, KEYS))
    batches, datasets = tmp_path / "batches", tmp_path / "datasets"
    _run(CrawlJob.plan(listing, str(batches), str(CRAWL), 30.0))
    job = CrawlJob.plan(listing, str(datasets), str(CRAWL), 30.0, output_format="dataset")
    _run(job)

    assert [u.relative for u in job.warcs] == [key.removesuffix(".warc.gz") + ".parquet" for key in KEYS]
    summary = orjson.loads((datasets / "crawl.json").read_bytes())
    assert summary["format"] == "dataset" and summary["totals"]["done"] == len(KEYS)
    assert (
        summary["settings_fingerprint"] != orjson.loads((batches / "crawl.json").read_bytes())["settings_fingerprint"]
    )

    glob = str(datasets / "**" / "*.parquet")
    rows = duckdb.sql(f"SELECT * FROM read_parquet('{glob}') ORDER BY file_path, id").fetchall()
    columns = [c[0] for c in duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{glob}')").fetchall()]
    rows_of = {(r["file_path"], r["id"]): r for r in (dict(zip(columns, row)) for row in rows)}
    expected = 0
    for warc in job.warcs:
        record = orjson.loads((datasets / warc.relative).with_suffix(".dataset.extraction.json").read_bytes())
        assert record["crawl"]["format"] == "dataset"
        lines = (batches / warc.relative).with_suffix(".jsonl").read_bytes().splitlines()
        for article in map(orjson.loads, lines):
            row = rows_of[(warc.source, article["id"])]
            chosen = article["selected_extractor"]
            assert row["text"] == article[chosen]["text" if chosen != "readability" else "cleaned_text"]
            assert (row["url"], row["date"], row["dump"]) == (article["url"], article["warc_date"], "CC-MAIN-2024-18")
            assert (row["language"], row["language_score"]) == identify(row["text"])  # in the WARC's process
            expected += 1
    assert len(rows) == expected == summary["totals"]["pages"] == 24

    # the same format again redoes nothing; the other format is other outputs and other records, every WARC done...
    assert CrawlJob.plan(listing, str(datasets), str(CRAWL), 30.0, output_format="dataset").todo == []
    _run(CrawlJob.plan(listing, str(datasets), str(CRAWL), 30.0))
    for output_format in ("batch", "dataset"):  # ...and each format's outputs stay done beside the other's
        assert CrawlJob.plan(listing, str(datasets), str(CRAWL), 30.0, output_format=output_format).todo == []
    # a record of the other format in place of a dataset's record is not trusted (its fingerprint and size differ)
    first = datasets / job.warcs[0].relative
    other = (batches / job.warcs[0].relative).with_suffix(".extraction.json")
    first.with_suffix(".dataset.extraction.json").write_bytes(other.read_bytes())
    (datasets / "crawl.json").unlink()  # its copy of the record would be read first
    assert CrawlJob.plan(listing, str(datasets), str(CRAWL), 30.0, output_format="dataset").todo == [0]


def test_a_dataset_crawl_without_pyarrow_is_refused_before_any_warc(tmp_path: Path, mocker) -> None:
    from selection_core.errors import MissingExtraError

    mocker.patch.dict("sys.modules", {"pyarrow": None, "pyarrow.parquet": None})
    with pytest.raises(MissingExtraError, match=r"the 'dataset' extra"):
        CrawlJob.plan(
            str(_listing(tmp_path, KEYS[:1])), str(tmp_path / "out"), str(CRAWL), 30.0, output_format="dataset"
        )
    assert not (tmp_path / "out").exists()
