"""The command as a fresh install meets it: the base install runs ``select``, ``run``'s checks, ``explain`` and
``--help`` without the extras; a command that needs an extra says which in one line; ``select`` imports neither
Prefect nor the extractors; a reader that closes the pipe early ends the command quietly.

The missing extras are simulated by a ``sitecustomize`` that refuses to import their modules (a fault injected;
a real base install is checked by hand in a fresh virtual environment).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from selection_cli.main import COMMANDS, EXIT_BROKEN_PIPE
from selection_core.errors import EXIT_UNAVAILABLE, EXTRA_OF_MODULE
from tests.support import ROOT
from tests.support.faultkit import run_command

SAMPLE = ROOT / "examples" / "sample_extracted.json"

BLOCKER = """
import sys

BLOCKED = {blocked!r}


class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""


def _command(
    tmp_path: Path,
    *args: str,
    blocked: frozenset[str] = frozenset(),
    program: tuple[str, ...] = ("-m", "selection_cli.main"),
) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(blocked)))
    return run_command(
        args,
        tmp_path,
        # A program of its own starts Prefect's embedded server with Prefect's 20 s limit, not the command's 120 s.
        {"PYTHONPATH": str(site), "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"},
        drop=("PREFECT_API", "CONTENT_SELECTION_"),
        program=program,
        timeout=300,
    )


NO_EXTRAS = frozenset(EXTRA_OF_MODULE)


def test_help_and_select_run_without_any_extra(tmp_path: Path) -> None:
    done = _command(tmp_path, "--help", blocked=NO_EXTRAS)
    assert done.returncode == 0, done.stderr
    assert all(name in done.stdout for name in COMMANDS)
    batch = tmp_path / "batch_extracted.json"
    shutil.copy(SAMPLE, batch)
    done = _command(tmp_path, "select", batch.name, blocked=NO_EXTRAS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "articles: 12"
    assert (tmp_path / "batch_extracted_selected.json").is_file()
    done = _command(tmp_path, "explain", batch.name, "--index", "0", blocked=NO_EXTRAS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Article 0 of 12")


@pytest.mark.parametrize("command", ["extract", "pipeline"])
def test_a_command_whose_extra_is_missing_says_which_in_one_line(tmp_path: Path, command: str) -> None:
    done = _command(tmp_path, command, "pages", blocked=NO_EXTRAS)
    assert done.returncode == EXIT_UNAVAILABLE
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"content-selection: error: {command} needs the 'extract' extra")
    assert done.stderr.rstrip().endswith("pip install 'content-selection[extract]'")
    assert done.stdout == ""


API_WITHOUT_EXTRAS = """
import content_selection
from selection_core.errors import error_line

names = [getattr(content_selection, name) for name in content_selection.__all__]
print(len(names), "names")
try:
    content_selection.extract_articles("pages")
except Exception as exc:
    print(type(exc).__name__, error_line(exc))
"""


@pytest.mark.slow  # the flow's call starts Prefect's embedded server
def test_every_public_name_imports_without_any_extra_and_a_flow_that_needs_one_says_which(tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "a.html").write_text("<html><body><p>one page</p></body></html>")
    import content_selection

    done = _command(tmp_path, blocked=NO_EXTRAS, program=("-c", API_WITHOUT_EXTRAS))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"{len(content_selection.__all__)} names"
    assert lines[-1].startswith("MissingExtraError the extract step needs the 'extract' extra, which is not installed")
    assert lines[-1].endswith("install it with: pip install 'content-selection[extract]'")


def test_select_imports_neither_prefect_nor_the_extractors(tmp_path: Path) -> None:
    batch = tmp_path / "batch_extracted.json"
    shutil.copy(SAMPLE, batch)
    heavy = NO_EXTRAS | {"prefect", "pydantic", "fsspec", "httpx"}
    done = _command(tmp_path, "select", batch.name, blocked=heavy)
    assert done.returncode == 0, done.stderr


def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "CONTENT_SELECTION_"))}
    child = subprocess.Popen(
        [sys.executable, "-m", "selection_cli.main", "explain", str(SAMPLE), "--index", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader is gone before the command writes its first line (as `| head -0`)
    stderr = child.stderr.read()
    assert child.wait(timeout=300) == EXIT_BROKEN_PIPE
    assert stderr == b""


def test_every_optional_module_the_command_names_belongs_to_its_extra() -> None:
    """``EXTRA_OF_MODULE`` agrees with ``pyproject.toml``: each installed requirement of an extra that a command
    needs is known by (one of) its import names, under that extra."""
    requires = importlib.metadata.requires("content-selection") or []
    extras = {m.group(1) for r in requires if (m := re.search(r"extra == \"([a-z0-9-]+)\"", r))}
    assert set(EXTRA_OF_MODULE.values()) <= extras
    modules_of: dict[str, set[str]] = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        for dist in dists:
            modules_of.setdefault(re.sub(r"[-_.]+", "-", dist).lower(), set()).add(module)
    checked = 0
    for requirement in requires:
        extra = re.search(r"extra == \"(extract|dataset|s3|gcs|azure|dask)\"", requirement)
        name = re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement).group(0)).lower()  # type: ignore[union-attr]
        if extra is None or name not in modules_of:  # not installed here (gcs, azure in the dev install)
            continue
        known = {EXTRA_OF_MODULE.get(module) for module in modules_of[name]}
        assert extra.group(1) in known, f"{name} ({extra.group(1)}): none of {sorted(modules_of[name])} is listed"
        checked += 1
    assert checked >= 10


def test_an_object_path_without_its_backend_names_the_extra(tmp_path: Path) -> None:
    done = _command(tmp_path, "select", "s3://crawls/day_extracted.json", blocked=NO_EXTRAS)
    assert done.returncode == EXIT_UNAVAILABLE
    assert done.stderr.count("\n") == 1, done.stderr
    assert "s3:// paths need a backend that is not installed" in done.stderr
    assert done.stderr.rstrip().endswith("pip install 'content-selection[s3]'")
