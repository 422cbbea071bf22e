"""Shared tools of the reliability tests (issue 6) and of ``scripts/crash_kill_loop.py``.

Nothing here is a test. It builds deterministic synthetic batches, runs the real
``content-selection select`` command in a subprocess, and checks the invariants
that every fault test asserts: the input's bytes are unchanged, the target holds
nothing, the previous output or the complete new one, and no temporary file of
ours is left beside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tests.support import ROOT

#: How ``selection_storage.atomic.write_atomic`` names its temporary files.
TMP_NAME = re.compile(r"\A\.(?P<target>.+)\.[0-9a-f]{8}-(?P<pid>\d+)\.[0-9a-f]{16}(-[0-9a-f]{8})?\.cs-tmp\Z")

#: Exit statuses of ``selection_core.errors`` (repeated here on purpose: a test
#: that imported them could not notice that they changed).
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_INVALID_INPUT = 65
EXIT_IO_ERROR = 74

#: The command under test, as a user runs it (no orchestrator).
SELECT_CMD: tuple[str, ...] = (sys.executable, "-m", "selection_cli.main", "select")

_VOCAB_SIZE = 4000
_BOILERPLATE = "Subscribe to our newsletter Share this article on social media Read more Cookie settings"


def load_bad_corpus_script() -> Any:
    """``scripts/make_bad_corpus.py`` as a module (its case generators and constants)."""
    import importlib.util

    path = ROOT / "scripts" / "make_bad_corpus.py"
    spec = importlib.util.spec_from_file_location("make_bad_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(_VOCAB_SIZE)}
    return sorted(words)


def synthetic_article(rng: random.Random, vocab: Sequence[str], index: int, words: int) -> dict[str, Any]:
    """One article whose three extractors mostly agree, with the usual differences:
    boilerplate, a truncated text, Markdown, entities, errors, missing blocks."""
    body = " ".join(rng.choice(vocab) for _ in range(words))
    sentences = body.split(" ")
    cut = max(1, len(sentences) * rng.randint(40, 95) // 100)
    variant = index % 7
    trafilatura: dict[str, Any] = {"text": body, "error": None}
    newspaper4k: dict[str, Any] = {"text": " ".join(sentences[:cut]), "authors": ["A. Writer"], "error": None}
    readability: dict[str, Any] = {"cleaned_text": f"{_BOILERPLATE} {body} {_BOILERPLATE}", "title": f"t{index}"}
    if variant == 0:
        readability["cleaned_text"] = body
    elif variant == 1:
        trafilatura["text"] = f"![img](http://x/{index}.png) [{sentences[0]}](http://x) " + body.replace(
            " ", " &amp; ", 3
        )
    elif variant == 2:
        readability["error"] = "timeout"
    elif variant == 3:
        del newspaper4k["text"]
    elif variant == 4:
        trafilatura = {"text": "", "error": "empty page"}
    elif variant == 5:
        readability["cleaned_text"] = 42
    article: dict[str, Any] = {
        "id": f"art-{index:07d}",
        "url": f"https://example.org/{index}",
        "trafilatura": trafilatura,
        "newspaper4k": newspaper4k,
        "readability": readability,
        "meta": {"rank": index, "score": rng.random(), "tags": ["x", "ü", "日本"][: index % 4]},
    }
    if variant == 6:
        article["selected_extractor"] = "trafilatura"  # replaced in place
    return article


def synthetic_batch(target_bytes: int, seed: int = 6, words: int = 120) -> bytes:
    """Batch bytes of about ``target_bytes``, the same on every run and machine."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    articles: list[dict[str, Any]] = []
    size = 0
    while size < target_bytes:
        art = synthetic_article(rng, vocab, len(articles), words)
        size += len(orjson.dumps(art)) + 8
        articles.append(art)
    doc = {
        "batch": f"synthetic-{seed}",
        "source": {"generator": "tests/faultkit.py", "seed": seed},
        "articles": articles,
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def sha256(path: str | os.PathLike[str]) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def listing(directory: str | os.PathLike[str]) -> dict[str, str]:
    """Every entry of a directory with the SHA-256 of its bytes (or its kind)."""
    out: dict[str, str] = {}
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        if entry.is_symlink():
            out[entry.name] = "symlink->" + os.readlink(entry.path)
        elif entry.is_dir():
            out[entry.name] = "dir"
        else:
            try:
                out[entry.name] = hashlib.sha256(Path(entry.path).read_bytes()).hexdigest()
            except OSError as exc:
                out[entry.name] = f"unreadable:{exc.errno}"
    return out


def temporaries(directory: str | os.PathLike[str]) -> list[str]:
    """Names of the temporary files of ``write_atomic`` in ``directory``."""
    return sorted(name for name in os.listdir(directory) if TMP_NAME.match(name))


def run_select(
    args: Sequence[str | os.PathLike[str]], timeout: float = 120, cwd: str | os.PathLike[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``content-selection select ARGS`` to completion, capturing its output."""
    return subprocess.run(
        [*SELECT_CMD, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=child_env(),
        check=False,
    )


def child_env() -> dict[str, str]:
    """The environment of the command: ours, minus a terminal (no progress bar) and
    with hash randomization left on, so that a run could not depend on it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.pop("PYTHONHASHSEED", None)
    return env


def command_env(env: dict[str, str] | None = None, drop: tuple[str, ...] = ("PREFECT_",)) -> dict[str, str]:
    """A command's environment, as a user's shell gives it: :func:`child_env` without the settings whose names
    start with ``drop`` (this session's Prefect settings: a command finds its own), then ``env``."""
    return {k: v for k, v in child_env().items() if not k.startswith(drop)} | (env or {})


def start_command(
    args: Sequence[str], cwd: Path, env: dict[str, str], log: Path, **popen: Any
) -> subprocess.Popen[bytes]:
    """Start the command line in a fresh interpreter with :func:`command_env` and ``env``, its output appended to
    ``log``; stdin closed."""
    with open(log, "ab") as sink:
        return subprocess.Popen([sys.executable, "-m", "selection_cli.main", *args], cwd=cwd, env=command_env(env),
                                stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **popen)  # fmt: skip


def run_command(
    args: Sequence[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    *,
    drop: tuple[str, ...] = ("PREFECT_", "CONTENT_SELECTION_DATA"),
    program: Sequence[str] = ("-m", "selection_cli.main"),
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run the command line in a fresh interpreter, as a user does (:func:`command_env`); stdin closed, output
    captured as text."""
    return subprocess.run(
        [sys.executable, *program, *args],
        cwd=cwd,
        env=command_env(env, drop),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


def stderr_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# --------------------------------------------------------------------------- kills


@dataclass
class KillOutcome:
    """What one kill trial found. ``phase`` says where the kill landed, as seen
    from outside: ``before-write`` (target as before, no temporary file),
    ``during-write`` (a temporary file was left), ``after-replace`` (the new
    output is in place), ``rerun`` (the target already held the new output and
    no temporary file was left) or ``exited`` (the run finished before the kill)."""

    killed: bool
    phase: str
    problems: list[str]


class CrashRig:
    """A directory with a large input, its reference output and the kill checks.

    ``prepare(state)`` puts the target in one of the states a kill may meet:
    ``absent``, ``previous`` (a complete output of an older batch), ``current``
    (the complete new output, i.e. a re-run).
    """

    def __init__(
        self,
        workdir: Path,
        batch_bytes: int,
        seed: int = 6,
        command: Sequence[str] = SELECT_CMD,
        env: dict[str, str] | None = None,
        recover: Callable[[Path], str | None] | None = None,
    ) -> None:
        """``command`` is started with the input path appended (the select command
        by default, or the flow's ``python -m selection_cli.main run``); ``recover(input)``
        runs one complete run after a kill and returns None or what went wrong
        (default: the select command)."""
        self.command = tuple(command)
        self.env = env or child_env()
        self.recover = recover or _recover_with_select
        self.dir = workdir
        self.input = workdir / "big_extracted.json"
        self.target = workdir / "big_extracted_selected.json"
        self.bystander = workdir / ".big_extracted_selected.json.not-ours.cs-tmp"
        self.input.write_bytes(synthetic_batch(batch_bytes, seed))
        self.input_sha = sha256(self.input)
        # Unrelated files that look a little like ours: they must never be removed.
        self.bystander.write_bytes(b"not a temporary file of content-selection\n")
        (workdir / "notes.txt").write_bytes(b"keep me\n")
        old = workdir / "old_extracted.json"
        old.write_bytes(synthetic_batch(20_000, seed + 1))
        self._run_ok([old, "--output", self.target])
        self.previous = self.target.read_bytes()
        old.unlink()
        self.target.unlink()
        self._run_ok([self.input])
        self.reference = self.target.read_bytes()
        self.target.unlink()
        self.unrelated = {n: h for n, h in listing(workdir).items() if n not in (self.input.name, self.target.name)}

    def _run_ok(self, args: Sequence[str | os.PathLike[str]]) -> None:
        proc = run_select(args)
        if proc.returncode != 0:
            raise AssertionError(f"reference run failed ({proc.returncode}): {proc.stderr.strip()}")

    def prepare(self, state: str) -> bytes | None:
        if state == "absent":
            with contextlib.suppress(FileNotFoundError):
                self.target.unlink()
            return None
        data = self.previous if state == "previous" else self.reference
        self.target.write_bytes(data)
        return data

    def start(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [*self.command, str(self.input)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=self.env,
        )

    def measure(self, runs: int = 1) -> float:
        """Seconds of an unkilled run of the command, the shortest of ``runs``
        (to spread the kill times over it; a slow outlier would waste kills)."""
        import time

        times = []
        for _ in range(runs):
            self.prepare("absent")
            start = time.monotonic()
            proc = subprocess.run([*self.command, str(self.input)], capture_output=True, text=True, env=self.env)
            times.append(time.monotonic() - start)
            if proc.returncode != 0 or self.target.read_bytes() != self.reference:
                raise AssertionError(f"an unkilled run failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
        return min(times)

    def check_after_kill(self, before: bytes | None) -> tuple[str, list[str]]:
        problems: list[str] = []
        if sha256(self.input) != self.input_sha:
            problems.append("the input's bytes changed")
        phase = "before-write" if before != self.reference else "rerun"
        if self.target.exists():
            now = self.target.read_bytes()
            if now == self.reference:
                phase = "after-replace" if before != self.reference else "rerun"
            elif now != before:
                problems.append(f"the target holds {len(now)} bytes that are neither the previous nor the new output")
            else:
                try:  # the previous output must still be a complete, valid batch
                    orjson.loads(now)
                except orjson.JSONDecodeError:
                    problems.append("the previous output is no longer valid JSON")
        elif before is not None:
            problems.append("the previous output disappeared")
        if temporaries(self.dir):
            phase = "during-write"
        return phase, problems

    def check_recovery(self) -> list[str]:
        """Run to completion after a kill: it must succeed, clean up, keep the rest."""
        problems: list[str] = []
        stale = temporaries(self.dir)
        failure = self.recover(self.input)
        if failure:
            problems.append(f"the run after the kill failed: {failure}")
        if not self.target.exists() or self.target.read_bytes() != self.reference:
            problems.append("the run after the kill did not write the reference output")
        left = temporaries(self.dir)
        if left:
            problems.append(f"temporary files left after the next run: {left} (were {stale})")
        if sha256(self.input) != self.input_sha:
            problems.append("the input's bytes changed")
        now = {n: h for n, h in listing(self.dir).items() if n not in (self.input.name, self.target.name)}
        if now != self.unrelated:
            problems.append(f"unrelated files changed: {sorted(set(now.items()) ^ set(self.unrelated.items()))}")
        return problems

    def kill_trial(self, state: str, delay: float, at_write: bool = False, recover: bool = True) -> KillOutcome:
        """Start a run on a target in ``state`` and SIGKILL it, then check.

        The kill comes ``delay`` seconds after the start or, with ``at_write``,
        ``delay`` seconds after its temporary file appears (the write window is
        a few milliseconds of a run, so uniform kill times seldom land in it).
        """
        import signal
        import time

        before = self.prepare(state)
        existing = set(temporaries(self.dir))
        proc = self.start()
        try:
            if at_write:
                give_up = time.monotonic() + 120
                while proc.poll() is None and time.monotonic() < give_up:
                    if set(temporaries(self.dir)) - existing:
                        break
            deadline = time.monotonic() + delay
            while time.monotonic() < deadline and proc.poll() is None:
                time.sleep(min(0.002, max(0.0, deadline - time.monotonic())))
            killed = proc.poll() is None
            if killed:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        killed = killed and proc.returncode == -signal.SIGKILL
        phase, problems = self.check_after_kill(before)
        if not killed:
            phase = "exited"
            if proc.returncode != 0:
                problems.append(f"an unkilled run failed with status {proc.returncode}")
        if recover:
            problems += self.check_recovery()
        return KillOutcome(killed, phase, problems)


def _recover_with_select(inp: Path) -> str | None:
    proc = run_select([inp])
    return None if proc.returncode == 0 else f"status {proc.returncode}: {proc.stderr.strip()}"


def kill_delays(rng: random.Random, count: int, duration: float) -> list[float]:
    """Kill times spread uniformly over a little more than one run."""
    return [rng.uniform(0.0, duration * 1.05) for _ in range(count)]


# --------------------------------------------------------------------------- tiny file systems


def can_mount() -> str | None:
    """None when this process may mount a tmpfs; else the reason it may not."""
    if sys.platform != "linux":
        return "tmpfs mounts need Linux"
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root (run as root or in a privileged container)"
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", d], capture_output=True, text=True)
        if proc.returncode != 0:
            return f"mounting a tmpfs is not permitted here: {proc.stderr.strip() or proc.returncode}"
        subprocess.run(["umount", d], check=True)
    return None


@contextlib.contextmanager
def tmpfs(mountpoint: Path, size: str, readonly: bool = False) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` on ``mountpoint`` for the duration of the block."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if readonly else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mountpoint)], check=True, capture_output=True)
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False, capture_output=True)
