"""Prefect's in-memory causal ordering of events, made to survive a restart of the server: the run states stored by
an earlier process of the server count as processed (why: ``docs/reliability.md``). Run the server with it (the
server must be able to import ``content_selection``)::

    PREFECT_SERVER_EVENTS_CAUSAL_ORDERING=content_selection.deployments.ordering prefect server start
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Final
from uuid import UUID

from prefect.server.events.ordering.memory import CausalOrdering as MemoryOrdering
from prefect.server.events.schemas.events import Event

#: When this process of the server started to order events (the module is imported by its first ordering).
_STARTED: Final[datetime] = datetime.now(UTC)


class CausalOrdering(MemoryOrdering):
    """Prefect's in-memory causal ordering, which also counts the run states of an earlier server process as seen."""

    # One instance per scope, apart from those of Prefect's class.
    _instances: dict[str, MemoryOrdering] = {}  # noqa: RUF012 - the base class's registry, of this class
    _locks: dict[str, asyncio.Lock] = {}  # noqa: RUF012

    async def event_has_been_seen(self, event: UUID | Event) -> bool:
        if await super().event_has_been_seen(event):
            return True
        created = await _state_created(event.id if isinstance(event, Event) else event)
        return created is not None and created < _STARTED


async def _state_created(state_id: UUID) -> datetime | None:
    """When the server stored the flow or task run state ``state_id`` (a state's event has the state's id), if it
    did."""
    import sqlalchemy as sa
    from prefect.server.database import provide_database_interface

    db = provide_database_interface()
    async with db.session_context() as session:
        for table in (db.FlowRunState, db.TaskRunState):
            created = (await session.execute(sa.select(table.created).where(table.id == state_id))).scalar()
            if created is not None:
                return created if created.tzinfo else created.replace(tzinfo=UTC)
    return None
