"""Names and defaults of the stage's deployments (no Prefect import, so the CLI stays light)."""

from __future__ import annotations

from typing import Final

MANUAL_DEPLOYMENT: Final[str] = "manual"
SCHEDULED_DEPLOYMENT: Final[str] = "scheduled"
TRIGGERED_DEPLOYMENT: Final[str] = "triggered"

#: Name of the ``select-content`` deployment started when a named upstream flow's run completes
#: (served only with ``serve --after-flow``; a commented block in ``prefect.yaml``).
AFTER_FLOW_DEPLOYMENT: Final[str] = "after-flow"

#: Default schedule of the scheduled deployments (``select-directory``, ``extract-inbox``): every 15 minutes.
DEFAULT_CRON: Final[str] = "*/15 * * * *"
DEFAULT_TIMEZONE: Final[str] = "UTC"

#: Tags on every deployment of the stage.
TAGS: Final[tuple[str, ...]] = ("content-selection",)
