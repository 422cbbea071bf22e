"""The whole chain from deployments alone, on a real ``prefect server start`` (the session's ``server`` fixture).

One ``content-selection serve`` (with ``--after-flow``) for the class, in a subprocess:

1. real pages are dropped in ``<data root>/inbox``; ``extract-inbox/scheduled`` is started
   through the API, as the UI's "Quick run" does (the cron is set not to fire). Its
   ``extract-articles`` subflow writes the batch and emits the event, and
   ``select-content/triggered``, started by that event, writes what ``content-selection
   select`` gives on the extracted batch; a broken page set beside it fails alone;
2. a stand-in upstream flow that knows nothing of this project (``examples/completed_upstream_flow.py``)
   writes a batch; its run's ``prefect.flow-run.Completed`` starts ``select-content/after-flow``
   on the path in its ``output_path`` parameter; a path outside the data root fails and writes nothing.

Every wait is bounded; no assertion depends on how long anything took.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from content_selection.shell.completion import completion_trigger_name
from content_selection.shell.events import TRIGGER_NAME
from tests.support import ROOT
from tests.support.prefect_fixtures import expected_output, leftover_files
from tests.support.prefect_server import RUN_SECONDS, SERVE_START_SECONDS, Server, run, start, stop, wait_until

pytestmark = [pytest.mark.server, pytest.mark.slow]

PAGES = ROOT / "tests" / "data" / "pages"
SOURCE_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

#: The stand-in upstream flow of examples/completed_upstream_flow.py, and its path parameter.
UPSTREAM_FLOW = "write-batch-standin"
UPSTREAM_PARAMETER = "output_path"

#: The deployments the tests use, each carrying this serve's data root as a parameter.
DEPLOYMENTS = ("extract-inbox/scheduled", "select-content/triggered", "select-content/after-flow")


@pytest.fixture(scope="class")
def served(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``content-selection serve --after-flow ...`` running against the server; yields the (resolved) data root."""
    data_root = tmp_path_factory.mktemp("chain-root").resolve()
    args = ["serve", "--data-root", str(data_root), "--cron", "0 3 1 1 *"]
    args += ["--after-flow", UPSTREAM_FLOW, "--path-parameter", UPSTREAM_PARAMETER]
    log = server.logs / "serve-chain.log"
    process = start([sys.executable, "-m", "selection_cli.main", *args], server.env, log)
    try:

        def registered() -> bool:
            assert process.poll() is None, log.read_text()[-3000:]
            # Other modules' serve processes register some of the same names on this session's
            # server: this one's data root in each deployment says that this serve has applied it.
            deployments = [server.deployment(name) for name in DEPLOYMENTS]
            applied = all(d is not None and d.parameters.get("data_root") == str(data_root) for d in deployments)
            triggers = {TRIGGER_NAME, completion_trigger_name(UPSTREAM_FLOW)}
            return applied and triggers <= {a.name for a in server.automations()}

        wait_until("serve to register the deployments and both triggers", registered, SERVE_START_SECONDS)
        yield data_root
    finally:
        stop(process)


def flow_runs_of(server: Server, flow_name: str) -> list[Any]:
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    with server.client() as client:
        return client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])))


def started_by(flow_run: Any) -> str | None:
    """The automation that created the run (None when a person, a schedule or a client did)."""
    created_by = flow_run.created_by
    return created_by.display_value if created_by is not None and created_by.type == "AUTOMATION" else None


@pytest.mark.usefixtures("served")
class TestChainFromDeployments:
    def test_pages_dropped_in_the_inbox_end_as_a_selected_batch(
        self, server: Server, served: Path, tmp_path: Path
    ) -> None:
        from prefect.deployments import run_deployment
        from prefect.settings import PREFECT_API_URL, temporary_settings

        inbox_deployment = server.deployment("extract-inbox/scheduled")
        assert inbox_deployment.global_concurrency_limit.limit == 1  # never two inbox runs at once
        assert inbox_deployment.parameters == {"data_root": str(served)}
        inbox = served / "inbox"
        news = inbox / "news"
        news.mkdir(parents=True)
        for page in sorted(PAGES.glob("*.html.gz"))[:3]:
            shutil.copy(page, news / page.name)
        broken = inbox / "broken.jsonl"
        broken.write_text("not a manifest\n")

        with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
            inbox_run = run_deployment(
                "extract-inbox/scheduled", parameters={"workers": 1}, timeout=RUN_SECONDS, poll_interval=1
            )

        # The broken page set failed alone, named once; the good one was extracted.
        assert inbox_run.state.is_failed()
        assert "1 of 2 page set(s) failed" in inbox_run.state.message
        assert inbox_run.state.message.count(str(broken)) == 1
        extracted = inbox / "news_extracted.json"
        assert extracted.is_file() and not (inbox / "broken_extracted.json").exists()
        (failed_extraction,) = [
            r for r in flow_runs_of(server, "extract-articles") if r.parameters.get("pages") == str(broken)
        ]
        assert failed_extraction.state.is_failed() and failed_extraction.parent_task_run_id is not None

        # The event of the extract-articles subflow started the selection: no person, no schedule.
        triggered = server.final_run("select-content/triggered", str(extracted))
        assert triggered.state.is_completed(), triggered.state.message
        assert started_by(triggered) == TRIGGER_NAME
        expected = tmp_path / "expected.json"
        run(
            [sys.executable, "-m", "selection_cli.main", "select", str(extracted), "--output", str(expected)],
            server.env,
        )
        assert (inbox / "news_extracted_selected.json").read_bytes() == expected.read_bytes()
        assert [r for r in server.flow_runs("select-content/triggered") if "broken" in r.parameters["input_path"]] == []

    def test_a_json_lines_batch_written_by_extract_articles_is_selected_by_the_trigger(
        self, server: Server, served: Path, tmp_path: Path
    ) -> None:
        pages = served / "lines-pages"
        pages.mkdir()
        for page in sorted(PAGES.glob("*.html.gz"))[3:6]:
            shutil.copy(page, pages / page.name)
        extracted = served / "lines_extracted.jsonl"
        extract = (
            "import sys; from content_selection.flows.extract_articles import extract_articles; "
            "extract_articles(pages=sys.argv[1], output_path=sys.argv[2], workers=1)"
        )
        run([sys.executable, "-c", extract, str(pages), str(extracted)], server.env)
        assert extracted.is_file() and extracted.with_name("lines_extracted.extraction.json").is_file()

        triggered = server.final_run("select-content/triggered", str(extracted))

        assert triggered.state.is_completed(), triggered.state.message
        assert started_by(triggered) == TRIGGER_NAME
        expected = tmp_path / "expected.jsonl"
        run(
            [sys.executable, "-m", "selection_cli.main", "select", str(extracted), "--output", str(expected)],
            server.env,
        )
        selected = served / "lines_extracted_selected.jsonl"
        assert selected.read_bytes() == expected.read_bytes()
        assert len(selected.read_bytes().splitlines()) == 3

    def test_a_completed_upstream_run_starts_the_selection_of_its_output(self, server: Server, served: Path) -> None:
        target = served / "upstream" / "crawl_extracted.json"
        target.parent.mkdir()
        standin = [sys.executable, "examples/completed_upstream_flow.py", "--source", str(SOURCE_BATCH)]
        run([*standin, str(target)], server.env)

        selected = server.final_run("select-content/after-flow", str(target))

        assert selected.state.is_completed(), selected.state.message
        assert started_by(selected) == completion_trigger_name(UPSTREAM_FLOW)
        assert selected.parameters["require_data_root"] is True
        assert target.with_name("crawl_extracted_selected.json").read_bytes() == expected_output(SOURCE_BATCH)

    def test_an_upstream_output_outside_the_data_root_fails_and_writes_nothing(
        self, server: Server, served: Path, tmp_path: Path
    ) -> None:
        outside = tmp_path / "outside"
        outside.mkdir()
        target = outside / "away_extracted.json"
        run(
            [sys.executable, "examples/completed_upstream_flow.py", "--source", str(SOURCE_BATCH), str(target)],
            server.env,
        )

        selected = server.final_run("select-content/after-flow", str(target))

        assert selected.state.is_failed()
        assert "outside the data root" in selected.state.message
        assert leftover_files(outside, {target}) == []
