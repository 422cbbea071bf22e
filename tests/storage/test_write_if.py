"""Writes of any size conditioned on the version the writer found (``stage_if``/``write_if``), on a disk and on each
store's real protocol on loopback (moto's S3 server, fake-gcs-server, Azurite): written where nothing is, or over the
version found; refused, with nothing written, once another writer has changed it; the version written is the one a
listing then tells; a write whose reply was lost is recognised as its own when tried again."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_mock import MockerFixture

from selection_core.errors import EXIT_TEMPFAIL
from selection_storage.stores import location, store
from selection_storage.stores.conditional import ConditionalObject, VersionChangedError, write_if
from selection_storage.stores.failures import store_error
from selection_storage.stores.retries import patience
from tests.support.object_stores import StoreServer, running


@pytest.fixture(
    params=["disk", "s3", pytest.param("gs", marks=pytest.mark.slow), pytest.param("az", marks=pytest.mark.slow)]
)
def place(
    request: pytest.FixtureRequest, tmp_path: Path, store_servers: dict[str, StoreServer]
) -> tuple[str, Callable[[], bytes]]:
    """Where a file is written (a path or a URL), and how to read it behind the writer's back."""
    if request.param == "disk":
        (tmp_path / "out").mkdir()
        target = str(tmp_path / "out" / "crawl.json")
        return target, lambda: Path(target).read_bytes()
    server = running(store_servers, request.param)
    target = server.url(server.new_bucket(), "prefix/crawl.json")
    return target, lambda: server.get(target)


def _chunks(text: bytes, count: int = 3) -> list[bytes]:
    return [text + b"%d\n" % n for n in range(count)]


def test_written_where_nothing_is_then_over_the_version_found_only(place: tuple[str, Callable[[], bytes]]) -> None:
    target, read = place
    where = location(target, None, "output")
    first = write_if(where, _chunks(b"first "), None)
    assert read() == b"".join(_chunks(b"first "))
    assert store(where).listed_version() == first  # the version a listing tells
    with pytest.raises(VersionChangedError) as refused:  # something is there now
        write_if(where, b"again", None)
    assert refused.value.exit_code == EXIT_TEMPFAIL
    assert str(refused.value).startswith(f"{where}: another writer changed it since it was read")
    second = write_if(where, _chunks(b"second "), first)
    assert second != first and store(where).listed_version() == second
    with pytest.raises(VersionChangedError):  # a writer that found the first version, late
        write_if(where, b"late", first)
    assert read() == b"".join(_chunks(b"second "))  # nothing written by the refused ones
    store(where).remove()
    with pytest.raises(VersionChangedError):  # removed since: refused too
        write_if(where, b"late", second)
    assert store(where).listed_version() is None


def test_nothing_staged_is_left_by_a_refused_write(place: tuple[str, Callable[[], bytes]]) -> None:
    target, _ = place
    where = location(target, None, "output")
    write_if(where, b"x", None)
    with pytest.raises(VersionChangedError):
        write_if(where, b"y", None)
    if not target.startswith(("s3:", "gs:", "az:")):
        assert sorted(p.name for p in Path(target).parent.iterdir()) == ["crawl.json"]  # no lock file either
    else:
        assert [e.relative for e in store(where.parent).files()] == ["crawl.json"]


@pytest.mark.parametrize("protocol", ["s3"])
def test_a_write_whose_reply_was_lost_is_its_own_when_tried_again(
    protocol: str, store_servers: dict[str, StoreServer], mocker: MockerFixture
) -> None:
    """The first try lands but its reply is lost (a reset): the retry is refused by the condition, and the object read
    back is this write's bytes, so it is taken as written."""
    server = running(store_servers, protocol)
    where = location(server.url(server.new_bucket(), "crawl.json"), None, "output")
    real = ConditionalObject.write_file
    calls = []

    def reply_lost(self: ConditionalObject, *args: object) -> object:
        written = real(self, *args)  # type: ignore[arg-type]
        calls.append(written)
        if len(calls) == 1:
            reset = ConnectionResetError(104, "connection reset by peer")  # the fault: after the write landed
            raise store_error(self.path, reset, writing=True)
        return written

    mocker.patch.object(ConditionalObject, "write_file", reply_lost)
    with patience(30):
        version = write_if(where, b"mine", None)
    assert calls[0] is not None and calls[1] is None  # the retry was refused by its condition
    assert version == store(where).listed_version() and server.get(str(where)) == b"mine"


def test_a_large_object_is_streamed_from_disk_with_bounded_memory(store_servers: dict[str, StoreServer]) -> None:
    """Written on a condition to S3, an object of 64 MiB and one of 256 MiB cost the client the same memory: it is
    staged on disk and streamed from there (measured in a child process each: peak RSS less RSS after imports)."""
    import subprocess
    import sys

    server = running(store_servers, "s3")
    bucket = server.new_bucket()
    grown = {}
    for mib in (64, 256):
        url = server.url(bucket, f"{mib}.bin")
        code = f"""
import os, resource
from selection_storage.stores import location
from selection_storage.stores.conditional import write_if
where = location({url!r}, None, "output")
where.filesystem()  # the client imported and made first
block = os.urandom(1 << 20)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
write_if(where, (block for _ in range({mib})), None)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True)
        grown[mib] = int(done.stdout.split()[-1])
        assert server.info(url)["size"] == mib << 20
    print(f"\npeak RSS grown by a conditional write of 64 MiB: {grown[64]} MiB; of 256 MiB: {grown[256]} MiB")
    assert grown[256] < grown[64] + 32, grown  # not with the object's size
