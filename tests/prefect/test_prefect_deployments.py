"""The deployments: parameter schemas a person fills in the UI, ``prefect.yaml``, and ``serve``'s copy of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.cli.deploy._models import PrefectYamlModel, RawScheduleConfig
from prefect.events import DeploymentEventTrigger
from prefect.flows import Flow, load_flow_from_entrypoint
from prefect.utilities.callables import parameter_schema
from prefect.utilities.schema_tools import ValidationError, validate

from content_selection import flow_completed_trigger
from content_selection.deployments.automations import (
    AUTOMATIONS_FILE,
    HEARTBEAT_SECONDS,
    load_automations,
)
from content_selection.deployments.config import DEFAULT_CRON, DEFAULT_TIMEZONE
from content_selection.deployments.definitions import STAGE_FLOWS, build_deployments
from content_selection.shell.ended import RUN_ENDED_EVENT, emit_run_ended
from content_selection.shell.events import batch_extracted_trigger
from tests.support import ROOT

PREFECT_YAML = ROOT / "prefect.yaml"

EXPECTED = {
    ("select-content", "manual"),
    ("select-directory", "scheduled"),
    ("select-content", "triggered"),
    ("extract-articles", "manual"),
    ("extract-inbox", "scheduled"),
    ("extract-crawl", "manual"),
}

#: The placeholders of the completion-trigger block (prefect.yaml, docs/prefect.md), and what the tests fill in.
UPSTREAM_PLACEHOLDERS = {"UPSTREAM-FLOW-NAME": "crawl-news", "PATH_PARAMETER": "output_path"}


def load_prefect_yaml() -> dict[str, Any]:
    return yaml.safe_load(PREFECT_YAML.read_text(encoding="utf-8"))


def yaml_deployments() -> list[dict[str, Any]]:
    return load_prefect_yaml()["deployments"]


def load_entrypoint(entrypoint: str) -> Flow[Any, Any]:
    path, name = entrypoint.split(":")
    assert not Path(path).is_absolute() and ".." not in Path(path).parts, "entrypoints are relative to the root"
    flow = load_flow_from_entrypoint(f"{ROOT / path}:{name}", use_placeholder_flow=False)
    assert isinstance(flow, Flow)
    return flow


def undescribed(schema: dict[str, Any]) -> list[str]:
    return sorted(name for name, prop in schema["properties"].items() if not str(prop.get("description", "")).strip())


# --- the deployments that `serve` registers --------------------------------------------


def by_key(deployments: list[Any]) -> dict[tuple[str, str], Any]:
    """The deployments by (flow name, deployment name): two flows have a ``manual`` deployment."""
    return {(d.flow_name, d.name): d for d in deployments}


@pytest.fixture(scope="module")
def served() -> dict[str, Any]:
    return {
        "manual": (d := by_key(build_deployments(data_root="/data/batches")))[("select-content", "manual")],
        "scheduled": d[("select-directory", "scheduled")],
        "triggered": d[("select-content", "triggered")],
        "extract-manual": d[("extract-articles", "manual")],
        "extract-scheduled": d[("extract-inbox", "scheduled")],
        "crawl-manual": d[("extract-crawl", "manual")],
    }


def test_serve_builds_the_deployments(served: dict[str, Any]) -> None:
    assert {(d.flow_name, d.name) for d in served.values()} == EXPECTED
    assert all(d.enforce_parameter_schema for d in served.values())


def test_the_inbox_deployment_runs_one_at_a_time_on_the_schedule(served: dict[str, Any]) -> None:
    inbox = served["extract-scheduled"]
    (schedule,) = inbox.schedules
    assert schedule.schedule.cron == DEFAULT_CRON and schedule.schedule.timezone == DEFAULT_TIMEZONE
    assert inbox.concurrency_limit == 1 and inbox.concurrency_options.collision_strategy == "ENQUEUE"
    assert inbox.parameters == {"data_root": "/data/batches"}
    assert served["extract-manual"].parameters == {} and served["extract-manual"].schedules == []
    built = by_key(build_deployments(data_root="/r", inbox="/r/drop", cron="0 * * * *"))
    assert built[("extract-inbox", "scheduled")].parameters == {"data_root": "/r", "inbox": "/r/drop"}
    assert built[("extract-inbox", "scheduled")].schedules[0].schedule.cron == "0 * * * *"


def test_a_data_root_in_object_storage_is_every_scan_s_root() -> None:
    built = by_key(build_deployments(data_root="s3://crawls/batches"))
    assert built[("extract-inbox", "scheduled")].parameters == {"data_root": "s3://crawls/batches"}
    assert built[("select-content", "triggered")].parameters["data_root"] == "s3://crawls/batches"
    assert built[("select-directory", "scheduled")].parameters == {"data_root": "s3://crawls/batches"}


def test_after_flow_deployment_only_when_an_upstream_flow_is_named() -> None:
    assert ("select-content", "after-flow") not in by_key(build_deployments())
    built = by_key(build_deployments(data_root="/r", after_flow=("crawl-news", "output_path")))
    after = built[("select-content", "after-flow")]
    assert after.parameters == {"data_root": "/r", "require_data_root": True}
    (trigger,) = after.triggers
    assert trigger == flow_completed_trigger("crawl-news", "output_path")
    assert trigger.parameters == {"input_path": "{{ flow_run.parameters['output_path'] }}"}


@pytest.mark.parametrize(
    ("after_flow", "message"),
    [
        pytest.param(("select-content", "input_path"), "a flow of this stage", id="itself"),
        pytest.param(("extract-articles", "output_path"), "a flow of this stage", id="emits-the-event"),
        pytest.param(("crawl-news", "output-path"), "not a flow parameter name", id="bad-parameter"),
        pytest.param(("crawl-news", "x']}}{{"), "not a flow parameter name", id="template-injection"),
        pytest.param((" ", "output_path"), "upstream flow name is empty", id="empty-name"),
    ],
)
def test_after_flow_refuses_what_it_cannot_follow(after_flow: tuple[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_deployments(after_flow=after_flow)


def test_every_deployment_parameter_has_a_description(served: dict[str, Any]) -> None:
    for name, deployment in served.items():
        schema = deployment._parameter_openapi_schema.model_dump()
        assert schema["properties"], name
        assert undescribed(schema) == [], name


def test_served_deployment_parameters_validate(served: dict[str, Any]) -> None:
    for deployment in [*served.values(), *build_deployments(data_root="/r", after_flow=("up", "out"))]:
        schema = deployment._parameter_openapi_schema.model_dump()
        validate(deployment.parameters, schema, raise_on_error=True, ignore_required=True)
    with pytest.raises(ValidationError):
        schema = served["manual"]._parameter_openapi_schema.model_dump()
        validate({"input_path": "x", "max_table_rows": -5}, schema, raise_on_error=True)


def test_served_schedule_and_trigger(served: dict[str, Any]) -> None:
    (schedule,) = served["scheduled"].schedules
    assert schedule.schedule.cron == DEFAULT_CRON and schedule.schedule.timezone == DEFAULT_TIMEZONE
    assert served["scheduled"].parameters == {"data_root": "/data/batches"}
    assert served["manual"].schedules == [] and served["manual"].triggers == []
    assert served["triggered"].parameters == {"data_root": "/data/batches", "require_data_root": True}
    (trigger,) = served["triggered"].triggers
    assert trigger == batch_extracted_trigger()


# --- prefect.yaml ---------------------------------------------------------------------


def test_prefect_yaml_is_a_valid_project_file() -> None:
    config = PrefectYamlModel.model_validate(load_prefect_yaml())
    assert config.prefect_version == "3.9.1"
    assert {(Path(d.entrypoint.split(":")[0]).stem, d.name) for d in config.deployments} == {
        ("select_content", "manual"),
        ("select_directory", "scheduled"),
        ("select_content", "triggered"),
        ("extract_articles", "manual"),
        ("extract_inbox", "scheduled"),
        ("extract_crawl", "manual"),
    }
    assert "definitions" in load_prefect_yaml()


@pytest.mark.parametrize("deployment", yaml_deployments(), ids=lambda d: f"{Path(d['entrypoint']).stem}-{d['name']}")
def test_prefect_yaml_entrypoints_import_and_parameters_validate(deployment: dict[str, Any]) -> None:
    flow = load_entrypoint(deployment["entrypoint"])
    assert (flow.name, deployment["name"]) in EXPECTED
    schema = parameter_schema(flow).model_dump()
    assert undescribed(schema) == []
    validate(deployment.get("parameters") or {}, schema, raise_on_error=True, ignore_required=True)
    assert deployment["enforce_parameter_schema"] is True
    assert deployment["work_pool"]["name"] == "local-process"
    for spec in deployment.get("schedules") or []:
        RawScheduleConfig.model_validate(spec)
    for spec in deployment.get("triggers") or []:
        trigger = DeploymentEventTrigger.model_validate(spec)
        # Every parameter the trigger fills in is one the flow takes.
        assert set(trigger.parameters or {}) <= set(schema["properties"])
        # Together with the deployment's own parameters, nothing required is missing.
        filled = {**(deployment.get("parameters") or {}), **(trigger.parameters or {})}
        assert set(schema.get("required", [])) <= set(filled)


def assert_agrees(spec: dict[str, Any], deployment: Any) -> None:
    """A ``prefect.yaml`` deployment says what the served one does."""
    assert load_entrypoint(spec["entrypoint"]).name == deployment.flow_name
    assert (spec.get("parameters") or {}) == deployment.parameters
    assert spec["description"] == deployment.description
    assert sorted(spec["tags"]) == sorted(deployment.tags)
    limit = spec.get("concurrency_limit")
    assert (limit or {}).get("limit") == deployment.concurrency_limit
    if limit is not None:
        assert limit["collision_strategy"] == deployment.concurrency_options.collision_strategy.value == "ENQUEUE"
    yaml_triggers = [DeploymentEventTrigger.model_validate(t) for t in spec.get("triggers") or []]
    assert yaml_triggers == deployment.triggers
    yaml_crons = [(s["cron"], s["timezone"]) for s in spec.get("schedules") or []]
    assert yaml_crons == [(s.schedule.cron, s.schedule.timezone) for s in deployment.schedules]


def test_prefect_yaml_agrees_with_serve() -> None:
    served = by_key(build_deployments(concurrency_limit=2))  # prefect.yaml's stated limit, for 2 cores
    yaml_keys = []
    for spec in yaml_deployments():
        key = (load_entrypoint(spec["entrypoint"]).name, spec["name"])
        yaml_keys.append(key)
        assert_agrees(spec, served[key])
    assert sorted(yaml_keys) == sorted(served)


def uncommented_block(text: str) -> str:
    """The commented completion-trigger block of ``prefect.yaml``, uncommented, placeholders filled in."""
    lines = text.split("# BEGIN after-flow\n", 1)[1].split("\n  # END after-flow", 1)[0].splitlines()
    block = "\n".join(line.strip()[2:] for line in lines)
    for placeholder, value in UPSTREAM_PLACEHOLDERS.items():
        block = block.replace(placeholder, value)
    return block


def test_the_commented_completion_block_agrees_with_serve_after_flow() -> None:
    text = PREFECT_YAML.read_text(encoding="utf-8")
    # Uncommented in place, the block is a deployment like the others (its aliases resolve).
    head, _, _ = text.partition("  # BEGIN after-flow\n")
    indented = "\n".join(f"  {line}" if line else line for line in uncommented_block(text).splitlines())
    config = yaml.safe_load(f"{head}{indented}\n")
    (spec,) = [d for d in config["deployments"] if d["name"] == "after-flow"]
    PrefectYamlModel.model_validate(config)
    built = build_deployments(after_flow=("crawl-news", "output_path"), concurrency_limit=2)
    (deployment,) = [d for d in built if d.name == "after-flow"]
    assert_agrees(spec, deployment)
    assert spec["work_pool"]["name"] == "local-process" and spec["enforce_parameter_schema"] is True


def test_the_documented_completion_block_is_the_one_in_prefect_yaml() -> None:
    docs = (ROOT / "docs" / "prefect.md").read_text(encoding="utf-8")
    documented = docs.split("<!-- after-flow block -->\n```yaml\n", 1)[1].split("```", 1)[0]
    commented = PREFECT_YAML.read_text(encoding="utf-8").split("# BEGIN after-flow\n", 1)[1]
    commented = commented.split("\n  # END after-flow", 1)[0]
    assert documented.splitlines() == [line.strip()[2:] for line in commented.splitlines()]


# --- `content-selection serve` refuses to start without what it needs -----------------------


@pytest.mark.usefixtures("no_data_root_env")  # serve exports the root; undone after
def test_serve_needs_an_api_url(capsys, tmp_path: Path) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from selection_cli.main import main

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        assert main(["serve", "--data-root", str(tmp_path)]) == 2
    assert "PREFECT_API_URL is not set" in capsys.readouterr().err


def test_automations_needs_an_api_url_and_says_so_in_one_line(capsys) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from selection_cli.main import main

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        assert main(["automations"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("content-selection automations: error: PREFECT_API_URL is not set")


@pytest.mark.parametrize("limit", ["0", "-1", "two"])
def test_serve_refuses_a_concurrency_limit_below_one(capsys, limit: str) -> None:
    from selection_cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--data-root", "/", "--concurrency-limit", limit])
    assert stopped.value.code == 2
    assert "--concurrency-limit: must be a whole number of at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param([], "no data root", id="no-root"),
        pytest.param(["--data-root", "/nonexistent/content-selection-root"], "does not exist", id="missing-root"),
        pytest.param(["--data-root", "/", "--cron", "every day"], "Invalid cron string", id="bad-cron"),
        pytest.param(["--data-root", "/", "--timezone", "Mars/Base"], "Invalid timezone", id="bad-timezone"),
        pytest.param(["--data-root", "/tmp", "--inbox", "/etc"], "outside the data root", id="inbox-outside-root"),
        pytest.param(["--data-root", "/", "--after-flow", "crawl"], "go together", id="after-flow-alone"),
        pytest.param(["--data-root", "/", "--path-parameter", "out"], "go together", id="path-parameter-alone"),
        pytest.param(
            ["--data-root", "/", "--after-flow", "select-content", "--path-parameter", "input_path"],
            "a flow of this stage",
            id="after-flow-itself",
        ),
        pytest.param(
            ["--data-root", "/", "--after-flow", "crawl", "--path-parameter", "a-b"],
            "not a flow parameter name",
            id="after-flow-bad-parameter",
        ),
    ],
)
@pytest.mark.usefixtures("no_data_root_env")  # serve exports the root; undone after
def test_serve_refuses_what_it_cannot_serve(capsys, args: list[str], message: str) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from selection_cli.main import main

    # An address nothing listens on: the command must stop before it contacts the API.
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        assert main(["serve", *args]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


# --- the automations that find dead runs and run them again ----------------------------------


def test_the_automations_file_is_valid_and_acts_on_the_stages_runs_only() -> None:
    crash, rerun = load_automations()
    assert crash.name == "content-selection-crash-silent-runs" and rerun.name == "content-selection-rerun-crashed-runs"
    tag = {"prefect.resource.role": "tag", "prefect.resource.id": "prefect.tag.content-selection"}
    assert crash.trigger.match_related.model_dump() == tag
    assert [m.model_dump() for m in rerun.trigger.match_related] == [tag, {"prefect.resource.role": "deployment"}]
    assert all("content-selection" in d.tags for d in build_deployments())  # every run of the stage has the tag
    # Dead after three missed heartbeats, marked Crashed; then rescheduled, the same run with its parameters.
    assert crash.trigger.posture == "Proactive" and crash.trigger.within.total_seconds() == 3 * HEARTBEAT_SECONDS
    assert crash.trigger.after == {f"prefect.flow-run.{s}" for s in ("Pending", "Submitting", "Running", "heartbeat")}
    assert {"prefect.flow-run.Completed", "prefect.flow-run.Failed"} <= crash.trigger.expect
    # A run's own end closes the window of a heartbeat sent late; every flow of the stage sends it.
    assert RUN_ENDED_EVENT in crash.trigger.expect
    for stage_flow in STAGE_FLOWS:
        hooks = (stage_flow.on_completion_hooks, stage_flow.on_failure_hooks, stage_flow.on_cancellation_hooks)
        assert all(emit_run_ended in h for h in hooks), stage_flow.name
    assert [(a.type, a.state.value) for a in crash.actions] == [("change-flow-run-state", "CRASHED")]
    assert rerun.trigger.expect == {"prefect.flow-run.Crashed"}
    assert rerun.trigger.match.model_dump()["prefect.run-count"] == ["0", "1", "2"]  # at most 2 re-runs
    assert [(a.type, a.state.value, a.name) for a in rerun.actions] == [
        ("change-flow-run-state", "SCHEDULED", "AwaitingRetry")
    ]


def test_prefect_yaml_runs_send_the_heartbeats_the_automation_waits_for() -> None:
    pool = load_prefect_yaml()["definitions"]["work_pools"]["local_process"]
    assert pool["job_variables"]["env"]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == str(HEARTBEAT_SECONDS)
    assert all(spec["work_pool"] == pool for spec in yaml_deployments())
    assert AUTOMATIONS_FILE.exists() and "content-selection automations" in PREFECT_YAML.read_text(encoding="utf-8")
