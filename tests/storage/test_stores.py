"""Object paths, confinement to a prefix, versions, and every store failure as one typed line; ``memory://``
for the fast checks (the real S3 server's are in ``test_object_storage.py``)."""

from __future__ import annotations

import errno
import hashlib
import sys
from pathlib import Path

import fsspec
import pytest
from botocore.exceptions import EndpointConnectionError, NoCredentialsError
from hypothesis import given
from hypothesis import strategies as st

from selection_cli.arguments import command_line_path, storage_option
from selection_cli.main import main
from selection_core.errors import (
    InvalidBatchError,
    MissingExtraError,
    OutputPathError,
    ReadError,
    ServiceUnavailableError,
    UnsafePathError,
    WriteError,
)
from selection_engine import select_file
from selection_storage.files import InputChangedError, Version
from selection_storage.paths import resolve_run_paths
from selection_storage.stores import ObjectPath, is_url, location
from selection_storage.stores.entries import modified, object_version
from selection_storage.stores.failures import store_error
from selection_storage.transient import is_transient
from tests.support import ROOT

GOLDEN_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"
URL = ObjectPath("s3", "bkt/batches/day1/x_extracted.json")

segment = st.text(st.characters(codec="utf-8", exclude_characters="/\x00"), min_size=1, max_size=8)


def test_urls_are_objects_and_everything_else_a_local_path() -> None:
    assert is_url("s3://b/k") and is_url("GS://b/k") and is_url("memory://x/y")
    assert not is_url("/data/x.json") and not is_url("file:///data/x.json") and not is_url("x.json")
    assert location("file:///data/a%20b.json") == Path("/data/a b.json")
    assert location("s3://b//k/x.json") == ObjectPath("s3", "b/k/x.json")
    assert command_line_path("s3://b/k") == "s3://b/k" and command_line_path("x.json") == str(Path("x.json").absolute())


def test_an_object_path_names_like_a_path_and_hides_its_options() -> None:
    p = ObjectPath.parse("s3://bkt/a/b_extracted.jsonl", {"secret": "hush"})
    assert (p.name, p.stem, p.suffix, str(p.parent)) == ("b_extracted.jsonl", "b_extracted", ".jsonl", "s3://bkt/a")
    assert str(p.with_name("c.json")) == "s3://bkt/a/c.json" and p.with_name("c.json").options == {"secret": "hush"}
    assert "hush" not in repr(p) and "hush" not in str(p) and p == ObjectPath("s3", "bkt/a/b_extracted.jsonl")


@given(st.lists(segment, min_size=1, max_size=4), st.integers(0, 3), st.sampled_from([".", ".."]))
def test_a_dot_segment_anywhere_is_refused(segments: list[str], at: int, dot: str) -> None:
    segments.insert(min(at, len(segments)), dot)
    with pytest.raises(UnsafePathError, match="'.' or '..' segments"):
        ObjectPath.parse("s3://" + "/".join(segments))


@given(st.lists(segment.filter(lambda s: s not in (".", "..")), min_size=1, max_size=4))
def test_a_key_under_the_root_prefix_is_confined_and_a_lookalike_is_not(segments: list[str]) -> None:
    relative = "/".join(segments)
    inside = resolve_run_paths(f"{relative}_extracted.json", data_root="s3://bkt/batches/").input
    assert isinstance(inside, ObjectPath) and inside.key == f"bkt/batches/{relative}_extracted.json"
    with pytest.raises(UnsafePathError, match="outside the data root"):
        resolve_run_paths(f"s3://bkt/batches-{relative}_extracted.json", data_root="s3://bkt/batches")


def test_a_local_data_root_refuses_an_object_and_the_reverse() -> None:
    with pytest.raises(UnsafePathError, match="outside the data root"):
        resolve_run_paths("s3://bkt/x_extracted.json", data_root=str(ROOT))
    with pytest.raises(UnsafePathError, match="outside the data root"):
        resolve_run_paths(str(GOLDEN_BATCH), data_root="s3://bkt/")


def test_a_version_is_the_etag_or_version_else_the_modification_time() -> None:
    assert object_version({"size": 3, "ETag": '"e1"', "VersionId": None}) == Version(3, 'ETag:"e1"')
    assert object_version({"size": 3, "ETag": '"e1"', "VersionId": "v2"}) == Version(3, "VersionId:v2")
    assert object_version({"size": 3, "created": 12.5}).tag == "modified:12.5"
    assert modified({"LastModified": "2026-12-01T00:00:00Z"}) == 1796083200.0


@pytest.mark.parametrize(
    ("exc", "kind", "words", "transient"),
    [
        pytest.param(FileNotFoundError("k"), InvalidBatchError, "no such object", False, id="missing"),
        pytest.param(PermissionError("Access Denied"), InvalidBatchError, "access denied", False, id="denied"),
        pytest.param(OSError(errno.EBUSY, "SlowDown"), ReadError, "the store failed", True, id="throttled"),
        pytest.param(OSError(errno.EREMOTEIO, "InternalError"), ReadError, "the store failed", True, id="500"),
        pytest.param(
            ConnectionRefusedError(111, "refused"), ServiceUnavailableError, "cannot be reached", True, id="refused"
        ),
        pytest.param(OSError(errno.EINVAL, "pre-conditions not met"), InputChangedError, "changed", False, id="etag"),
        pytest.param(OSError(errno.EINVAL, "InvalidRange"), InvalidBatchError, "refused the read", False, id="other"),
        pytest.param(NoCredentialsError(), InvalidBatchError, "no credentials for the store", False, id="no-keys"),
        pytest.param(
            EndpointConnectionError(endpoint_url="http://127.0.0.1:9"),
            ServiceUnavailableError,
            "127.0.0.1:9",
            True,
            id="down",
        ),
        pytest.param(OSError(errno.ETIMEDOUT, "timed out"), ReadError, "retry later", True, id="timeout"),
    ],
)
def test_each_store_failure_is_one_typed_line(exc, kind, words, transient) -> None:
    error = store_error(URL, exc)
    assert type(error) is kind and words in str(error) and str(URL) in str(error) and "\n" not in str(error)
    assert is_transient(error) is transient


DEAD = "http://127.0.0.1:9"  # the discard port: nothing listens there


@pytest.mark.parametrize(
    ("url", "options"),
    [
        pytest.param("s3://bkt/in_extracted.json", ["anon=true", f"endpoint_url={DEAD}"], id="s3"),
        pytest.param("gs://bkt/in_extracted.json", ["token=anon", f"endpoint_url={DEAD}"], id="gs"),
        pytest.param(
            "az://bkt/in_extracted.json",
            [f"connection_string=AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint={DEAD}/devstoreaccount1"],
            id="az",
        ),
    ],
)
def test_an_endpoint_that_is_down_is_one_line_and_exit_69(url, options, capsys, monkeypatch) -> None:
    for variable in ("AWS_ENDPOINT_URL", "STORAGE_EMULATOR_HOST", "AZURE_STORAGE_CONNECTION_STRING"):
        monkeypatch.delenv(variable, raising=False)
    code = main(["select", url, *(a for o in options for a in ("--storage-option", o))])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 69 and len(err) == 1, err
    assert f"{url}: the store cannot be reached at {DEAD}" in err[0] and "check its endpoint" in err[0]
    assert "a2V5" not in err[0]  # the account's key is never shown


def _azure_error(status: int) -> Exception:
    from azure.core.exceptions import HttpResponseError

    error = HttpResponseError(message="Server failed to authenticate the request")
    error.status_code = status
    return error


@pytest.mark.parametrize(
    ("make", "kind", "words", "transient"),
    [
        pytest.param(lambda: _azure_error(403), InvalidBatchError, "access denied", False, id="az-403"),
        pytest.param(lambda: _azure_error(404), InvalidBatchError, "no such object", False, id="az-404"),
        pytest.param(
            lambda: __import__("azure.core.exceptions").core.exceptions.ServiceRequestError("refused"),
            ServiceUnavailableError,
            "cannot be reached",
            True,
            id="az-down",
        ),
        pytest.param(
            lambda: __import__("aiohttp").ClientConnectorError(
                __import__("types").SimpleNamespace(ssl=None, host="127.0.0.1", port=9), OSError(111, "refused")
            ),
            ServiceUnavailableError,
            "cannot be reached",
            True,
            id="gs-down",
        ),
    ],
)
def test_the_sdks_own_failures_are_one_typed_line(make, kind, words, transient) -> None:
    pytest.importorskip("adlfs")
    error = store_error(URL, make())
    assert type(error) is kind and words in str(error) and "\n" not in str(error)
    assert is_transient(error) is transient


def test_a_failed_upload_says_nothing_was_written() -> None:
    assert isinstance(store_error(URL, OSError(errno.EBUSY, "SlowDown"), writing=True), WriteError)
    assert isinstance(store_error(URL, PermissionError("denied"), writing=True), OutputPathError)
    assert "nothing was written" in str(store_error(URL, OSError(errno.EINVAL, "bad"), writing=True))


def test_storage_options_on_the_command_line_are_json_or_text() -> None:
    assert storage_option("anon=true") == ("anon", True)
    assert storage_option('client_kwargs={"region_name": "eu"}') == ("client_kwargs", {"region_name": "eu"})
    assert storage_option("profile=crawler") == ("profile", "crawler")


def test_a_backend_not_installed_names_its_extra(monkeypatch) -> None:
    from fsspec.registry import _registry

    for module in ("gcsfs", "gcsfs.core"):  # as if the [gcs] extra were not installed
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.delitem(_registry, "gs", raising=False)  # the class of an earlier test's import
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    with pytest.raises(MissingExtraError, match=r"install it with: pip install 'content-selection\[gcs\]'"):
        select_file("gs://bucket-cs/x_extracted.json")


@pytest.fixture
def memory() -> fsspec.AbstractFileSystem:
    fs = fsspec.filesystem("memory")
    fs.store.clear()
    fs.pseudo_dirs[:] = [""]
    return fs


def test_memory_urls_give_the_bytes_of_a_disk(memory, tmp_path: Path) -> None:
    memory.pipe_file("/b/x_extracted.json", GOLDEN_BATCH.read_bytes())
    remote = select_file("memory://b/x_extracted.json", report_path="memory://b/report.jsonl", chunk_articles=50)
    local = select_file(GOLDEN_BATCH, tmp_path / "o.json", tmp_path / "r.jsonl")
    assert memory.cat_file("/b/x_extracted_selected.json") == (tmp_path / "o.json").read_bytes()
    assert memory.cat_file("/b/report.jsonl") == (tmp_path / "r.jsonl").read_bytes()
    assert remote.output_sha256 == local.output_sha256 == hashlib.sha256((tmp_path / "o.json").read_bytes()).hexdigest()


def test_memory_output_appears_only_when_complete(memory) -> None:
    memory.pipe_file("/b/x_extracted.json", GOLDEN_BATCH.read_bytes())
    seen: list[list[str]] = []
    select_file("memory://b/x_extracted.json", chunk_articles=50, progress=lambda *_: seen.append(memory.find("/b")))
    assert all(found == ["/b/x_extracted.json"] for found in seen)  # never a partial output
    assert memory.find("/b") == ["/b/x_extracted.json", "/b/x_extracted_selected.json"]
