"""One crawl per output prefix: the lease under the prefix, on a disk and on each store's real protocol on loopback
(moto's S3 server, fake-gcs-server, Azurite: ``tests/support/object_stores.py``).

A second run is refused in one line that names the holder; a holder that has ended (its process gone, or not renewed
for ``STALE_SECONDS``) is taken over; a run whose lease was taken over finds out at its next renewal; two runs taking
a lease at once end with one holder. The clock is moved, never waited for.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from pytest_mock import MockerFixture

import selection_crawl.lease as lease_module
from selection_core.errors import EXIT_TEMPFAIL, OutputPathError
from selection_crawl.lease import (
    LEASE_NAME,
    STALE_SECONDS,
    CrawlLease,
    CrawlLeaseHeldError,
    CrawlLeaseLostError,
    pid_space,
)
from selection_storage.stores import location
from selection_storage.stores.conditional import conditional
from tests.support.object_stores import StoreServer, running

HOST = socket.gethostname()
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


@dataclass
class Place:
    """A crawl's output prefix, and the lease under it read and written behind the lease's back."""

    prefix: str
    server: StoreServer | None = None

    @property
    def _lease(self) -> str:
        return f"{self.prefix}/{LEASE_NAME}"

    def read(self) -> dict[str, Any] | None:
        try:
            data = Path(self._lease).read_bytes() if self.server is None else self.server.get(self._lease)
        except FileNotFoundError:
            return None
        return orjson.loads(data)

    def token(self) -> str | None:
        """The token of the lease under the prefix; None when there is none."""
        body = self.read()
        return None if body is None else str(body["token"])

    def write(self, body: dict[str, Any] | bytes) -> None:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        if self.server is None:
            Path(self.prefix).mkdir(parents=True, exist_ok=True)
            Path(self._lease).write_bytes(data)
        else:
            self.server.put(self._lease, data)

    def take_over(self, body: dict[str, Any]) -> None:
        """Replace the lease with ``body`` as another run would, on the version read (tried again while its holder
        renews it in between)."""
        lease, data = conditional(location(self._lease)), orjson.dumps(body)
        while (current := lease.read_tagged()) is not None and lease.replace_if(data, current.tag) is None:
            continue


@pytest.fixture(
    params=["disk", "s3", pytest.param("gs", marks=pytest.mark.slow), pytest.param("az", marks=pytest.mark.slow)]
)
def place(request: pytest.FixtureRequest, tmp_path: Path, store_servers: dict[str, StoreServer]) -> Place:
    """The output prefix of a crawl on a disk, then on each store."""
    if request.param == "disk":
        return Place(str(tmp_path / "selected"))
    server = running(store_servers, request.param)
    return Place(server.url(server.new_bucket(), "selected"), server)


def foreign(
    host: str = "another-host", pid: int = 4242, token: str = "f" * 32, space: str = "another-boot/4026531836"
) -> dict[str, Any]:
    """The body of another run's lease, renewed now."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    body = {"host": host, "pid": pid, "pid_space": space, "flow_run": None, "since": now, "renewed": now}
    return {**body, "token": token}


def dead_pid() -> int:
    """The id of a process of this host that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def move_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's time, as the lease reads it, moved past ``STALE_SECONDS`` (time passing, without the wait)."""
    real = lease_module.store_now
    monkeypatch.setattr(lease_module, "store_now", lambda where: real(where) + STALE_SECONDS + 5)


def test_a_second_run_is_refused_in_one_line_naming_the_holder(place: Place) -> None:
    with CrawlLease.acquire(place.prefix, None, flow_run="run-abc") as held:
        with pytest.raises(CrawlLeaseHeldError) as caught:
            CrawlLease.acquire(place.prefix, None)
        assert place.token() == held.token  # refused: nothing written
    assert caught.value.exit_code == EXIT_TEMPFAIL == 75
    assert re.fullmatch(
        rf"{re.escape(place.prefix)}: another crawl is running on this prefix \(host {re.escape(HOST)}, process "
        rf"{os.getpid()}, flow run run-abc, since {STAMP}, renewed \d+ s ago\); wait for it to end, or stop it",
        str(caught.value),
    )


def test_the_lease_names_its_holder(place: Place) -> None:
    with CrawlLease.acquire(place.prefix, None, flow_run=None) as held:
        body = place.read()
    assert body is not None and set(body) == {"host", "pid", "pid_space", "flow_run", "since", "renewed", "token"}
    assert (body["host"], body["pid"], body["flow_run"], body["token"]) == (HOST, os.getpid(), None, held.token)
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert body["pid_space"] == f"{boot}/{os.stat('/proc/self/ns/pid').st_ino}"
    assert re.fullmatch(STAMP, body["since"]) and re.fullmatch(STAMP, body["renewed"])
    assert re.fullmatch(r"[0-9a-f]{32}", held.token)


def test_release_deletes_the_lease_and_lets_a_new_run_take_it(place: Place) -> None:
    first = CrawlLease.acquire(place.prefix, None)
    first.release()
    first.release()  # twice: nothing more
    assert place.read() is None
    with CrawlLease.acquire(place.prefix, None) as second:
        assert place.token() == second.token != first.token
    assert place.read() is None


def test_release_leaves_a_lease_another_run_has_taken(place: Place) -> None:
    lease = CrawlLease.acquire(place.prefix, None)
    place.write(foreign())  # taken over before this run noticed
    lease.release()
    assert place.token() == foreign()["token"]


@pytest.mark.parametrize(
    ("host", "space", "taken"),
    [
        pytest.param(HOST, pid_space(), True, id="this-pid-space"),
        pytest.param("another-host", "another-boot/1", False, id="another-machine-cannot-be-asked"),
        # a container with the host's network (--network host) has its name, not its processes
        pytest.param(HOST, "another-boot/1", False, id="same-host-name-another-pid-space"),
        pytest.param(HOST, "", False, id="a-lease-that-does-not-say"),
    ],
)
def test_a_lease_whose_process_has_ended_is_taken_over(place: Place, host: str, space: str, taken: bool) -> None:
    place.write(foreign(host=host, pid=dead_pid(), space=space))
    if not taken:
        with pytest.raises(CrawlLeaseHeldError, match=rf"\(host {host}, process \d+, since {STAMP}, renewed"):
            CrawlLease.acquire(place.prefix, None)
        return
    with CrawlLease.acquire(place.prefix, None) as lease:
        assert place.token() == lease.token


def test_a_lease_not_renewed_for_stale_seconds_is_taken_over(place: Place, monkeypatch: pytest.MonkeyPatch) -> None:
    body = foreign()
    body["renewed"] = "2000-01-01T00:00:00Z"  # the store's time of the last write decides, not the body's
    place.write(body)
    with pytest.raises(CrawlLeaseHeldError):
        CrawlLease.acquire(place.prefix, None)
    move_clock(monkeypatch)
    with CrawlLease.acquire(place.prefix, None) as lease:
        assert place.token() == lease.token


def test_a_lease_that_cannot_be_read_is_held_until_stale(place: Place, monkeypatch: pytest.MonkeyPatch) -> None:
    place.write(b"\x00 not JSON")
    with pytest.raises(CrawlLeaseHeldError, match=r"\(host \?, process \?, since \?, renewed \d+ s ago\)"):
        CrawlLease.acquire(place.prefix, None)
    move_clock(monkeypatch)
    with CrawlLease.acquire(place.prefix, None) as lease:
        assert place.token() == lease.token


def test_renewal_after_a_takeover_raises_lost_and_release_leaves_the_new_holder(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = CrawlLease.acquire(place.prefix, None)
    first.renew()
    with monkeypatch.context() as clock:
        move_clock(clock)
        second = CrawlLease.acquire(place.prefix, None, flow_run="run-2")
    with pytest.raises(CrawlLeaseLostError) as caught:
        first.renew()
    assert caught.value.exit_code == EXIT_TEMPFAIL
    assert re.fullmatch(
        rf"{re.escape(place.prefix)}: this crawl's lease on the prefix was taken over \(host {re.escape(HOST)}, "
        rf"process {os.getpid()}, flow run run-2, since {STAMP}, renewed \d+ s ago\); another run owns it now: "
        "stop this one",
        str(caught.value),
    )
    with pytest.raises(CrawlLeaseLostError):
        first.renew()  # lost for good
    first.release()
    assert place.token() == second.token
    second.renew()
    second.release()
    assert place.read() is None


def test_the_renewing_thread_renews_and_check_raises_a_lost_lease(place: Place, mocker: MockerFixture) -> None:
    lease = CrawlLease.acquire(place.prefix, None)
    renewals = mocker.spy(lease, "renew")
    lease.start_renewing(every=0.05)
    deadline = time.monotonic() + 10
    while renewals.call_count < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    lease.check()
    assert renewals.call_count >= 2 and place.token() == lease.token
    place.take_over(foreign())
    while time.monotonic() < deadline:
        try:
            lease.check()
        except CrawlLeaseLostError as exc:
            assert "taken over (host another-host, process 4242," in str(exc)
            break
        time.sleep(0.02)
    else:
        pytest.fail("the lost lease was never reported")
    lease.release()
    assert place.token() == foreign()["token"]


def at_once(prefix: str, runs: int = 2) -> list[CrawlLease | Exception]:
    """``runs`` acquisitions of the lease of ``prefix``, started together, each in its own thread."""
    start = threading.Barrier(runs)

    def take(_: int) -> CrawlLease | Exception:
        start.wait()
        try:
            return CrawlLease.acquire(prefix, None)
        except Exception as exc:  # noqa: BLE001 - the caller compares them
            return exc

    with ThreadPoolExecutor(runs) as pool:
        return list(pool.map(take, range(runs)))


def test_two_runs_taking_a_stale_lease_at_once_end_with_one_holder(place: Place) -> None:
    for _ in range(3):
        place.write(foreign(host=HOST, pid=dead_pid(), space=pid_space()))
        outcomes = at_once(place.prefix)
        holders = [o for o in outcomes if isinstance(o, CrawlLease)]
        refused = [o for o in outcomes if isinstance(o, CrawlLeaseHeldError)]
        assert len(holders) == len(refused) == 1, outcomes
        assert place.token() == holders[0].token
        holders[0].release()


def test_a_store_without_conditional_writes_is_refused_in_one_line() -> None:
    with pytest.raises(OutputPathError, match=r"^memory://b/selected/crawl.lease: this store cannot write"):
        CrawlLease.acquire("memory://b/selected", None)


def test_this_machines_clock_far_off_takes_no_live_lease(place: Place, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live lease's age is the store's time against the store's time: this machine's clock 10 minutes ahead (or
    behind) decides nothing."""
    place.write(foreign())
    for skew in (600.0, -600.0):
        monkeypatch.setattr(time, "time", lambda skew=skew, real=time.time: real() + skew)
        with pytest.raises(CrawlLeaseHeldError, match=r"renewed [0-9] s ago\)"):
            CrawlLease.acquire(place.prefix, None)
        monkeypatch.undo()
    assert place.token() == "f" * 32


def test_a_renewal_stuck_in_the_store_is_a_lost_lease_before_another_run_could_take_it(
    place: Place, monkeypatch: pytest.MonkeyPatch, mocker: MockerFixture
) -> None:
    monkeypatch.setattr(lease_module, "RENEW_DEADLINE_SECONDS", 0.5)
    assert STALE_SECONDS - lease_module.RENEW_SECONDS == 90.0  # the real deadline: a takeover needs 120 s
    lease = CrawlLease.acquire(place.prefix, None)
    released = threading.Event()
    mocker.patch.object(lease._lease, "replace_if", side_effect=lambda *_: released.wait(30))  # a store that hangs
    lease.start_renewing(every=0.05)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            lease.check()
        except CrawlLeaseLostError as exc:
            assert "this crawl's lease has not been renewed for" in str(exc) and "the store does not answer" in str(exc)
            break
        time.sleep(0.02)
    else:
        pytest.fail("the stuck renewal was never reported")
    released.set()
    lease.release()


def test_a_run_that_waits_takes_the_lease_once_its_holder_ends_and_says_it_waits(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease_module, "WAIT_POLL_SECONDS", 0.2)
    first = CrawlLease.acquire(place.prefix, None)
    lines: list[str] = []
    threading.Timer(1.0, first.release).start()  # the first run ends while the second waits
    with CrawlLease.acquire(place.prefix, None, wait=60, waiting=lines.append) as second:
        assert place.token() == second.token != first.token
    assert lines and lines[0].startswith("waiting up to ")
    assert "for it to end or go stale: " in lines[0] and "another crawl is running on this prefix" in lines[0]


def test_a_run_that_waits_for_a_live_holder_is_refused_once_its_wait_is_over(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lease_module, "WAIT_POLL_SECONDS", 0.2)
    place.write(foreign())
    lines: list[str] = []
    with pytest.raises(CrawlLeaseHeldError, match="another crawl is running on this prefix"):
        CrawlLease.acquire(place.prefix, None, wait=1.0, waiting=lines.append)
    assert len(lines) >= 2 and place.token() == foreign()["token"]


def test_a_deployed_crawl_waits_longer_than_a_dead_holders_lease_takes_to_go_stale() -> None:
    assert lease_module.DEFAULT_WAIT_SECONDS > STALE_SECONDS + lease_module.WAIT_POLL_SECONDS
    from content_selection.flows.extract_crawl import extract_crawl

    default = extract_crawl.parameters.properties["wait_seconds"]["default"]
    assert default == lease_module.DEFAULT_WAIT_SECONDS
