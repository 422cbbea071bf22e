"""The flow ``extract-inbox`` under the session's Prefect test harness: real extractors on real pages.

What a page set is and what is new are tested without Prefect (``tests/extraction/test_inbox.py``);
here: the flow extracts each new page set with an ``extract-articles`` subflow run, leaves the
up-to-date ones alone, lets a failed page set fail alone and names it once, and refuses to run
without a data root. The whole chain on a real server is ``test_server_chain.py``'s.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from content_selection.flows.extract_inbox import InboxRunSummary, PageSetsFailedError, extract_inbox
from selection_core.errors import UnsafePathError
from selection_extraction import ExtractionSettings, extract_to_file
from tests.support import PAGES

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]

SAMPLE = sorted(PAGES.glob("*.html.gz"))[:2]


def drop_pages(inbox: Path, name: str) -> Path:
    folder = inbox / name
    folder.mkdir(parents=True)
    for page in SAMPLE:
        shutil.copy(page, folder / page.name)
    return folder


def test_new_page_sets_are_extracted_once_and_a_broken_one_fails_alone(data_root: Path, tmp_path: Path) -> None:
    inbox = data_root / "inbox"
    news = drop_pages(inbox, "news")
    broken = inbox / "broken.jsonl"
    broken.write_text('{"id": "no path"}\n')

    with pytest.raises(PageSetsFailedError) as info:
        extract_inbox(workers=1)

    message = str(info.value)
    assert message.startswith("1 of 2 page set(s) failed, the others were extracted: ")
    assert message.count(str(broken)) == 1 and 'has no "path" string' in message
    batch = inbox / "news_extracted.json"
    expected = tmp_path / "expected_extracted.json"
    extract_to_file(str(news.resolve()), expected, ExtractionSettings(workers=1))  # what extract-articles writes
    assert batch.read_bytes() == expected.read_bytes()
    assert not (inbox / "broken_extracted.json").exists()

    broken.unlink()
    again = extract_inbox(workers=1)  # nothing new: nothing extracted, nothing failed
    assert again == InboxRunSummary(inbox=str(inbox.resolve()), extracted=[], up_to_date=1, ignored=[])


def test_the_inbox_flow_refuses_to_run_without_a_data_root(no_data_root_env: None) -> None:
    with pytest.raises(UnsafePathError, match="no data root is configured"):
        extract_inbox()
