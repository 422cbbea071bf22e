"""A crawl of Common Crawl over HTTPS (issue 56) through the faults of a real network: nginx over TLS on 127.0.0.1
(``tests/support/https_server.py``), read through a TLS fault proxy that answers 2% of requests ``503 SlowDown`` or
cuts their body in its middle, and is down for 30 s in the middle of a WARC: the crawl ends well and writes a clean
run's bytes. A worker killed in the middle of a WARC leaves its commits; the WARC taken up again is read from the
last commit's offset with a Range request (the access log counts the bytes), not from its start, and its output is a
clean run's, byte for byte.

Every client runs in a subprocess whose environment trusts the test's CA (``SSL_CERT_FILE``, read by aiohttp when it
is imported), as a crawl's processes do."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from selection_crawl.commits import COMMIT_PAGES_VARIABLE
from selection_extraction.warc import SNIFF_BYTES
from tests.support import ROOT
from tests.support.crawls import write_crawl
from tests.support.faultkit import child_env, start_command
from tests.support.faultproxy import FaultProxy
from tests.support.https_server import HttpsServer

pytestmark = pytest.mark.slow  # real extractors on real pages, crawls in processes of their own

CRAWL = "crawl-data/CC-MAIN-2024-18"
LISTING = f"{CRAWL}/warc.paths.gz"
EVERY = 5  # pages between two commits

#: The outage of the server, from the crawl's first commit (the middle of a WARC).
OUTAGE_SECONDS = 30.0

#: The outage of the server as the crawl starts (before the flow, as the command first reads the listing).
START_OUTAGE_SECONDS = 5.0

#: The fault proxy's seed. Its draws (2% of requests faulty) cut the body of the flow's GET of the listing (the
#: sixth request, so that one cut stream is certain), then answer two of the next thirty requests 503 and cut two
#: more mid-body, wherever those land among the two workers' HEADs and GETs of their WARCs.
FAULT_SEED = 138709


def _files(out: Path) -> dict[str, bytes]:
    """The outputs under ``out`` (each WARC's batch and its extraction record) by their path relative to it."""
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and p.name.endswith((".jsonl", ".extraction.json"))
    }


def _leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.rglob("*") if p.name.endswith((".commit", ".tries")))


def _crawl_env(server: HttpsServer, home: Path, api: dict[str, str]) -> dict[str, str]:
    """A crawl command's environment: trusting the server's CA, a Prefect home of its own, the session's API, a
    commit every 5 pages."""
    return server.env | {"PREFECT_HOME": str(home), COMMIT_PAGES_VARIABLE: str(EVERY), **api}


def _crawl_command(listing: str, base: str, out: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return start_command(["crawl", listing, "--base", base, "-o", str(out), "--workers", "2"], out.parent, env, log)


def _an_outage(proxy: FaultProxy, seen: dict[str, float]) -> None:
    """The server down for :data:`OUTAGE_SECONDS`; longer (at most 2 minutes, well within the crawl's patience) only
    while no request has met it yet, so that a slow machine's crawl cannot sleep through it."""
    started = time.monotonic()
    proxy.outage.set()
    while time.monotonic() - started < OUTAGE_SECONDS or (
        not proxy.counts["outage"] and time.monotonic() - started < 120
    ):
        time.sleep(0.2)
    proxy.outage.clear()
    seen["seconds"] = time.monotonic() - started


def test_a_crawl_over_https_through_faults_and_an_outage_writes_a_clean_runs_bytes(
    https_server: HttpsServer, tmp_path: Path, session_api: dict[str, str]
) -> None:
    name = f"faults-{uuid.uuid4().hex[:8]}"
    keys = write_crawl(https_server.root / name, 4, 25)
    with FaultProxy(
        https_server.plain_endpoint,
        rate=0.02,
        seed=FAULT_SEED,
        faults=("slowdown", "midbody"),
        tls=https_server.tls,
        outage_cuts_streams=True,
    ) as proxy:
        # the same URLs for both runs (the articles' ``path`` is the WARC's URL): the faulty run first, then the
        # clean one through the same proxy with no fault
        listing, base = proxy.url(f"{name}/{LISTING}"), proxy.url(f"{name}/")
        faulty, clean = tmp_path / "faulty", tmp_path / "clean"
        log = tmp_path / "faulty.log"
        proxy.outage.set()  # down as the crawl starts: the command's first look at the listing waits for it too
        threading.Timer(START_OUTAGE_SECONDS, proxy.outage.clear).start()
        command = _crawl_command(listing, base, faulty, _crawl_env(https_server, tmp_path / "home", session_api), log)
        outage: dict[str, float] = {}
        down = threading.Thread(target=_an_outage, args=(proxy, outage), daemon=True)
        try:
            deadline = time.monotonic() + 900
            while not list(faulty.rglob("*.commit")) or proxy.outage.is_set():  # the middle of a WARC: a commit
                assert command.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            down.start()
            assert command.wait(timeout=1200) == 0, log.read_text()
        finally:
            if command.poll() is None:
                command.kill()
                command.wait()
            down.join()
        faults = dict(proxy.counts)
        cut = [(r["method"], r["path"].rsplit("/", 1)[-1], r["range"], r["body_bytes"])
               for r in proxy.requests if r["fate"] == "midbody"]  # fmt: skip
        refused = [(r["method"], r["path"].rsplit("/", 1)[-1]) for r in proxy.requests if r["fate"] == "slowdown"]
        hit = {r["path"] for r in proxy.requests if r["fate"] in ("slowdown", "midbody")}
        trail = [(r["path"].rsplit("/", 1)[-1][-13:], r["range"], r["fate"], r["body_bytes"])
                 for r in proxy.requests if r["path"] in hit and r["method"] == "GET"]  # fmt: skip

        proxy.rate = 0.0
        log = tmp_path / "clean.log"
        command = _crawl_command(listing, base, clean, _crawl_env(https_server, tmp_path / "home", session_api), log)
        try:
            assert command.wait(timeout=1200) == 0, log.read_text()
        finally:
            if command.poll() is None:
                command.kill()
                command.wait()
        clean_counts = {kind: proxy.counts[kind] - faults[kind] for kind in faults}
    print(
        f"\nthrough the fault proxy: {faults} ({sum(faults.values())} requests); an outage of {outage['seconds']:.0f} s"
        f"\n  cut mid-body: {cut}\n  answered 503: {refused}\n  the GETs of the files that met them: {trail}"
        f"\nthe clean run's requests: {clean_counts}"
    )
    assert faults["slowdown"] and faults["midbody"] and faults["outage"] >= 2  # every kind of fault was met
    assert clean_counts["forwarded"] and sum(clean_counts.values()) == clean_counts["forwarded"]  # no fault at all
    outputs = _files(faulty)
    assert len(outputs) == 2 * len(keys)  # each WARC's batch and extraction record
    assert outputs == _files(clean)  # byte for byte
    for out in (faulty, clean):
        summary = orjson.loads((out / "crawl.json").read_bytes())
        assert summary["totals"]["done"] == len(keys) and summary["totals"]["failed"] == 0, summary["totals"]
        assert _leftovers(out) == []  # no commit, no count of tries left


#: One WARC done by ``crawl_warc`` in a process of its own (the job planned from the listing over HTTPS); its
#: outcome printed as JSON.
WARC_SCRIPT = """
import json, sys
from selection_crawl.job import CrawlJob
from selection_crawl.unit import crawl_warc
if __name__ == "__main__":
    listing, base, out = sys.argv[1:]
    outcome = crawl_warc(CrawlJob.plan(listing, out, base, 30.0).warc_job(0))
    print(json.dumps({"state": outcome.state, "reason": outcome.reason, "from_commits": outcome.from_commits}))
"""

PAGES = 40


def _gets(entries: list[dict[str, Any]], path: str) -> list[tuple[int, int]]:
    """The GETs of ``path`` among the access log's ``entries``: (the Range's start, the bytes of body sent)."""
    found = []
    for entry in entries:
        if entry["method"] == "GET" and entry["uri"] == path:
            asked = entry["range"] or "bytes=0-"
            found.append((int(asked.removeprefix("bytes=").split("-")[0]), entry["body_bytes_sent"]))
    return found


def _settled(server: HttpsServer, under: str) -> list[dict[str, Any]]:
    """The access log's entries under ``under`` once no new one has come for a second (nginx writes a request's
    line when it ends: a killed client's when its connection is closed)."""
    entries = server.requests(under)
    while True:
        time.sleep(1.0)
        now = server.requests(under)
        if len(now) == len(entries):
            return now
        entries = now


def _run_warc(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", WARC_SCRIPT, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    outcome: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return outcome


def test_a_worker_killed_mid_warc_is_taken_up_from_its_last_commit_with_a_range_request(
    https_server: HttpsServer, tmp_path: Path
) -> None:
    name = f"kill-{uuid.uuid4().hex[:8]}"
    (key,) = write_crawl(https_server.root / name, 1, PAGES)
    warc = f"/{name}/{key}"
    size = (https_server.root / name / key).stat().st_size
    listing, base = https_server.url(f"{name}/{LISTING}"), https_server.url(f"{name}/")
    env = child_env() | https_server.env | {COMMIT_PAGES_VARIABLE: str(EVERY)}

    clean_out, out = tmp_path / "clean", tmp_path / "out"
    assert _run_warc([listing, base, str(clean_out)], env)["state"] == "done"  # straight to nginx, no fault
    clean_entries = _settled(https_server, name)
    clean_gets = _gets(clean_entries, warc)

    worker = subprocess.Popen([sys.executable, "-c", WARC_SCRIPT, listing, base, str(out)], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        while len(list(out.rglob("*.commit"))) < 2:  # killed once two pieces are committed
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    commits = sorted(out.rglob("*.commit"))
    assert len(commits) >= 2 and _files(out) == {}  # no output yet
    with open(commits[-1], "rb") as last:
        head = orjson.loads(last.readline())
    offset, committed = head["cursor"]["offset"], head["articles"]
    assert isinstance(offset, int) and 0 < offset < size
    killed_entries = _settled(https_server, name)
    killed_gets = _gets(killed_entries[len(clean_entries) :], warc)

    outcome = _run_warc([listing, base, str(out)], env)  # taken up again
    resumed = _settled(https_server, name)[len(killed_entries) :]
    resumed_gets = _gets(resumed, warc)
    clean_bytes, killed_bytes = sum(b for _, b in clean_gets), sum(b for _, b in killed_gets)
    resumed_bytes = sum(b for _, b in resumed_gets)
    print(
        f"\nthe WARC: {size} bytes; the last commit: {committed} of {PAGES} pages, the next record at byte {offset}"
        f"\n  clean run: {clean_bytes} bytes requested ({clean_bytes / size:.2f}x the WARC) by GETs {clean_gets}"
        f"\n  killed run: {killed_bytes} bytes requested by GETs {killed_gets}"
        f"\n  taken up: {resumed_bytes} bytes requested ({resumed_bytes / (size - offset):.2f}x the "
        f"{size - offset} bytes after the commit) by GETs {resumed_gets}; outcome {outcome}"
    )
    assert outcome["state"] == "done" and outcome["from_commits"] == committed >= 2 * EVERY
    # the WARC's stream starts at the commit's offset: one ranged GET from there, the others small sniffs
    assert [start for start, _ in resumed_gets if start > 0] == [offset]
    assert all(sent <= 2 * SNIFF_BYTES + 2 for start, sent in resumed_gets if start != offset)
    assert resumed_bytes < size - offset + 2 * SNIFF_BYTES  # the tail after the commit, and the sniff at the head
    assert size <= clean_bytes < size + 4 * SNIFF_BYTES  # a clean run reads the WARC once (and sniffs)
    assert _files(out) == _files(clean_out) and len(_files(out)) == 2  # the bytes of a clean run
    assert _leftovers(out) == []
