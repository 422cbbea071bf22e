"""Fixtures and helpers for the Prefect tests (opt-in; the core tests never use them).

* ``prefect_harness``: one ``prefect_test_harness`` (a temporary SQLite-backed
  API in a subprocess) for the whole session, started the first time a test asks.
* ``batch_factory``: writes small batches built from literal texts into ``tmp_path``.
* ``data_root``: a data root directory, also set as ``CONTENT_SELECTION_DATA_ROOT``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

#: Texts that make the core decide by consensus: two extractors agree on the
#: article, the third adds boilerplate.
ARTICLE_TEXT = (
    "The city council approved the new budget on Tuesday after a long debate "
    "about schools roads and the public library which will get longer opening hours"
)
BOILERPLATE = " Subscribe to our newsletter share this story on social media and read more news"


def make_article(index: int) -> dict[str, Any]:
    """One article with three extractor blocks and the user's own fields."""
    body = f"{ARTICLE_TEXT} story number {index}"
    return {
        "id": f"a{index}",
        "url": f"https://news.example/{index}",
        "title": f"Budget story {index}",
        "trafilatura": {"text": body + BOILERPLATE},
        "newspaper4k": {"text": body},
        "readability": {"cleaned_text": f"<p>{body}</p>"},
        "user_field": {"kept": [index, "as is"]},
    }


def make_batch(n_articles: int) -> dict[str, Any]:
    return {"source": "test", "articles": [make_article(i) for i in range(n_articles)]}


BatchFactory = Callable[..., Path]


@pytest.fixture
def batch_factory(tmp_path: Path) -> BatchFactory:
    """``batch_factory(name="b_extracted.json", n_articles=3, directory=tmp_path, raw=None)``.

    Writes a valid batch of ``n_articles`` articles, or the ``raw`` bytes as given.
    """

    def factory(
        name: str = "b_extracted.json",
        n_articles: int = 3,
        directory: Path | None = None,
        raw: bytes | None = None,
    ) -> Path:
        folder = directory or tmp_path
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_bytes(raw if raw is not None else json.dumps(make_batch(n_articles), indent=1).encode())
        return path

    return factory


@pytest.fixture
def no_data_root_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``CONTENT_SELECTION_DATA_ROOT`` during the test, whatever ran before (restored after)."""
    monkeypatch.delenv("CONTENT_SELECTION_DATA_ROOT", raising=False)


@pytest.fixture
def data_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data root directory under ``tmp_path``, exported as ``CONTENT_SELECTION_DATA_ROOT``."""
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("CONTENT_SELECTION_DATA_ROOT", str(root))
    return root


#: The file ``prefect_test_harness`` names its temporary database (in a new temporary folder).
HARNESS_DATABASE = "prefect-test.db"


@pytest.fixture(scope="session")
def prefect_harness(pytestconfig: pytest.Config, monkeypatch_session: pytest.MonkeyPatch) -> Iterator[None]:
    """One temporary Prefect API for every flow test of the session.

    Its database starts as a copy of an empty one migrated by an earlier session (kept in pytest's cache, by
    Prefect version): a new database costs about 6 s of migrations in each worker. The first session migrates
    its own, then keeps a copy (SQLite's backup, consistent while the server runs).

    Flow-run heartbeats are off: they exist to find crashed runs of a long-lived
    deployment, and the thread that sends them sleeps in one-second steps, so
    every flow run of a test would wait up to a second for it to stop.
    """
    import shutil
    import sqlite3
    import tempfile

    import prefect
    import prefect.testing.utilities as harness
    from prefect.settings import (
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        PREFECT_SERVER_DATABASE_CONNECTION_URL,
        temporary_settings,
    )

    template = pytestconfig.cache.mkdir("prefect") / f"migrated-{prefect.__version__}.db"

    def seeded_folder() -> str:
        folder = tempfile.mkdtemp()
        if template.is_file():
            shutil.copyfile(template, Path(folder) / HARNESS_DATABASE)
        return folder

    monkeypatch_session.setattr(harness, "mkdtemp", seeded_folder)
    with (
        harness.prefect_test_harness(server_startup_timeout=120),
        temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}),
    ):
        if not template.is_file():
            database = PREFECT_SERVER_DATABASE_CONNECTION_URL.value().partition(":///")[2]
            kept = template.with_name(f"{template.name}.{os.getpid()}")
            with (
                contextlib.closing(sqlite3.connect(database)) as source,
                contextlib.closing(sqlite3.connect(kept)) as copy,
            ):
                source.backup(copy)
            os.replace(kept, template)
        yield


@pytest.fixture(scope="session")
def monkeypatch_session() -> Iterator[pytest.MonkeyPatch]:
    """A ``monkeypatch`` undone at the end of the session."""
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def expected_output(input_path: Path) -> bytes:
    """The bytes the core itself produces for ``input_path`` (the reference for every run)."""
    import selection_core as sc

    doc = sc.parse_batch(input_path.read_bytes(), str(input_path))
    return sc.dump_batch(sc.apply_selections(doc, sc.select_articles(doc["articles"])))


def leftover_files(folder: Path, keep: set[Path]) -> list[Path]:
    """Files in ``folder`` (recursively) other than ``keep``: temporaries or unexpected outputs."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p not in keep)


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def task_runs_of(flow_run_id: UUID) -> list[Any]:
    """Task runs of one flow run, through the Prefect client, sorted by name."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async with get_client() as client:
        runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return sorted(runs, key=lambda run: run.name)


async def artifacts_of(flow_run_id: UUID) -> list[Any]:
    """Artifacts created by one flow run (or its task runs), sorted by key."""
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    async with get_client() as client:
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    return sorted(artifacts, key=lambda a: (a.key or "", str(a.type)))


@pytest.fixture
def session_api(prefect_harness: None) -> dict[str, str]:
    """``{"PREFECT_API_URL": ...}``: this session's Prefect API, for a command run in a fresh process. Its flow
    runs there as a user's does against their server; it does not start Prefect's embedded API of its own (tens of
    seconds of CPU each time). The tests of the embedded API itself leave this out."""
    from prefect.settings import PREFECT_API_URL

    return {"PREFECT_API_URL": str(PREFECT_API_URL.value())}


def env_without_prefect_api(**extra: str) -> dict[str, str]:
    """The environment for a subprocess: this session's isolated Prefect home, no API URL."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(extra)
    return env


def extract_and_select_artifact_keys() -> set[str]:
    """The keys of the artifacts of one ``extract-and-select`` run: the extraction's and the selection's."""
    from content_selection.tasks.selection import (
        PROGRESS_ARTIFACT_KEY,  # imports Prefect: here, not at the module's top
    )
    from selection_core.evidence import CLOSEST_CALLS_ARTIFACT_KEY, SCORES_ARTIFACT_KEY, SUMMARY_ARTIFACT_KEY
    from selection_extraction.artifacts import (
        EXTRACTION_PROGRESS_ARTIFACT_KEY,
        EXTRACTION_SUMMARY_ARTIFACT_KEY,
        PAGES_ARTIFACT_KEY,
    )

    return {
        PAGES_ARTIFACT_KEY,
        EXTRACTION_SUMMARY_ARTIFACT_KEY,
        EXTRACTION_PROGRESS_ARTIFACT_KEY,
        SCORES_ARTIFACT_KEY,
        CLOSEST_CALLS_ARTIFACT_KEY,
        SUMMARY_ARTIFACT_KEY,
        PROGRESS_ARTIFACT_KEY,
    }
