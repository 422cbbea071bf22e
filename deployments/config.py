"""Defaults of the stage's deployments (no Prefect import, so the CLI stays light)."""

from __future__ import annotations

from typing import Final

#: Default schedule of the scheduled deployments: every 15 minutes.
DEFAULT_CRON: Final[str] = "*/15 * * * *"
DEFAULT_TIMEZONE: Final[str] = "UTC"
