"""The artifacts of a ``content-selection run`` as a real server stores them (the session's ``server`` fixture).

``content-selection run`` runs in a subprocess against ``prefect server start`` on 127.0.0.1,
on a batch whose URLs hold ``&`` (one article with an id, one without, one with neither);
the artifacts of that flow run are then read back through the API, as the UI reads them:
the ``selection-scores`` table answers "what was picked and why" in at most 8 columns,
with values sent as they are (never HTML-escaped), and the closest calls and the
summary are there. How the two UIs show them was checked by eye in headless Chromium
(see ``selection_core/evidence.py`` on why the table shows URLs without their scheme).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

import selection_core as sc
from selection_core.evidence import (
    CLOSEST_CALLS_ARTIFACT_KEY,
    SCORES_ARTIFACT_KEY,
    SUMMARY_ARTIFACT_KEY,
    article_label,
)
from tests.support.prefect_server import Server, run

pytestmark = [pytest.mark.server, pytest.mark.slow]

BODY = " ".join(f"word{i}" for i in range(40))
AMPERSAND_URL = "https://news.example/story?id=1&lang=en&ref=home"
ARTICLES: list[dict[str, Any]] = [
    {  # an id and a URL with "&": a tie, decided by priority (a close call)
        "id": "with-id",
        "url": AMPERSAND_URL,
        "trafilatura": {"text": BODY, "error": None},
        "newspaper4k": {"text": BODY, "error": None},
        "readability": {"cleaned_text": BODY, "error": None},
    },
    {  # no id: the table names it by its URL, shown without the scheme, "&" as it is
        "url": "https://www.news.example/b?q=a&r=b",
        "trafilatura": {"text": BODY + " share this story subscribe now", "error": None},
        "newspaper4k": {"text": BODY, "error": None},
        "readability": {"cleaned_text": "", "error": None},
    },
    {  # neither id nor URL
        "trafilatura": {"text": BODY, "error": None},
        "newspaper4k": None,
        "readability": {"cleaned_text": BODY + " menu login", "error": "Timeout"},
    },
]


def _flow_run_named(server: Server, name: str) -> Any:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    with server.client() as client:
        (flow_run,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
    return flow_run


def _artifacts(server: Server, flow_run_id: Any) -> dict[str, Any]:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with server.client() as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    return {a.key: a for a in artifacts}


@pytest.fixture(scope="module")
def ran(server: Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The batch, run once through ``content-selection run`` against the server; the run's artifacts by key."""
    folder = tmp_path_factory.mktemp("ampersand")
    source = folder / "ampersand_extracted.json"
    source.write_bytes(orjson.dumps({"articles": ARTICLES}))
    run(
        [sys.executable, "-m", "selection_cli.main", "run", str(source), "--report", str(folder / "r.jsonl")],
        server.env,
    )
    flow_run = _flow_run_named(server, f"select-{source.name}")
    assert flow_run.state.is_completed(), flow_run.state.message
    return source, _artifacts(server, flow_run.id)


def test_the_scores_table_says_what_was_picked_and_why_in_at_most_8_columns(ran: tuple[Path, dict]) -> None:
    _, artifacts = ran
    table = artifacts[SCORES_ARTIFACT_KEY]
    assert table.type == "table"
    rows = json.loads(table.data)
    selections = sc.select_articles(ARTICLES)
    assert len(rows) == len(ARTICLES)
    for row in rows:
        assert len(row) <= 8
        assert list(row) == ["index", "selected", "reason", *sc.EXTRACTORS, "article"]
    for row, selection in zip(rows, selections, strict=True):
        assert row["selected"] == selection.selected
        assert row["reason"] == selection.reason.value
        for candidate in selection.candidates:
            if candidate.score is not None:
                assert row[candidate.name] == round(float(candidate.score), 4)
            else:  # no score: the cell says why, unless the reason does (a usable candidate not scored)
                assert row[candidate.name] == (None if candidate.state is sc.State.USABLE else candidate.state.value)
    assert rows[0]["trafilatura"] == rows[0]["newspaper4k"] == rows[0]["readability"] == 1.0


def test_the_table_values_are_never_html_escaped(ran: tuple[Path, dict]) -> None:
    _, artifacts = ran
    table = artifacts[SCORES_ARTIFACT_KEY]
    rows = json.loads(table.data)
    assert [row["article"] for row in rows] == ["with-id", "news.example/b?q=a&r=b", None]
    assert rows[1]["article"] == article_label(ARTICLES[1])
    assert "&amp;" not in table.data and "&lt;" not in table.data


def test_the_closest_calls_and_the_summary_are_there(ran: tuple[Path, dict]) -> None:
    _, artifacts = ran
    calls = artifacts[CLOSEST_CALLS_ARTIFACT_KEY]
    assert calls.type == "markdown"
    assert calls.data.startswith("# Closest calls: ampersand_extracted.json\n")
    tie = "| 0 | newspaper4k | consensus_tie_priority | **1.0000 / 36** | **1.0000 / 36** | **1.0000 / 36** | with-id |"
    assert tie in calls.data
    summary = artifacts[SUMMARY_ARTIFACT_KEY]
    assert "| Item | Value |\n|---|---|\n| Articles | 3 |" in summary.data


def test_the_report_joins_to_the_batch(ran: tuple[Path, dict]) -> None:
    source, _ = ran
    lines = [orjson.loads(line) for line in (source.parent / "r.jsonl").read_bytes().splitlines()]
    assert [list(line)[:3] for line in lines] == [["index", "id", "url"], ["index", "url", "selected_extractor"],
                                                  ["index", "selected_extractor", "reason"]]  # fmt: skip
    assert lines[0]["url"] == AMPERSAND_URL and lines[1]["url"] == ARTICLES[1]["url"]
