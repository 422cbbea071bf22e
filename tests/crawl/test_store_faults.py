"""A crawl from and to S3 (moto's server) through a proxy that answers a few percent of requests ``503 SlowDown``
or cuts them, and answers nothing but ``503`` for a whole minute in the middle of the crawl: every store call of the
crawl is tried again (backoff and jitter, bounded), and the outputs are a clean run's, byte for byte. The crawl's
lease outlives an outage just shorter than its bound, in the worst phase, and is lost in one just longer."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import orjson
import pytest

from selection_crawl.commits import COMMIT_PAGES_VARIABLE
from selection_crawl.job import CrawlJob
from selection_crawl.lease import RENEW_DEADLINE_SECONDS, RENEW_RETRY_SECONDS, CrawlLease, CrawlLeaseLostError
from selection_crawl.unit import crawl_warc
from tests.support.crawls import write_crawl
from tests.support.faultkit import start_command
from tests.support.faultproxy import FaultProxy
from tests.support.object_stores import StoreServer, environment

pytestmark = pytest.mark.slow

CRAWL = "crawl-data/CC-MAIN-2024-18"
OUTAGE_SECONDS = 60.0


def test_a_crawl_through_a_throttling_store_and_a_minute_of_outage_writes_a_clean_runs_bytes_and_keeps_its_lease(
    s3_server: StoreServer, bucket: str, tmp_path: Path, session_api: dict[str, str]
) -> None:
    folder = tmp_path / "crawl"
    keys = write_crawl(folder, 4, 25)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        s3_server.put(s3_server.url(bucket, path.relative_to(folder).as_posix()), path.read_bytes())
    listing, base = s3_server.url(bucket, f"{CRAWL}/warc.paths.gz"), s3_server.url(bucket, "")
    reference = CrawlJob.plan(listing, s3_server.url(bucket, "reference"), base, 30.0)
    for index in reference.todo:  # straight to the server: no fault
        assert crawl_warc(reference.warc_job(index)).state == "done"
    fs = s3_server.fs()

    with FaultProxy(s3_server.endpoint, rate=0.03, seed=47) as proxy:
        env = environment(s3_server) | session_api
        env |= {"AWS_ENDPOINT_URL": proxy.endpoint, "PREFECT_HOME": str(tmp_path / "home"), COMMIT_PAGES_VARIABLE: "5"}
        args = ["crawl", listing, "--base", base, "-o", s3_server.url(bucket, "selected"), "--workers", "2"]
        log = tmp_path / "crawl.log"
        command = start_command(args, tmp_path, env, log)
        outage = threading.Timer(0, lambda: None)
        holders: list[threading.Thread] = []
        leases: dict[str, str] = {}
        try:
            deadline = time.monotonic() + 600
            while not [
                k for k in fs.find(f"{bucket}/selected") if k.endswith(".commit")
            ]:  # the middle of the crawl: a WARC has a commit
                assert command.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            proxy.outage.set()
            outage = threading.Timer(OUTAGE_SECONDS, proxy.outage.clear)
            outage.start()
            for name in LEASE_OUTAGES:  # meanwhile, leases of their own through outages at the bound
                holders.append(threading.Thread(target=_hold_through_an_outage, args=(s3_server, bucket, name, leases)))
                holders[-1].start()
            assert command.wait(timeout=900) == 0, log.read_text()
        finally:
            outage.cancel()
            if command.poll() is None:
                command.kill()
            for holder in holders:
                holder.join()
    print(f"\nthrough the fault proxy: {proxy.counts}; leases through outages of {LEASE_OUTAGES}: {leases}")
    assert LEASE_OUTAGES["under"] >= OUTAGE_SECONDS  # a minute without the store costs no lease
    assert leases["under"] == "held"
    assert leases["over"].startswith("lost after ") and "has not been renewed for" in leases["over"]
    assert float(leases["over"].split()[2]) < LEASE_OUTAGES["over"]  # found out while the store was still down
    assert proxy.counts["slowdown"] and proxy.counts["cut"] and proxy.counts["outage"]
    fs = s3_server.fs()  # not the one that listed while the crawl ran: its listings are cached
    for warc in reference.warcs:
        assert fs.cat_file(f"{bucket}/selected/{warc.relative}") == fs.cat_file(f"{bucket}/reference/{warc.relative}")
    summary = orjson.loads(fs.cat_file(f"{bucket}/selected/crawl.json"))
    assert summary["totals"]["done"] == len(keys) and summary["totals"]["failed"] == 0
    assert s3_server.uploads(bucket) == []
    assert not [k for k in fs.find(f"{bucket}/selected") if k.endswith(".commit")] and not [
        k for k in fs.find(f"{bucket}/selected") if k.endswith(".tries")
    ]


#: The longest pause of S3's client (botocore's backoff, s3fs's) between two of its own tries of one call: once the
#: store answers again, a renewal under way succeeds within it (docs/scaling.md).
S3_CLIENT_PAUSE_SECONDS = 20.0

#: Outages of a lease's store, each starting as the lease is written (the worst phase: its next renewal is a period
#: away): just shorter than the bound the constants give, and just longer than the deadline.
LEASE_OUTAGES = {
    "under": RENEW_DEADLINE_SECONDS - max(RENEW_RETRY_SECONDS, S3_CLIENT_PAUSE_SECONDS) - 5.0,
    "over": RENEW_DEADLINE_SECONDS + 5.0,
}


def _hold_through_an_outage(server: StoreServer, bucket: str, name: str, found: dict[str, str]) -> None:
    """A crawl's lease behind a proxy of its own, its store down for ``LEASE_OUTAGES[name]`` from the moment it is
    written, checked every 0.5 s until the renewals that follow the outage are due: what became of it in ``found``."""
    with FaultProxy(server.endpoint) as proxy:
        lease = CrawlLease.acquire(server.url(bucket, name), {**server.options, "endpoint_url": proxy.endpoint})
        proxy.outage.set()
        lease.start_renewing()
        started = time.monotonic()
        try:
            while time.monotonic() - started < RENEW_DEADLINE_SECONDS + 5.0:
                if time.monotonic() - started >= LEASE_OUTAGES[name]:
                    proxy.outage.clear()
                lease.check()
                time.sleep(0.5)
            found[name] = "held" if lease.held_at() is not None and proxy.counts["outage"] else "not held"
        except CrawlLeaseLostError as exc:
            found[name] = f"lost after {time.monotonic() - started:.0f} s: {exc}"
        finally:
            proxy.outage.clear()
            lease.release()
