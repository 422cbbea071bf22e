"""End to end against a real ``prefect server start`` on 127.0.0.1 (the session's ``server`` fixture).

Everything runs in subprocesses that share a temporary ``PREFECT_HOME``:

1. ``content-selection serve`` (``selection_cli/serve.py``) registers the manual,
   scheduled and triggered deployments and runs their flow runs;
2. a stand-in upstream flow (``examples/upstream_flow.py``) writes a batch and
   emits ``content-selection.batch.extracted``: the triggered run selects it;
3. events carrying paths that leave the data root start runs that fail and write nothing;
4. the manual and scheduled deployments are started through the API, as the UI does;
5. ``prefect deploy --all`` reads ``prefect.yaml`` (the extraction's deployments too) and a
   process worker runs its selection deployments.

The whole chain (pages in the inbox to a selected batch) and the completion trigger are
``test_server_chain.py``'s.

Every wait is bounded; no assertion depends on how long anything took.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from content_selection.shell.events import BATCH_EXTRACTED_EVENT
from selection_core.evidence import SCORES_ARTIFACT_KEY
from tests.support import ROOT
from tests.support.prefect_fixtures import expected_output, leftover_files
from tests.support.prefect_server import RUN_SECONDS, SERVE_START_SECONDS, Server, run, start, stop, wait_until

pytestmark = [pytest.mark.server, pytest.mark.slow]

SOURCE_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

#: A script that emits the batch-extracted event for each path given as an argument.
EMIT_EACH_ARGUMENT = (
    "import sys\nfrom content_selection import emit_batch_extracted\nfor p in sys.argv[1:]: emit_batch_extracted(p)"
)


@pytest.fixture(scope="class")
def served(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``content-selection serve`` running against the server; yields the data root."""
    data_root = tmp_path_factory.mktemp("data-root")
    process = start(
        [sys.executable, "-m", "selection_cli.main", "serve", "--data-root", str(data_root), "--cron", "0 3 1 1 *"],
        server.env,
        server.logs / "serve.log",
    )
    try:

        def registered() -> bool:
            assert process.poll() is None, (server.logs / "serve.log").read_text()[-3000:]
            names = ("select-content/manual", "select-directory/scheduled", "select-content/triggered")
            deployments = {name: server.deployment(name) for name in names}
            # Another module's serve may have registered the same names on this session's server:
            # only this one's data root in the triggered deployment says this serve has applied it.
            triggered = deployments["select-content/triggered"]
            return (
                all(deployments.values())
                and triggered.parameters.get("data_root") == str(data_root.resolve())  # serve resolves it
                and any(a.name == "select-content-on-batch-extracted" for a in server.automations())
            )

        wait_until("serve to register the deployments and the trigger", registered, SERVE_START_SECONDS)
        yield data_root
    finally:
        stop(process)


@pytest.mark.usefixtures("served")
class TestServedDeployments:
    def test_upstream_event_triggers_a_selection_of_that_batch(self, server: Server, served: Path) -> None:
        target = served / "2024-05-01" / "news_extracted.json"
        target.parent.mkdir()
        run([sys.executable, "examples/upstream_flow.py", str(SOURCE_BATCH), str(target)], server.env)

        flow_run = server.final_run("select-content/triggered", str(target))

        assert flow_run.state.is_completed(), flow_run.state.message
        output = target.with_name("news_extracted_selected.json")
        assert output.read_bytes() == expected_output(SOURCE_BATCH)
        assert flow_run.parameters["require_data_root"] is True

    def test_event_paths_outside_the_data_root_fail_and_write_nothing(
        self, server: Server, served: Path, tmp_path: Path
    ) -> None:
        outside = tmp_path / "outside"
        outside.mkdir()
        secret = outside / "secret_extracted.json"
        secret.write_bytes(SOURCE_BATCH.read_bytes())
        link = served / "link_extracted.json"
        link.symlink_to(secret)
        # A `..` escape, and a symlink inside the root that points out of it (plain outside
        # paths are covered, with the others, by the flow tests).
        sent = [f"{served}/../{secret.relative_to(served.parent)}", str(link)]
        try:
            run([sys.executable, "-c", EMIT_EACH_ARGUMENT, *sent], server.env)
            runs = [server.final_run("select-content/triggered", path) for path in sent]
        finally:
            link.unlink()

        for flow_run in runs:
            assert flow_run.state.is_failed()
            assert "outside the data root" in flow_run.state.message
        assert leftover_files(outside, {secret}) == []
        assert not (served / "link_extracted_selected.json").exists()

    def test_manual_deployment_runs_from_the_api(self, server: Server, served: Path) -> None:
        from prefect.deployments import run_deployment
        from prefect.settings import PREFECT_API_URL, temporary_settings

        # What the UI's run form shows: every parameter typed and described.
        schema = server.deployment("select-content/manual").parameter_openapi_schema
        assert schema["required"] == ["input_path"]
        assert all(prop.get("description") for prop in schema["properties"].values())

        source = served / "manual" / "by_hand_extracted.json"
        source.parent.mkdir()
        source.write_bytes(SOURCE_BATCH.read_bytes())
        with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
            flow_run = run_deployment(
                "select-content/manual",
                parameters={"input_path": str(source), "max_table_rows": 4},
                timeout=RUN_SECONDS,
                poll_interval=1,
            )
        assert flow_run.state.is_completed(), flow_run.state.message
        assert source.with_name("by_hand_extracted_selected.json").read_bytes() == expected_output(SOURCE_BATCH)

        from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

        with server.client() as client:
            artifacts = client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run.id]))
            )
        (table,) = [a for a in artifacts if a.key == SCORES_ARTIFACT_KEY]
        assert len(json.loads(table.data)) == 4
        assert "max_table_rows=4" in table.description

    def test_manual_deployment_refuses_invalid_parameters(self, server: Server) -> None:
        from prefect.deployments import run_deployment
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with (
            temporary_settings(updates={PREFECT_API_URL: server.api_url}),
            pytest.raises(Exception, match="max_table_rows"),
        ):
            run_deployment("select-content/manual", parameters={"input_path": "x", "max_table_rows": -1}, timeout=0)

    def test_scheduled_deployment_selects_each_stale_batch(self, server: Server, served: Path) -> None:
        from prefect.deployments import run_deployment
        from prefect.settings import PREFECT_API_URL, temporary_settings

        folder = served / "scheduled"
        (folder / "deep").mkdir(parents=True)
        good = folder / "deep" / "good_extracted.json"
        good.write_bytes(SOURCE_BATCH.read_bytes())
        bad = folder / "bad_extracted.json"
        bad.write_bytes(b'{"articles": "not a list"}')
        with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
            flow_run = run_deployment(
                "select-directory/scheduled",
                parameters={"directory": str(folder)},
                timeout=RUN_SECONDS,
                poll_interval=1,
            )
        assert flow_run.state.is_failed()
        assert "1 of 2 batch(es) failed" in flow_run.state.message
        assert flow_run.state.message.count(bad.name) == 1  # the failed file, named once
        assert good.with_name("good_extracted_selected.json").read_bytes() == expected_output(SOURCE_BATCH)
        assert not bad.with_name("bad_extracted_selected.json").exists()


def test_prefect_yaml_deploys_and_a_process_worker_runs_it(server: Server, tmp_path: Path) -> None:
    data_root = tmp_path / "root"
    data_root.mkdir()
    env = {**server.env, "CONTENT_SELECTION_DATA_ROOT": str(data_root)}
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.workers.process import ProcessWorker

    with server.client() as client:  # what `prefect work-pool create local-process --type process` does
        client.create_work_pool(
            WorkPoolCreate(
                name="local-process", type="process", base_job_template=ProcessWorker.get_default_base_job_template()
            )
        )
    run([sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--all"], env)

    for name in (
        "select-content/manual",
        "select-directory/scheduled",
        "select-content/triggered",
        "extract-articles/manual",
        "extract-inbox/scheduled",
    ):
        deployment = server.deployment(name)
        assert deployment is not None and deployment.work_pool_name == "local-process"
        assert deployment.enforce_parameter_schema
    inbox = server.deployment("extract-inbox/scheduled")
    assert inbox.global_concurrency_limit is not None and inbox.global_concurrency_limit.limit == 1
    (automation,) = [a for a in server.automations() if a.name == "select-content-on-batch-extracted"]
    assert automation.trigger.expect == {BATCH_EXTRACTED_EVENT}

    manual_input = data_root / "manual_extracted.json"
    manual_input.write_bytes(SOURCE_BATCH.read_bytes())
    triggered_input = data_root / "event_extracted.json"
    triggered_input.write_bytes(SOURCE_BATCH.read_bytes())

    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    missing_input = data_root / "missing_extracted.json"
    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        run_deployment("select-content/manual", parameters={"input_path": str(manual_input)}, timeout=0)
        run_deployment("select-content/manual", parameters={"input_path": str(missing_input)}, timeout=0)
    run([sys.executable, "-c", EMIT_EACH_ARGUMENT, str(triggered_input)], env)
    wait_until(
        "the automation to create the triggered run",
        lambda: any(
            r.parameters.get("input_path") == str(triggered_input) for r in server.flow_runs("select-content/triggered")
        ),
        RUN_SECONDS,
    )

    # One polling pass of a process worker: it runs both, then waits for them to finish.
    run(
        [sys.executable, "-m", "prefect", "worker", "start", "--pool", "local-process", "--run-once", "--limit", "4"],
        env,
    )
    manual = server.final_run("select-content/manual", str(manual_input))
    triggered = server.final_run("select-content/triggered", str(triggered_input))
    refused = server.final_run("select-content/manual", str(missing_input))
    assert refused.state.is_failed() and "no such file" in refused.state.message
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with server.client() as client:  # a worker's flow-run process: the engine's own copy of a refusal is dropped
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[refused.id])))
    errors = [log.message for log in logs if log.level >= 40]
    assert errors.count(refused.state.message) == 1 and not [e for e in errors if "Engine execution" in e], errors
    assert len(errors) == 2, errors  # the project's line, and Prefect's "Finished in state Failed" of the task run
    assert manual.state.is_completed(), manual.state.message
    assert triggered.state.is_completed(), triggered.state.message
    for source in (manual_input, triggered_input):
        assert source.with_name(f"{source.stem}_selected.json").read_bytes() == expected_output(SOURCE_BATCH)


def test_the_server_keeps_what_it_is_told_in_postgresql(server: Server, postgres_url: str | None) -> None:
    """With ``CONTENT_SELECTION_POSTGRES=1``, the session's server keeps its state in PostgreSQL."""
    if postgres_url is None:
        pytest.skip("the session's server runs on SQLite (CONTENT_SELECTION_POSTGRES=1 for PostgreSQL)")
    import asyncio

    import asyncpg

    with server.client() as client:
        client.create_flow_from_name("postgresql-probe")

    async def rows() -> int:
        connection = await asyncpg.connect(postgres_url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            return int(await connection.fetchval("select count(*) from flow where name = 'postgresql-probe'"))
        finally:
            await connection.close()

    assert asyncio.run(rows()) == 1
