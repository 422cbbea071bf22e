"""The stage's automations (``automations.yaml``): find dead runs, mark them Crashed, run them again."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from prefect.events.schemas.automations import AutomationCore

#: The one definition of the automations, read by ``serve`` and by ``content-selection automations``.
AUTOMATIONS_FILE: Final[Path] = Path(__file__).with_name("automations.yaml")

#: Seconds between a run's heartbeats; the crash automation waits three of them.
HEARTBEAT_SECONDS: Final[int] = 30


def load_automations(path: Path = AUTOMATIONS_FILE) -> list[AutomationCore]:
    """The automations of ``path``, validated as the server will (``ValueError`` for an invalid file)."""
    import yaml
    from prefect.events.schemas.automations import AutomationCore

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [AutomationCore.model_validate(entry) for entry in data["automations"]]


def apply_automations(path: Path = AUTOMATIONS_FILE) -> list[str]:
    """Create each automation of ``path`` on the server at ``PREFECT_API_URL``, or update the one of that name if
    it differs; one line per automation, saying which.

    An automation the same as the file's is left alone: updating it would make the server forget the runs it
    is watching (a restarted ``serve`` would leave the runs its killed predecessor ran Running for ever)."""
    from prefect import get_client

    done: list[str] = []
    with get_client(sync_client=True) as client:
        for automation in load_automations(path):
            existing = client.read_automations_by_name(automation.name)
            for extra in existing[1:]:  # one of each name
                client.delete_automation(extra.id)
            if not existing:
                client.create_automation(automation)
                done.append(f"created automation {automation.name}")
            elif _definition(existing[0]) != _definition(automation):
                client.update_automation(existing[0].id, automation)
                done.append(f"updated automation {automation.name}")
            else:
                done.append(f"automation {automation.name} is up to date")
    return done


def _definition(automation: AutomationCore) -> Any:
    """What an automation does: its fields as the file gives them, without the ids the server or the model add."""
    from prefect.events.schemas.automations import AutomationCore

    def without_ids(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: without_ids(v) for k, v in value.items() if k != "id"}
        if isinstance(value, list):  # a set (of event names...) comes in any order
            items = [without_ids(v) for v in value]
            return sorted(items) if all(isinstance(v, str) for v in items) else items
        return value

    return without_ids(automation.model_dump(mode="json", include=set(AutomationCore.model_fields)))
