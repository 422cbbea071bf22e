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

from content_selection.events import batch_extracted_trigger
from deployments.config import DEFAULT_CRON, DEFAULT_TIMEZONE
from deployments.definitions import build_deployments
from tests.support import ROOT

PREFECT_YAML = ROOT / "prefect.yaml"

EXPECTED = {
    ("select-content", "manual"),
    ("select-directory", "scheduled"),
    ("select-content", "triggered"),
}


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


@pytest.fixture(scope="module")
def served() -> dict[str, Any]:
    return {d.name: d for d in build_deployments(data_root="/data/batches")}


def test_serve_builds_the_three_deployments(served: dict[str, Any]) -> None:
    assert {(d.flow_name, name) for name, d in served.items()} == EXPECTED
    assert all(d.enforce_parameter_schema for d in served.values())


def test_every_deployment_parameter_has_a_description(served: dict[str, Any]) -> None:
    for name, deployment in served.items():
        schema = deployment._parameter_openapi_schema.model_dump()
        assert schema["properties"], name
        assert undescribed(schema) == [], name


def test_served_deployment_parameters_validate(served: dict[str, Any]) -> None:
    for deployment in served.values():
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
    }
    assert "definitions" in load_prefect_yaml()


@pytest.mark.parametrize("deployment", yaml_deployments(), ids=lambda d: d["name"])
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


def test_prefect_yaml_agrees_with_serve() -> None:
    served = {d.name: d for d in build_deployments()}
    for spec in yaml_deployments():
        deployment = served[spec["name"]]
        assert load_entrypoint(spec["entrypoint"]).name == deployment.flow_name
        assert (spec.get("parameters") or {}) == deployment.parameters
        assert spec["description"] == deployment.description
        assert sorted(spec["tags"]) == sorted(deployment.tags)
        yaml_triggers = [DeploymentEventTrigger.model_validate(t) for t in spec.get("triggers") or []]
        assert yaml_triggers == deployment.triggers
        yaml_crons = [(s["cron"], s["timezone"]) for s in spec.get("schedules") or []]
        assert yaml_crons == [(s.schedule.cron, s.schedule.timezone) for s in deployment.schedules]


# --- `content-selection serve` refuses to start without what it needs -----------------------


@pytest.mark.usefixtures("no_data_root_env")  # serve exports the root; undone after
def test_serve_needs_an_api_url(capsys, tmp_path: Path) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from selection_cli.serve import serve_main

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        assert serve_main(["--data-root", str(tmp_path)]) == 2
    assert "PREFECT_API_URL is not set" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param([], "no data root", id="no-root"),
        pytest.param(["--data-root", "/nonexistent/content-selection-root"], "does not exist", id="missing-root"),
        pytest.param(["--data-root", "/", "--cron", "every day"], "Invalid cron string", id="bad-cron"),
        pytest.param(["--data-root", "/", "--timezone", "Mars/Base"], "Invalid timezone", id="bad-timezone"),
    ],
)
@pytest.mark.usefixtures("no_data_root_env")  # serve exports the root; undone after
def test_serve_refuses_what_it_cannot_serve(capsys, args: list[str], message: str) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from selection_cli.serve import serve_main

    # An address nothing listens on: the command must stop before it contacts the API.
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        assert serve_main(args) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
