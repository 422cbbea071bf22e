"""Faults inside an extractor: a hang in C code, a crash, an exception, a network attempt.

The faults are injected by swapping one extractor's function for one of
``tests/support/extract_faults.py``; every other call is the real library on a real
page. Nothing here measures time: the assertions are about what the batch
holds once the run has finished.
"""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path
from typing import Any

import pytest

from selection_core.config import EXTRACTORS, TEXT_FIELDS
from selection_extraction import ExtractionSettings, default_extractors, extract_pages, find_pages
from selection_extraction.artifacts import extraction_markdown
from selection_extraction.pool import MAX_NETWORK_ATTEMPTS_KEPT
from tests.support import PAGES
from tests.support import extract_faults as faults

REAL_PAGE = PAGES / "06ee193de4bd611f7fafbab0c59b0f6fe3495093516720632cd093b24c7a0e98.html.gz"

#: Generous for a real extractor on a small page (they take well under a second),
#: so that only the injected hang overruns it.
TIME_LIMIT = 8.0


def with_function(name: str, function: Any) -> tuple[Any, ...]:
    return tuple(dataclasses.replace(e, function=function) if e.name == name else e for e in default_extractors())


def write_pages(folder: Path, markers: dict[str, str]) -> None:
    """One real page per marker (the marker, if any, inserted into its body)."""
    folder.mkdir()
    html = gzip.decompress(REAL_PAGE.read_bytes()).decode("utf-8")
    for name, marker in markers.items():
        (folder / name).write_text(html.replace("<body", f"{marker}<body", 1), encoding="utf-8")


@pytest.fixture(scope="module")
def faulty_batch(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("faults") / "pages"
    write_pages(
        folder,
        {
            "a_ok.html": "",
            "b_hang.html": faults.HANG,
            "c_crash.html": faults.CRASH,
            "d_raise.html": faults.RAISE,
            "e_ok.html": "",
        },
    )
    extractors = with_function("trafilatura", faults.faulty_trafilatura)
    return extract_pages(find_pages(folder), ExtractionSettings(time_limit_seconds=TIME_LIMIT, workers=2), extractors)


def blocks(result: Any, path: str) -> dict[str, dict[str, Any]]:
    article = next(a for a in result.doc["articles"] if a["path"] == path)
    return {name: article[name] for name in EXTRACTORS}


@pytest.mark.slow
def test_the_batch_completes_with_every_page(faulty_batch: Any) -> None:
    assert [a["path"] for a in faulty_batch.doc["articles"]] == [
        "a_ok.html",
        "b_hang.html",
        "c_crash.html",
        "d_raise.html",
        "e_ok.html",
    ]


@pytest.mark.slow
def test_a_hang_inside_c_code_is_killed_at_the_time_limit(faulty_batch: Any) -> None:
    hung = blocks(faulty_batch, "b_hang.html")
    assert hung["trafilatura"]["text"] == ""
    assert hung["trafilatura"]["error"] == (
        f"TimeoutError: trafilatura did not finish within {TIME_LIMIT:g} s on this page; its worker process was killed"
    )
    assert faulty_batch.stats.timeouts == {"trafilatura": 1, "newspaper4k": 0, "readability": 0}
    assert faulty_batch.doc["extraction"]["timeouts"]["trafilatura"] == 1


@pytest.mark.slow
def test_a_crash_kills_only_that_call(faulty_batch: Any) -> None:
    crashed = blocks(faulty_batch, "c_crash.html")
    assert crashed["trafilatura"]["error"] == (
        "WorkerCrashedError: the worker process running trafilatura died (killed by signal 11 (SIGSEGV))"
    )
    assert crashed["trafilatura"]["text"] == ""
    assert faulty_batch.stats.worker_crashes == 1


@pytest.mark.slow
def test_an_exception_is_recorded_as_type_and_message(faulty_batch: Any) -> None:
    assert blocks(faulty_batch, "d_raise.html")["trafilatura"] == {
        "text": "",
        "error": "RuntimeError: injected failure",
    }


@pytest.mark.slow
@pytest.mark.parametrize("path", ["b_hang.html", "c_crash.html", "d_raise.html"])
def test_the_other_extractors_still_run_on_the_faulty_page(faulty_batch: Any, path: str) -> None:
    reference = blocks(faulty_batch, "a_ok.html")
    faulty = blocks(faulty_batch, path)
    for name in ("newspaper4k", "readability"):
        assert faulty[name]["error"] is None
        assert faulty[name][TEXT_FIELDS[name]] == reference[name][TEXT_FIELDS[name]] != ""


@pytest.mark.slow
def test_pages_around_the_faults_are_untouched(faulty_batch: Any) -> None:
    first, last = blocks(faulty_batch, "a_ok.html"), blocks(faulty_batch, "e_ok.html")
    assert first == last
    assert all(first[name]["error"] is None and first[name][TEXT_FIELDS[name]] for name in EXTRACTORS)


# --- the network --------------------------------------------------------------------------------


def test_a_network_attempt_is_blocked_and_recorded(tmp_path: Path) -> None:
    """The guard of the workers works: the check that the real extractors make no attempt means something."""
    write_pages(tmp_path / "pages", {"net.html": faults.NETWORK})
    result = extract_pages(
        find_pages(tmp_path / "pages"), extractors=with_function("trafilatura", faults.faulty_trafilatura)
    )
    block = result.doc["articles"][0]["trafilatura"]
    assert block["text"] == ""
    assert block["error"].startswith("NetworkBlockedError: socket.")
    assert result.stats.network_attempts and all(
        a.startswith("page 0 trafilatura: socket.") for a in result.stats.network_attempts
    )


def test_only_the_first_network_attempts_are_kept_word_for_word_the_others_are_counted(tmp_path: Path) -> None:
    """A library that tried the network on every page must not leave a record per page in the parent
    for the whole run: the first ``MAX_NETWORK_ATTEMPTS_KEPT`` are kept, the others counted."""
    write_pages(tmp_path / "pages", {"a.html": faults.NETWORK_MANY, "b.html": faults.NETWORK_MANY})
    page_set = find_pages(tmp_path / "pages")
    one_worker = ExtractionSettings(workers=1)  # page 0's attempts come back first
    stats = extract_pages(page_set, one_worker, with_function("trafilatura", faults.faulty_trafilatura)).stats
    assert len(stats.network_attempts) == MAX_NETWORK_ATTEMPTS_KEPT < 2 * faults.MANY_ATTEMPTS
    assert stats.blocked_network_attempts == 2 * faults.MANY_ATTEMPTS
    assert all(a.startswith("page 0 trafilatura: socket.getaddrinfo") for a in stats.network_attempts)
    assert f"| Network attempts blocked | {2 * faults.MANY_ATTEMPTS} |" in extraction_markdown(
        {}, stats, tmp_path / "out.json", "0" * 64, 0, 0
    )
    # added up over chunks, the same cap and the same count
    total = stats + stats
    assert len(total.network_attempts) == MAX_NETWORK_ATTEMPTS_KEPT
    assert total.blocked_network_attempts == 4 * faults.MANY_ATTEMPTS


def test_newspaper4k_defaults_would_fetch_images_and_ours_do_not(tmp_path: Path) -> None:
    """newspaper4k's default ``fetch_images=True`` reaches for the network during ``parse()``;
    the configuration of the real adapter (checked on the same pages) does not."""
    defaults = extract_pages(
        find_pages(PAGES), extractors=with_function("newspaper4k", faults.newspaper_fetching_images)
    )
    assert any("newspaper4k: socket.getaddrinfo" in a for a in defaults.stats.network_attempts)
    ours = extract_pages(find_pages(PAGES))
    assert ours.stats.network_attempts == ()
