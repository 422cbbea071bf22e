"""The event contract between an upstream flow and the triggered selection (:mod:`content_selection.events`)."""

from __future__ import annotations

from pathlib import Path

from content_selection.events import (
    BATCH_EXTRACTED_EVENT,
    BATCH_PATH_LABEL,
    INPUT_PATH_TEMPLATE,
    batch_extracted_resource,
    batch_extracted_trigger,
    emit_batch_extracted,
)

# --- the trigger contract -------------------------------------------------------------


def test_event_resource_names_the_batch_path_as_sent(tmp_path: Path) -> None:
    sent = str(tmp_path / "root" / ".." / "b_extracted.json")
    resource = batch_extracted_resource(sent)
    assert resource == {
        "prefect.resource.id": f"content-selection.batch.{sent}",
        "prefect.resource.name": "b_extracted.json",
        BATCH_PATH_LABEL: sent,
    }


def test_emit_batch_extracted_sends_the_contract_event(mocker, tmp_path: Path, monkeypatch) -> None:
    emit = mocker.patch("content_selection.events.emit_event", return_value=None)
    monkeypatch.chdir(tmp_path)
    emit_batch_extracted("b_extracted.json", articles=3)
    absolute = str(tmp_path / "b_extracted.json")
    emit.assert_called_once_with(
        event=BATCH_EXTRACTED_EVENT,
        resource={
            "prefect.resource.id": f"content-selection.batch.{absolute}",
            "prefect.resource.name": "b_extracted.json",
            BATCH_PATH_LABEL: absolute,
        },
        payload={"articles": 3, "path": absolute},
    )


def test_trigger_matches_the_event_and_templates_the_path() -> None:
    trigger = batch_extracted_trigger()
    assert trigger.expect == {BATCH_EXTRACTED_EVENT}
    assert trigger.match.model_dump() == {"prefect.resource.id": "content-selection.batch.*"}
    assert trigger.parameters == {"input_path": INPUT_PATH_TEMPLATE}
    assert trigger.posture == "Reactive" and trigger.threshold == 1
    # The automation the trigger becomes is valid for the server.
    from uuid import uuid4

    trigger.set_deployment_id(uuid4())
    automation = trigger.as_automation()
    assert automation.actions[0].parameters == {"input_path": INPUT_PATH_TEMPLATE}


def test_the_earlier_import_path_is_the_same_contract() -> None:
    import content_selection
    from content_selection import events
    from flows import events as earlier

    assert earlier.__all__ == sorted(earlier.__all__)
    for name in earlier.__all__:
        assert getattr(earlier, name) is getattr(events, name)
    # The package exports the event contract (also under the earlier path) and the completion trigger (new).
    assert set(content_selection.__all__) <= set(earlier.__all__) | {"FLOW_COMPLETED_EVENT", "flow_completed_trigger"}
