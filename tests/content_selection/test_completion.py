"""The Prefect-native completion trigger (content_selection.shell.completion)."""

from __future__ import annotations

import pytest
from prefect.events import DeploymentEventTrigger

from content_selection import FLOW_COMPLETED_EVENT, flow_completed_trigger
from content_selection.shell.completion import path_parameter_template


def test_the_trigger_follows_completed_runs_of_the_named_flow_only() -> None:
    trigger = flow_completed_trigger("crawl-news", "output_path")
    assert trigger.expect == {FLOW_COMPLETED_EVENT} == {"prefect.flow-run.Completed"}
    assert trigger.match.model_dump() == {"prefect.resource.id": "prefect.flow-run.*"}
    related = {"prefect.resource.role": "flow", "prefect.resource.name": "crawl-news"}
    assert trigger.match_related.model_dump() == related
    assert trigger.for_each == {"prefect.resource.id"}  # one selection per completed run
    assert trigger.posture == "Reactive" and trigger.threshold == 1
    assert trigger.parameters == {"input_path": "{{ flow_run.parameters['output_path'] }}"}
    assert trigger.name == "select-content-after-crawl-news"


def test_the_trigger_survives_a_round_trip_through_yaml_form() -> None:
    trigger = flow_completed_trigger("crawl-news", "out")
    assert DeploymentEventTrigger.model_validate(trigger.model_dump(mode="json")) == trigger


@pytest.mark.parametrize(
    "parameter", ["output-path", "out']}}{{ 7", "", "1st"], ids=["dash", "template-injection", "empty", "digit"]
)
def test_a_parameter_that_is_not_an_identifier_is_refused(parameter: str) -> None:
    with pytest.raises(ValueError, match="not a flow parameter name"):
        path_parameter_template(parameter)


def test_an_empty_flow_name_is_refused() -> None:
    with pytest.raises(ValueError, match="flow name is empty"):
        flow_completed_trigger("  ", "output_path")
