"""The parameters and limits the flows share, and how their runs are named."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from content_selection.shell.runners import DASK_ADDRESS_PATTERN, TaskRunnerName
from selection_core.dataset import BATCH, OUTPUT_FORMATS

#: The tag of every run of the stage: its deployments' runs and their subflow runs. The automations of
#: ``deployments/automations.yaml`` act on the runs that carry it.
STAGE_TAG: Final[str] = "content-selection"

DEFAULT_MAX_TABLE_ROWS: Final[int] = 200
MAX_TABLE_ROWS_LIMIT: Final[int] = 5000
MAX_TIME_LIMIT_SECONDS: Final[float] = 3600.0


def blank_is_unset(value: Any) -> Any:
    """An empty or blank string is an unset parameter (None); anything else is kept."""
    return None if isinstance(value, str) and not value.strip() else value


def zero_is_unset(value: Any) -> Any:
    """0 (and an empty string) is an unset count (None); anything else is kept."""
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return None
    return blank_is_unset(value)


# The UI's Run form submits its defaults and draws `str | None` as a type toggle, so the optional parameters keep
# their Python type (None is unset) but publish a plain schema with a non-null default: empty text or 0 is unset.

OptionalText = Annotated[
    str | None,
    BeforeValidator(blank_is_unset),
    WithJsonSchema({"type": "string"}),
    Field(json_schema_extra={"default": ""}),
]

#: A count of 1 or more that may be unset (0).
OptionalCount = Annotated[
    Annotated[int, Field(ge=1)] | None,
    BeforeValidator(zero_is_unset),
    WithJsonSchema({"type": "integer", "minimum": 0}),
    Field(json_schema_extra={"default": 0}),
]

#: A drop-down of the runner names, whose empty choice means the setting, else the default.
TaskRunnerChoice = Annotated[
    TaskRunnerName | None,
    BeforeValidator(blank_is_unset),
    WithJsonSchema({"type": "string", "enum": ["", *(runner.value for runner in TaskRunnerName)]}),
    Field(json_schema_extra={"default": ""}),
]

DaskAddress = Annotated[
    Annotated[str, Field(pattern=DASK_ADDRESS_PATTERN)] | None,
    BeforeValidator(blank_is_unset),
    WithJsonSchema({"type": "string", "pattern": f"^$|{DASK_ADDRESS_PATTERN}"}),
    Field(json_schema_extra={"default": ""}),
]

#: The object store's options (fsspec ``storage_options``) for ``s3://``, ``gs://``, ``az://`` paths: an endpoint, a
#: region, a profile. They are shown with the run's parameters: leave credentials to the environment, a role or a
#: :data:`CredentialsBlock`.
StorageOptions = Annotated[
    dict[str, Any] | None,
    BeforeValidator(blank_is_unset),
    WithJsonSchema({"type": "object"}),
    Field(json_schema_extra={"default": {}}),
]

#: The name of a Prefect ``Secret`` block whose value (a JSON object of storage options: the store's credentials) is
#: merged into the ``storage_options`` when the run starts (``content_selection.shell.credentials``); empty: none.
CredentialsBlock = OptionalText

#: What an output is: the selected batch (``batch``, every article with ``selected_extractor``) or the dataset
#: (``dataset``: Parquet, one row per article with its selected text); a drop-down in the UI.
OutputFormat = Literal[OUTPUT_FORMATS]  # type: ignore[valid-type]
DEFAULT_OUTPUT_FORMAT: Final[str] = BATCH

TableRows = Annotated[int, Field(ge=0, le=MAX_TABLE_ROWS_LIMIT)]
TimeLimit = Annotated[float, Field(gt=0, le=MAX_TIME_LIMIT_SECONDS)]

#: Most seconds a crawl waits for another run's lease on its prefix.
MAX_WAIT_SECONDS: Final[float] = 3600.0
WaitSeconds = Annotated[float, Field(ge=0, le=MAX_WAIT_SECONDS)]


def run_namer(prefix: str, parameter: str, default: str, *, task: bool = False) -> Callable[[], str]:
    """A ``flow_run_name`` (a ``task_run_name`` with ``task``): ``<prefix>-<file name of the parameter's path>``."""

    def name() -> str:
        from prefect.runtime import flow_run, task_run

        run = task_run if task else flow_run
        return f"{prefix}-{Path(str(run.parameters.get(parameter, default))).name}"

    return name
