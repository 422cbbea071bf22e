"""One crawl per output prefix: a lease, ``crawl.lease`` directly under the prefix, that names the run holding it
and that it renews while it runs.

The lease is created only where none is, and taken over only from a holder that has ended: one on this host whose
process is gone (asked only in its own pid space), or one not renewed for :data:`STALE_SECONDS` (the store's time
of its last write against the store's time now: :func:`store_now`). Every write is conditioned on the version read
(``selection_storage.stores.conditional``), so of two runs that start, renew or take over at once exactly one
holds the lease after.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from selection_core.errors import EXIT_TEMPFAIL, SelectionError
from selection_storage.atomic import process_alive
from selection_storage.stores import Location, location
from selection_storage.stores.conditional import Conditional, Tagged, conditional
from selection_storage.stores.retries import retried
from selection_storage.transient import is_transient

#: The lease's name, directly under the crawl's output prefix.
LEASE_NAME: Final[str] = "crawl.lease"

#: A lease not renewed for this long is taken for one whose holder has ended.
STALE_SECONDS: Final[float] = 120.0

#: How often :meth:`CrawlLease.start_renewing` renews the lease by default.
RENEW_SECONDS: Final[float] = 30.0

#: Seconds without a renewal after which a run takes its lease as lost: a renewal stuck longer could hide a
#: takeover (:data:`STALE_SECONDS` less a renewal's period). A renewal counts from its call's start, before the
#: store dated the write.
RENEW_DEADLINE_SECONDS: Final[float] = STALE_SECONDS - RENEW_SECONDS

#: Seconds between a renewal that failed on a transient error (a store throttling, restarting or not answering) and
#: the next try: a store that comes back is written again within this, not a whole period later. The longest outage
#: a lease outlives follows (docs/scaling.md): :data:`RENEW_DEADLINE_SECONDS` less the longer of this and the store
#: client's own longest pause between two of its tries.
RENEW_RETRY_SECONDS: Final[float] = 2.0

#: Seconds between two tries of a run that waits for the lease (``--wait``).
WAIT_POLL_SECONDS: Final[float] = 10.0

#: How long a deployed crawl (the flow's default) waits for the lease: a run that crashed, re-run at once by the
#: crash automation, holds it until it goes stale.
DEFAULT_WAIT_SECONDS: Final[float] = STALE_SECONDS + 2 * RENEW_SECONDS

#: Tries to create or take over the lease while other runs change it, before this run gives up.
_ACQUIRE_ATTEMPTS: Final[int] = 3


class CrawlLeaseHeldError(SelectionError):
    """Another run holds the lease of the crawl's output prefix; the message names it."""

    exit_code = EXIT_TEMPFAIL


class CrawlLeaseLostError(SelectionError):
    """This run's lease was taken over by another run (or could not be renewed in time): the prefix is not this
    run's any more."""

    exit_code = EXIT_TEMPFAIL


def pid_space() -> str:
    """Where a process id names one process: this boot of this machine's kernel and this pid namespace (a
    container's own, or the host's); empty where it cannot be told (then a holder is never taken for gone)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            boot = fh.read().strip()
        return f"{boot}/{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        return ""


def store_now(where: Location) -> float:
    """The store's time now, as it dates what is written there: the time of a probe object created under ``where``
    (then deleted). A lease's age is the store's time against the store's time: this machine's clock, which may be
    minutes off, never decides."""
    probe = conditional(where / f"{LEASE_NAME}.{secrets.token_hex(8)}.probe")
    tag = probe.create_exclusive(b"")
    try:
        written = probe.read_tagged()
    finally:
        if tag is not None:
            probe.delete_if(tag)
    if written is None:
        raise CrawlLeaseHeldError(f"{where}: the store's time could not be read (a probe object vanished); try again")
    return written.modified


def _iso_now() -> str:
    """This machine's clock, as the lease's body writes it (never to decide an age)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Holder:
    """Who a lease names (``?`` or None for what its body lacks), and how long ago the store last saw it written."""

    host: str
    pid_space: str  # where its pid means its process (:func:`pid_space`); empty when the lease does not say
    pid: int | None
    flow_run: str | None
    since: str
    token: str
    age: float

    @classmethod
    def of(cls, lease: Tagged, now: float) -> Holder:
        """The holder a lease names, ``now`` being the store's time (:func:`store_now`)."""
        try:
            body = orjson.loads(lease.data)
        except orjson.JSONDecodeError:
            body = None
        body = body if isinstance(body, dict) else {}
        pid = body.get("pid")
        flow_run = body.get("flow_run")
        return cls(
            host=str(body.get("host") or "?"),
            pid_space=str(body.get("pid_space") or ""),
            pid=pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
            flow_run=None if flow_run is None else str(flow_run),
            since=str(body.get("since") or "?"),
            token=str(body.get("token") or ""),
            age=now - lease.modified,
        )

    def ended(self) -> bool:
        """Its process is gone (known in its own pid space only), or it has not renewed the lease for too long."""
        here = self.pid_space and self.pid_space == pid_space()  # not the host's name: containers share it
        gone = here and self.pid is not None and not process_alive(self.pid)
        return gone or self.age > STALE_SECONDS

    def __str__(self) -> str:
        run = "" if self.flow_run is None else f", flow run {self.flow_run}"
        renewed = f"{max(round(self.age), 0)} s ago"
        return f"host {self.host}, process {self.pid or '?'}{run}, since {self.since}, renewed {renewed}"


def check_fence(lease: str, token: str, storage_options: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`CrawlLeaseLostError` unless the lease at ``lease`` (its URL or path) is still the hold
    ``token``'s: what a crawl's worker asks before each of its writes, so that a crawl whose lease was taken over
    writes nothing more."""
    current = retried(conditional(location(lease, storage_options, "output")).read_tagged)
    if current is None or Holder.of(current, current.modified).token != token:
        now = "removed" if current is None else f"taken over ({Holder.of(current, current.modified)})"
        raise CrawlLeaseLostError(f"{lease}: the crawl's lease was {now}; this worker writes nothing more")


class CrawlLease:
    """This run's hold on a crawl's output prefix: :meth:`acquire` it, :meth:`start_renewing` it, call
    :meth:`check` between units of work, :meth:`release` it at the end (or use it as a context manager)."""

    def __init__(self, prefix: Location, lease: Conditional, body: dict[str, Any], tag: str) -> None:
        self.prefix = prefix
        self._lease, self._body, self._tag = lease, body, tag
        self._lock = threading.Lock()  # one write at a time: the renewing thread's, the caller's
        self._renewed = time.monotonic()
        self._failure: Exception | None = None
        self._lost = self._released = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def token(self) -> str:
        """This hold's random token, as the lease's body names it."""
        return str(self._body["token"])

    @property
    def fence(self) -> tuple[str, str]:
        """What a worker checks before each write (:func:`check_fence`): the lease's URL or path, and the token."""
        return str(self.prefix / LEASE_NAME), self.token

    @classmethod
    def acquire(
        cls,
        prefix: str | os.PathLike[str],
        storage_options: Mapping[str, Any] | None,
        flow_run: str | None = None,
        wait: float = 0.0,
        waiting: Callable[[str], None] | None = None,
    ) -> CrawlLease:
        """The lease of ``prefix`` (a folder, or an ``s3://``, ``gs://``, ``az://`` prefix), created, or taken over
        from a holder that has ended; while another run holds it, tried again every :data:`WAIT_POLL_SECONDS` for
        up to ``wait`` seconds (its holder may have died: its lease goes stale), ``waiting(line)`` told each time.

        Raises:
            CrawlLeaseHeldError: another run holds it (still, after ``wait``).
            SelectionError: the store failed (its typed error).
        """
        deadline = time.monotonic() + wait
        while True:
            try:
                return cls._acquire(prefix, storage_options, flow_run)
            except CrawlLeaseHeldError as exc:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                if waiting is not None:
                    waiting(f"waiting up to {round(left)} s more for it to end or go stale: {exc}")
                time.sleep(min(WAIT_POLL_SECONDS, left))

    @classmethod
    def _acquire(
        cls, prefix: str | os.PathLike[str], storage_options: Mapping[str, Any] | None, flow_run: str | None
    ) -> CrawlLease:
        where = location(prefix, storage_options, "output")
        lease = conditional(where / LEASE_NAME)
        now = _iso_now()
        body = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "pid_space": pid_space(),
            "flow_run": flow_run,
            "since": now,
            "renewed": now,
            "token": secrets.token_hex(16),
        }
        data = orjson.dumps(body)
        holder: Holder | None = None
        for _ in range(_ACQUIRE_ATTEMPTS):
            tag = lease.create_exclusive(data)
            if tag is None:
                current = lease.read_tagged()
                if current is None:  # released meanwhile: create it again
                    continue
                holder = Holder.of(current, store_now(where))
                if holder.token == body["token"]:  # this run's write, retried by the client after its reply was lost
                    tag = current.tag
                elif not holder.ended():
                    raise CrawlLeaseHeldError(
                        f"{where}: another crawl is running on this prefix ({holder}); wait for it to end, or stop it"
                    )
                else:
                    tag = lease.replace_if(data, current.tag)  # None: another run took it first
            if tag is not None:
                return cls(where, lease, body, tag)
        raise CrawlLeaseHeldError(
            f"{where}: other crawls are taking this prefix at the same time"
            f"{'' if holder is None else f' ({holder})'}; wait for them to end, or stop them"
        )

    def renew(self) -> None:
        """Write the lease again (a new ``renewed``), only if it is still this run's.

        Raises:
            CrawlLeaseLostError: another run took it over (or it was removed).
            SelectionError: the store failed (its typed error); the lease is unchanged.
        """
        with self._lock:
            if self._lost:
                raise self._lost_error()
            started = time.monotonic()  # the store's write is later: the lease is at most this old once it returns
            body = {**self._body, "renewed": _iso_now()}
            tag = self._lease.replace_if(orjson.dumps(body), self._tag)
            if tag is None:
                current = self._lease.read_tagged()
                if current is None or Holder.of(current, current.modified).token != self.token:
                    self._lost = True
                    raise self._lost_error(current)
                tag = current.tag  # this run's write, retried by the client after its reply was lost
            self._body, self._tag, self._renewed = body, tag, started

    def _lost_error(self, current: Tagged | None = None) -> CrawlLeaseLostError:
        now = "removed" if current is None else f"taken over ({Holder.of(current, current.modified)})"
        return CrawlLeaseLostError(
            f"{self.prefix}: this crawl's lease on the prefix was {now}; another run owns it now: stop this one"
        )

    def start_renewing(self, every: float = RENEW_SECONDS) -> None:
        """Renew the lease every ``every`` seconds in a daemon thread until :meth:`release`. A renewal that fails on
        a transient error is tried again every :data:`RENEW_RETRY_SECONDS` while the lease cannot yet be stale; a
        lost lease, or a failure that lasts, is kept for :meth:`check` to raise (the thread never ends the process)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._renew_until_released, args=(every,), name=f"crawl lease of {self.prefix}", daemon=True
            )
            self._thread.start()

    def _renew_until_released(self, every: float) -> None:
        pause = every
        while not self._stop.wait(pause):
            try:
                self.renew()
                pause = every
            except Exception as exc:  # noqa: BLE001 - kept for check(), which the caller calls
                waited = time.monotonic() - self._renewed
                if is_transient(exc):
                    if waited + RENEW_RETRY_SECONDS < STALE_SECONDS:
                        pause = RENEW_RETRY_SECONDS  # tried again soon: the lease cannot be stale before
                        continue
                    exc = CrawlLeaseLostError(
                        f"{self.prefix}: this crawl's lease could not be renewed for {round(waited)} s ({exc}); "
                        "another run may take the prefix over: stop this one, and run it again"
                    )
                self._failure = exc
                return

    def held_at(self) -> float | None:
        """The store's time at which the lease is this run's: that of a renewal made now (None once lost or
        released, or when the store cannot say). What only the holder may do asks this first: rewrite
        ``crawl.json`` (itself a conditional write), sweep the prefix of the uploads started before this time."""
        if self._lost or self._released:
            return None
        try:
            self.renew()
            current = retried(self._lease.read_tagged)
        except Exception:  # noqa: BLE001 - not known to be held: not held
            return None
        return current.modified if current is not None and current.tag == self._tag else None

    def check(self) -> None:
        """Raise what made the renewing thread stop (a lost lease, a store's failure that lasted), or that no renewal
        has succeeded for :data:`RENEW_DEADLINE_SECONDS` (a renewal stuck in the store's client: past that, another
        run could take the lease before this one knows); else nothing."""
        if self._failure is not None:
            raise self._failure
        waited = time.monotonic() - self._renewed
        if self._thread is not None and waited > RENEW_DEADLINE_SECONDS:
            raise CrawlLeaseLostError(
                f"{self.prefix}: this crawl's lease has not been renewed for {round(waited)} s (the store does not "
                "answer); another run may take the prefix over: stop this one, and run it again"
            )

    def release(self) -> None:
        """Stop renewing, and delete the lease if it is still this run's. Never raises."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            if self._released or self._lost:
                return
            self._released = True
            try:
                self._lease.delete_if(self._tag)
            except Exception:  # noqa: BLE001, S110 - a lease left behind goes stale and is taken over
                pass

    def __enter__(self) -> CrawlLease:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()
