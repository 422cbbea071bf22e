"""Argument types the subcommands share: one wording for each refusal."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(minimum: int, too_small: str, not_whole: str = "not a whole number: {text!r}") -> Callable[[str], int]:
    """An ``argparse`` type: a whole number of at least ``minimum``; ``too_small`` may use ``{text}``, ``{value}``,
    ``not_whole`` ``{text}``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(not_whole.format(text=text)) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(too_small.format(text=text, value=value))
        return value

    return parse


def seconds(most: float | None = None) -> Callable[[str], float]:
    """The argument type of ``--time-limit``: a positive number of seconds (at most ``most``)."""

    def seconds(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"must be at most {most:g} seconds, got {text!r}")
        return value

    return seconds


def storage_option(text: str) -> tuple[str, object]:
    """An ``argparse`` type: ``KEY=VALUE`` of the object store's options, the value read as JSON when it is JSON
    (``anon=true``, ``client_kwargs={"region_name": "eu-west-1"}``), else as text."""
    import json

    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError("write a storage option as KEY=VALUE")
    try:
        return key.strip(), json.loads(value)
    except ValueError:
        return key.strip(), value


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--storage-option KEY=VALUE`` (repeatable) to ``parser``."""
    parser.add_argument(
        "--storage-option",
        dest="storage_options",
        type=storage_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the object store of s3://, gs://, az:// paths (fsspec's storage_options), repeatable; "
        "credentials are better left to the environment, a profile or an instance role (a deployment's runs: a "
        "Prefect Secret block named by the flows' credentials_block parameter)",
    )


def add_output_format(parser: argparse.ArgumentParser) -> None:
    """Add ``--format {batch,dataset}``: what the output is."""
    from selection_core.dataset import BATCH, OUTPUT_FORMATS

    parser.add_argument(
        "--format",
        dest="output_format",
        choices=OUTPUT_FORMATS,
        default=BATCH,
        help="batch: the selected batch, every article with selected_extractor (default); dataset: Parquet, one row "
        "per article with the selected text, id, url, date, file_path, dump and language (needs the 'dataset' extra)",
    )


def check_output_format(args: argparse.Namespace) -> None:
    """Refuse, before anything runs, a dataset without the ``dataset`` extra (:class:`MissingExtraError`, exit 69)."""
    from selection_core.dataset import DATASET

    if args.output_format == DATASET:
        from selection_engine.dataset import require_dataset_extra

        require_dataset_extra()


def storage_options(args: argparse.Namespace) -> dict[str, object]:
    """The ``--storage-option`` values as one mapping (a later KEY wins), credentials masked: a flow run's
    parameters hold them as ``'**********'`` (see :mod:`selection_storage.stores.secrets`)."""
    options = dict(getattr(args, "storage_options", None) or [])
    if not options:
        return options
    from selection_storage.stores.secrets import masked  # pydantic: only for a store's options

    return masked(options)


def command_line_path(text: str | None) -> str | None:
    """A path given on a command line, as the flows take it: a URL as it is, a local path made absolute (a
    relative path means "from here", whatever the data root)."""
    import os

    from selection_storage.stores import is_url, local_text

    if not text:
        return None
    return text if is_url(text) else os.path.abspath(local_text(text))
