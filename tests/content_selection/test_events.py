"""The event contract between an upstream flow and the triggered selection (:mod:`content_selection.shell.events`)."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from content_selection.shell.events import (
    BATCH_EXTRACTED_EVENT,
    BATCH_PATH_LABEL,
    INPUT_PATH_TEMPLATE,
    EventNotDeliveredError,
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


class _EventsEndpoint(http.server.BaseHTTPRequestHandler):
    """A stand-in for the server's ``POST /api/events``: records each body and answers ``status``."""

    bodies: ClassVar[list[Any]] = []
    status: ClassVar[int] = 204

    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        length = int(self.headers["Content-Length"])
        type(self).bodies.append((self.path, json.loads(self.rfile.read(length))))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802 - the client's version check on entering
        import prefect

        body = json.dumps(prefect.__version__ if self.path.endswith("/admin/version") else None).encode()
        self.send_response(200 if self.path.endswith("/admin/version") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint(monkeypatch) -> Iterator[type[_EventsEndpoint]]:
    """A loopback HTTP server as PREFECT_API_URL."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    _EventsEndpoint.bodies, _EventsEndpoint.status = [], 204
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EventsEndpoint)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        with temporary_settings(updates={PREFECT_API_URL: f"http://127.0.0.1:{httpd.server_port}/api"}):
            yield _EventsEndpoint
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_emit_batch_extracted_posts_the_contract_event_and_returns_once_confirmed(
    endpoint, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    event = emit_batch_extracted("b_extracted.json", articles=3)
    absolute = str(tmp_path / "b_extracted.json")
    [(path, body)] = endpoint.bodies
    assert path == "/api/events" and len(body) == 1
    assert body[0]["event"] == BATCH_EXTRACTED_EVENT == event.event
    assert body[0]["resource"] == {
        "prefect.resource.id": f"content-selection.batch.{absolute}",
        "prefect.resource.name": "b_extracted.json",
        BATCH_PATH_LABEL: absolute,
    }
    assert body[0]["payload"] == {"articles": 3, "path": absolute}
    assert body[0]["id"] == str(event.id)


def test_an_event_the_server_refuses_raises_one_line_naming_the_batch(endpoint, tmp_path: Path) -> None:
    endpoint.status = 422
    with pytest.raises(EventNotDeliveredError) as caught:
        emit_batch_extracted(tmp_path / "b_extracted.json")
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{tmp_path / 'b_extracted.json'}: the Prefect server did not")
    assert "422" in message


def test_an_event_emitted_while_the_server_is_down_raises(tmp_path: Path) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with temporary_settings(updates={PREFECT_API_URL: f"http://127.0.0.1:{port}/api"}):
        with pytest.raises(EventNotDeliveredError, match="ConnectError.*the scheduled scan selects the batch"):
            emit_batch_extracted(tmp_path / "b_extracted.json")


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


def test_the_package_exports_the_contract_and_the_flows_to_compose() -> None:
    import content_selection
    from content_selection.flows.extract_and_select import extract_and_select
    from content_selection.flows.extract_articles import extract_articles
    from content_selection.flows.select_content import select_content
    from content_selection.shell import completion, events
    from content_selection.tasks.selection import select_batch

    for name in content_selection.__all__:
        home = completion if name in ("FLOW_COMPLETED_EVENT", "flow_completed_trigger") else events
        if hasattr(home, name):
            assert getattr(content_selection, name) is getattr(home, name)
    assert content_selection.select_content is select_content
    assert content_selection.extract_articles is extract_articles
    assert content_selection.extract_and_select is extract_and_select
    assert content_selection.select_batch is select_batch
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        content_selection.nothing  # noqa: B018
