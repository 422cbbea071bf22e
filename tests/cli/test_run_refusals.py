"""``content-selection run`` refuses a bad input before Prefect starts, in the words of ``select``.

Each case runs the real command in a subprocess (a temporary ``PREFECT_HOME``, no
``PREFECT_API_URL``): the exit status is 65, stderr is exactly one line, the same
message as ``content-selection select`` gives for the same file, and Prefect was
never imported, so no embedded server was started. The refusal names the data-root
setting the user actually used (``--data-root`` or the environment variable).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from selection_core.errors import EXIT_INVALID_INPUT, EXIT_UNAVAILABLE
from tests.support import ROOT
from tests.support.faultkit import run_command
from tests.support.prefect_fixtures import free_port

#: Runs the command's entry point, then says on stdout whether Prefect was imported.
_PROBE = (
    "import sys\n"
    "from selection_cli.main import main\n"
    "status = main(sys.argv[1:])\n"
    "print('prefect imported' if 'prefect' in sys.modules else 'prefect not imported')\n"
    "sys.exit(status)\n"
)


def _command(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_command(args, ROOT, {"PREFECT_HOME": str(tmp_path / "prefect-home"), **env}, program=("-c", _PROBE))


def _message(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0].split(": error: ", 1)[1]


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(None, id="missing-file"),
        pytest.param(b'{"articles": [', id="truncated-json"),
        pytest.param(b'{"articles": {}}', id="articles-not-an-array"),
        pytest.param(b'{"articles": [], "run": tru}', id="bad-envelope"),
    ],
)
def test_run_refuses_a_bad_input_once_without_starting_prefect(tmp_path: Path, content: bytes | None) -> None:
    batch = tmp_path / "b_extracted.json"
    if content is not None:
        batch.write_bytes(content)

    run = _command(["run", str(batch)], tmp_path)
    select = _command(["select", str(batch)], tmp_path)

    assert run.returncode == EXIT_INVALID_INPUT, run.stderr
    assert run.stdout.splitlines() == ["prefect not imported"]
    assert select.returncode == EXIT_INVALID_INPUT
    assert _message(run.stderr) == _message(select.stderr)
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "b_extracted_selected.json").exists()
    assert not (tmp_path / "prefect-home").exists()  # nothing of Prefect's was set up


def test_the_servers_mask_given_as_a_credential_is_refused_before_the_store_and_prefect(tmp_path: Path) -> None:
    """``'**********'``, what a run started from stored parameters gets for a masked credential, is no credential:
    refused in one line, before Prefect and before any request to the store (its endpoint, port 9 of loopback, answers
    nothing: a request would fail with another line)."""
    mask = "**********"
    args = ["run", "s3://no-bucket/b_extracted.json", "--storage-option", f"secret={mask}"]

    run = _command([*args, "--storage-option", "endpoint_url=http://127.0.0.1:9"], tmp_path)

    assert run.returncode == EXIT_INVALID_INPUT, run.stderr
    assert run.stdout.splitlines() == ["prefect not imported"]
    assert _message(run.stderr).startswith(
        f"storage option 'secret' is '{mask}', the mask the Prefect server stores instead of a credential"
    )


@pytest.mark.slow
def test_a_bad_article_is_refused_by_the_run_on_its_last_line_in_select_s_words(tmp_path: Path) -> None:
    # The check before Prefect is the first pass only (it reads the file once, without holding it,
    # and does not parse the articles): validating every article there would parse the whole batch
    # twice on every good run. The run itself refuses the article, once, on its last line.
    batch = tmp_path / "b_extracted.json"
    batch.write_bytes(b'{"articles": [{"id": "a"}, 5]}')
    run = _command(["run", str(batch)], tmp_path)
    select = _command(["select", str(batch)], tmp_path)
    assert run.returncode == select.returncode == EXIT_INVALID_INPUT, run.stderr
    last = run.stderr.splitlines()[-1]
    assert last.split(": error: ", 1)[1] == _message(select.stderr)
    assert run.stderr.count("$.articles[1] is a number") == 1 and "Traceback" not in run.stderr
    assert not (tmp_path / "b_extracted_selected.json").exists()


def test_a_chunked_run_refuses_a_truncated_batch_before_prefect(tmp_path: Path) -> None:
    batch = tmp_path / "b_extracted.json"
    batch.write_bytes(b'{"articles": [{"id": "a"}')
    run = _command(["run", str(batch), "--chunk-size", "1"], tmp_path)
    assert run.returncode == EXIT_INVALID_INPUT
    assert run.stdout.splitlines() == ["prefect not imported"]
    assert "after $.articles[0] at byte offset 25, the file ends" in _message(run.stderr)


def _outside_root(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    root.mkdir()
    batch = tmp_path / "b_extracted.json"
    batch.write_bytes(b'{"articles": []}')
    return root, batch


def test_the_refusal_names_the_data_root_option_when_it_was_given(tmp_path: Path) -> None:
    root, batch = _outside_root(tmp_path)
    run = _command(["run", str(batch), "--data-root", str(root)], tmp_path)
    assert run.returncode == EXIT_INVALID_INPUT
    message = _message(run.stderr)
    assert "outside the data root" in message and message.endswith("(move the file there or change --data-root)")
    assert "CONTENT_SELECTION_DATA_ROOT" not in message


def test_the_refusal_names_the_environment_variable_when_it_set_the_root(tmp_path: Path) -> None:
    root, batch = _outside_root(tmp_path)
    run = _command(["run", str(batch)], tmp_path, CONTENT_SELECTION_DATA_ROOT=str(root))
    assert run.returncode == EXIT_INVALID_INPUT
    assert _message(run.stderr).endswith("(move the file there or change CONTENT_SELECTION_DATA_ROOT)")


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        pytest.param(["--data-root", "{missing}"], {}, "--data-root", id="option"),
        pytest.param([], {"CONTENT_SELECTION_DATA_ROOT": "{missing}"}, "CONTENT_SELECTION_DATA_ROOT", id="environment"),
    ],
)
@pytest.mark.parametrize("command", ["run", "serve"])
def test_a_missing_data_root_is_named_as_it_was_set(
    tmp_path: Path, command: str, args: list[str], env: dict[str, str], named: str
) -> None:
    missing = str(tmp_path / "missing")
    args = [a.replace("{missing}", missing) for a in args]
    env = {k: v.replace("{missing}", missing) for k, v in env.items()}
    batch = tmp_path / "b_extracted.json"
    batch.write_bytes(b'{"articles": []}')
    command_args = [command, str(batch), *args] if command == "run" else [command, *args]
    # serve checks for a server address first; nothing is contacted before the data root is refused
    result = _command(command_args, tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api", **env)
    assert result.returncode == EXIT_INVALID_INPUT, result.stderr
    message = _message(result.stderr)
    assert message.startswith(f"data root {missing!r} does not exist")
    assert message.endswith(f"point {named} at an existing directory")


@pytest.mark.slow
def test_a_run_that_fails_inside_the_flow_says_why_once_on_its_last_line(tmp_path: Path) -> None:
    """A chunked run validates its articles in the chunks: this one fails in the flow run
    (the embedded server started), and its error is still said once, last."""
    batch = tmp_path / "b_extracted.json"
    batch.write_bytes(b'{"articles": [{"id": "a"}, 5]}')  # delimited by the layout scan, invalid in a chunk
    run = _command(["run", str(batch), "--chunk-size", "1"], tmp_path)
    assert run.returncode == EXIT_INVALID_INPUT, run.stderr
    assert run.stdout.splitlines() == ["prefect imported"]
    lines = run.stderr.splitlines()
    assert (
        lines[-1]
        == f"content-selection run: error: {batch}: $.articles[1] is a number; every article must be a JSON object"
    )
    assert sum("every article must be a JSON object" in line for line in lines) == 1, run.stderr
    assert "Traceback" not in run.stderr


def test_an_unreachable_dask_scheduler_is_refused_in_one_line_before_prefect(tmp_path: Path) -> None:
    batch = tmp_path / "b_extracted.json"
    batch.write_bytes(b'{"articles": []}')
    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    run = _command(["run", str(batch), "--dask-address", address], tmp_path)
    assert run.returncode == EXIT_UNAVAILABLE, run.stderr
    assert run.stdout.splitlines() == ["prefect not imported"]
    message = _message(run.stderr)
    assert message.startswith(f"cannot reach the Dask scheduler at {address}") and "check that it is running" in message
    assert not (tmp_path / "b_extracted_selected.json").exists()
