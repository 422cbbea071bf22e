"""Serving the stage's deployments from this process (what ``content-selection serve`` runs).

The command's options, checks and messages are :mod:`selection_cli.serve`'s;
this module only hands the built deployments to Prefect.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from selection_storage.paths import DATA_ROOT_ENV

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment


def serve_deployments(deployments: Sequence[RunnerDeployment], data_root: Path, *, limit: int | None = None) -> None:
    """Register ``deployments`` on the Prefect API and run their flow runs until stopped.

    Served runs are subprocesses of this one: they inherit ``data_root`` from the
    environment (``CONTENT_SELECTION_DATA_ROOT``), which this exports.

    Args:
        deployments: What :func:`deployments.definitions.build_deployments` built.
        data_root: The resolved data root of every served run.
        limit: Most flow runs at the same time; None for Prefect's default.

    Raises:
        Exception: whatever Prefect raises when the API cannot be reached.
    """
    from prefect import serve

    os.environ[DATA_ROOT_ENV] = str(data_root)
    serve(*deployments, limit=limit)
