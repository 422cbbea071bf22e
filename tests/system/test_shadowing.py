"""A user's Prefect project with its own ``flows``, ``tasks`` and ``deployments`` packages composes this one.

The project is built into a wheel (whose top-level names are the project's own: nothing called ``flows``,
``tasks`` or ``deployments``) and installed, non-editable, into a folder of its own; a throw-away project beside
it has ``flows/``, ``tasks/`` and ``deployments/`` packages of its own, each of which raises on import. Run from
inside that project, with only the installed copy on ``sys.path``:

(a) ``from content_selection import emit_batch_extracted`` imports, and the call returns (``None`` or an
    event: with no API configured Prefect emits into nothing);
(b) a flow of the user's calls ``select_content`` as a subflow, on Prefect's embedded API, and selects a batch;
(c) ``content-selection select`` (the installed console script) selects a batch.

The wheel builds offline: ``--no-build-isolation --no-index`` uses the setuptools of this environment (at
least 77, from the ``dev`` extra).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest

from tests.support import PACKAGES, ROOT

pytestmark = pytest.mark.slow

#: What the install needs from the repository.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", *(p for p in PACKAGES if "/" not in p))  # nested: copied within

EMIT_SCRIPT = """
import sys
from content_selection import emit_batch_extracted
import content_selection
event = emit_batch_extracted(sys.argv[1])
print("emitted:", type(event).__name__)
print("from:", content_selection.__file__)
"""

#: A flow of the user's that composes the stage: ``select_content`` as a subflow.
SUBFLOW_SCRIPT = """
import sys
from prefect import flow
from content_selection import select_content

@flow(name="users-nightly")
def nightly(path: str) -> str:
    summary = select_content(input_path=path)
    return summary.output_path

print("selected:", nightly(sys.argv[1]))
"""

#: What the wheel may install at the top of site-packages.
TOP_LEVEL = {
    "content_selection",
    "selection_cli",
    "selection_core",
    "selection_crawl",
    "selection_engine",
    "selection_extraction",
    "selection_storage",
}


def _install(target: Path, scratch: Path) -> None:
    """Build the project's wheel offline, check its top-level names, and install it into ``target``."""
    pytest.importorskip("setuptools", minversion="77", reason="the build needs setuptools>=77 (the dev extra)")
    source = scratch / "source"
    source.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        else:
            shutil.copy2(path, source / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_NO_INPUT"] = "1"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    offline = ["--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    wheels = scratch / "wheels"
    for argv in ([*pip, "wheel", *offline, "-w", str(wheels), str(source)], None):
        if argv is None:
            (wheel,) = wheels.glob("content_selection-*.whl")
            with zipfile.ZipFile(wheel) as archive:
                tops = {n.split("/")[0] for n in archive.namelist() if not n.split("/")[0].endswith(".dist-info")}
            assert tops == TOP_LEVEL
            argv = [*pip, "install", *offline, "--target", str(target), str(wheel)]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=scratch, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _user_project(root: Path) -> Path:
    """A project whose own ``flows``, ``tasks`` and ``deployments`` raise if anything imports them."""
    for package in ("flows", "tasks", "deployments"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text(f'raise ImportError("the user\'s own {package} was imported")\n')
    return root


def test_a_users_project_with_its_own_flows_tasks_and_deployments_composes_the_installed_wheel(tmp_path: Path) -> None:
    target = tmp_path / "site"
    _install(target, tmp_path)
    project = _user_project(tmp_path / "project")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CONTENT_SELECTION_"))}
    env.update(
        PYTHONPATH=str(target),
        PREFECT_HOME=str(tmp_path / "prefect-home"),
        HOME=str(tmp_path / "home"),
        PYTHONNOUSERSITE="1",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        # the embedded API may start slowly on a busy machine (20 s by default; the stage's commands allow 120 s)
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120",
    )

    # (a) the contract a user's flow imports
    (project / "upstream.py").write_text(EMIT_SCRIPT)
    batch = project / "today_extracted.json"
    text = "the city council voted on tuesday evening to fund the new library"
    article = {
        "id": 1,
        "trafilatura": {"text": text, "error": None},
        "newspaper4k": {"text": text + " share this", "error": None},
        "readability": {"cleaned_text": text, "error": None},
    }
    batch.write_bytes(orjson.dumps({"articles": [article]}))
    done = subprocess.run(
        [sys.executable, "upstream.py", str(batch)], capture_output=True, text=True, env=env, cwd=project, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] in ("emitted: NoneType", "emitted: Event"), done.stdout
    assert done.stdout.splitlines()[1] == f"from: {target / 'content_selection' / '__init__.py'}"

    # (b) the user's flow runs select_content as a subflow (Prefect's embedded API)
    (project / "nightly.py").write_text(SUBFLOW_SCRIPT)
    nightly = project / "nightly_extracted.json"
    nightly.write_bytes(batch.read_bytes())
    done = subprocess.run(
        [sys.executable, "nightly.py", str(nightly)], capture_output=True, text=True, env=env, cwd=project, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    selected = project / "nightly_extracted_selected.json"
    assert done.stdout.splitlines()[-1] == f"selected: {selected}"

    # (c) the installed command
    command = target / "bin" / "content-selection"
    argv = [str(command)] if command.exists() else [sys.executable, "-m", "selection_cli.main"]
    done = subprocess.run(
        [*argv, "select", batch.name], capture_output=True, text=True, env=env, cwd=project, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    output = project / "today_extracted_selected.json"
    assert done.stdout.splitlines()[0] == "articles: 1"
    assert done.stdout.splitlines()[-1] == f"output: {output.name}"
    assert orjson.loads(output.read_bytes())["articles"][0]["selected_extractor"] in (
        "trafilatura",
        "newspaper4k",
        "readability",
    )
    assert selected.read_bytes() == output.read_bytes()  # the subflow wrote what the command writes
