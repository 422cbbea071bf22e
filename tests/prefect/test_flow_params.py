"""The flows' parameters as the UI's Run form gets them (:mod:`content_selection.shell.params`).

Every optional parameter is published as a plain type with a non-null default
(no ``anyOf`` toggle, no enum class name, no ``null`` the form would submit and
the server refuse), and a form's empty value means unset: the flow body sees
``None``, as a Python caller passing ``None`` gets.
"""

from __future__ import annotations

from typing import Any

import pytest

from content_selection.flows.extract_and_select import extract_and_select
from content_selection.flows.extract_articles import extract_articles
from content_selection.flows.extract_crawl import extract_crawl
from content_selection.flows.extract_inbox import extract_inbox
from content_selection.flows.select_content import select_content
from content_selection.flows.select_directory import select_directory
from content_selection.shell.runners import TaskRunnerName

FLOWS = [
    pytest.param(select_content, id="select-content"),
    pytest.param(select_directory, id="select-directory"),
    pytest.param(extract_articles, id="extract-articles"),
    pytest.param(extract_and_select, id="extract-and-select"),
    pytest.param(extract_inbox, id="extract-inbox"),
    pytest.param(extract_crawl, id="extract-crawl"),
]


def _properties(flow: Any) -> dict[str, dict[str, Any]]:
    return flow.parameters.model_dump()["properties"]


@pytest.mark.parametrize("flow", FLOWS)
def test_every_parameter_is_a_plain_typed_described_field(flow: Any) -> None:
    schema = flow.parameters.model_dump()
    assert schema["definitions"] == {}  # no $ref to a named type (e.g. TaskRunnerName)
    for name, prop in _properties(flow).items():
        assert "anyOf" not in prop and "allOf" not in prop, name
        # an object only for the store's options: the Run form edits it as JSON
        assert prop.get("type") in {"string", "integer", "number", "boolean"} or name == "storage_options", name
        assert prop.get("description"), name
        if name not in schema.get("required", []):
            assert prop.get("default") is not None, name


#: The flows that take a task runner (``extract-inbox`` runs its page sets one after the other; ``extract-crawl``
#: its WARCs on local processes, or on Dask with an address).
RUNNER_FLOWS = [p for p in FLOWS if p.id not in ("extract-inbox", "extract-crawl")]


def test_storage_options_are_a_json_object_that_may_be_left_empty() -> None:
    for flow in (select_content, select_directory):
        prop = _properties(flow)["storage_options"]
        assert prop["type"] == "object" and prop["default"] == {}
    validated = select_content.validate_parameters({"input_path": "s3://b/k", "storage_options": ""})
    assert validated["storage_options"] is None


@pytest.mark.parametrize("flow", RUNNER_FLOWS)
def test_the_task_runner_is_a_drop_down_with_an_unset_choice(flow: Any) -> None:
    runner = _properties(flow)["task_runner"]
    assert runner["enum"] == ["", *(r.value for r in TaskRunnerName)]
    assert runner["default"] == ""


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        pytest.param({"output_path": ""}, {"output_path": None}, id="empty-text"),
        pytest.param({"output_path": "  "}, {"output_path": None}, id="blank-text"),
        pytest.param({"output_path": None}, {"output_path": None}, id="none-text"),
        pytest.param({"output_path": "/d/o.json"}, {"output_path": "/d/o.json"}, id="text"),
        pytest.param({"task_runner": ""}, {"task_runner": None}, id="empty-runner"),
        pytest.param({"task_runner": "dask"}, {"task_runner": TaskRunnerName.DASK}, id="runner"),
        pytest.param({"chunk_size": 0}, {"chunk_size": None}, id="zero-count"),
        pytest.param({"chunk_size": 7}, {"chunk_size": 7}, id="count"),
        pytest.param({"dask_address": ""}, {"dask_address": None}, id="empty-address"),
        pytest.param({"dask_address": "tcp://10.0.0.5:8786"}, {"dask_address": "tcp://10.0.0.5:8786"}, id="address"),
    ],
)
def test_a_form_value_reaches_the_flow_as_python_values(parameters: dict[str, Any], expected: dict[str, Any]) -> None:
    validated = select_content.validate_parameters({"input_path": "/d/b_extracted.json", **parameters})
    for name, value in expected.items():
        assert validated[name] == value


@pytest.mark.parametrize(
    "parameters",
    [
        pytest.param({"task_runner": "threads"}, id="unknown-runner"),
        pytest.param({"chunk_size": -1}, id="negative-count"),
        pytest.param({"dask_address": "10.0.0.5:8786"}, id="address-without-scheme"),
        pytest.param({"input_path": ""}, id="empty-input"),
    ],
)
def test_a_bad_value_is_refused_before_the_run(parameters: dict[str, Any]) -> None:
    from prefect.exceptions import ParameterTypeError

    with pytest.raises(ParameterTypeError):
        select_content.validate_parameters({"input_path": "/d/b_extracted.json", **parameters})


@pytest.mark.parametrize("flow", FLOWS)
def test_the_forms_untouched_values_pass_the_servers_schema_check(flow: Any) -> None:
    """The form submits every default as it is; the server checks it against the schema
    (``enforce_parameter_schema``), as ``jsonschema`` does here, and refuses a null."""
    import jsonschema

    schema = flow.parameters.model_dump()
    untouched = {name: prop["default"] for name, prop in schema["properties"].items() if "default" in prop}
    required = {name: "x" for name in schema.get("required", [])}
    jsonschema.validate({**untouched, **required}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**untouched, **required, "max_table_rows": -1}, schema)
