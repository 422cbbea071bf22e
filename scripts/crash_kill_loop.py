#!/usr/bin/env python3
"""SIGKILL ``content-selection select`` many times on a large batch and print the tally.

    python scripts/crash_kill_loop.py --kills 200
    python scripts/crash_kill_loop.py --kills 50 --mb 40 --seed 7 --workdir /tmp/kills
    python scripts/crash_kill_loop.py --flow --kills 20 --mb 2   # kill select-content flow runs

The same trials as ``tests/storage/test_crash_safety.py`` (the checks live in
``tests/faultkit.py``), at a larger scale: a synthetic batch of ``--mb`` MB is
built in a temporary directory; each trial puts the target in one of three
states (absent, a previous complete output, the new output already there),
starts the real command, kills it with SIGKILL at a time drawn uniformly over
the length of an unkilled run (or, for ``--write-share`` of the trials, right
after its temporary file appears, because the write is only milliseconds of a
run), and checks: the input's SHA-256 is unchanged; the target holds nothing,
the previous output or the complete new one (byte-compared to a reference);
the next run succeeds, removes the killed run's temporary file and leaves the
unrelated files of the directory alone. Trials continue until ``--kills``
processes were actually killed (a run that finished before its kill is checked
but not counted). Exit status 0 when every kill was survived, 1 otherwise.

With ``--flow`` the process killed is a ``select-content`` flow run
(``python -m selection_cli.main run INPUT``) and the run after each kill is a flow run
too. It talks to ``$PREFECT_API_URL`` when set; otherwise the script starts a
``prefect server start`` on 127.0.0.1 with a temporary ``PREFECT_HOME`` and
stops it at the end. Every flow process imports Prefect, so a flow trial takes
seconds: use fewer kills.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.faultkit import CrashRig, child_env  # noqa: E402

STATES = ("absent", "previous", "current")
FLOW_CMD = (sys.executable, "-m", "selection_cli.main", "run")


@contextlib.contextmanager
def prefect_api() -> Iterator[str]:
    """``$PREFECT_API_URL``, or a ``prefect server start`` of our own for the duration."""
    if os.environ.get("PREFECT_API_URL"):
        yield os.environ["PREFECT_API_URL"]
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="crash-kill-prefect-") as home:
        env = {**child_env(), "PREFECT_HOME": home, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        env.pop("PREFECT_API_URL", None)
        server = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}/api"
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/health", timeout=2):
                        break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit("could not start prefect server start; set PREFECT_API_URL") from None
                    time.sleep(0.5)
            os.environ["PREFECT_HOME"] = home
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200, help="processes to kill (default 200)")
    parser.add_argument("--mb", type=float, default=20.0, help="size of the synthetic batch in MB (default 20)")
    parser.add_argument("--seed", type=int, default=20240506, help="seed of the batch and of the kill times")
    parser.add_argument(
        "--write-share", type=float, default=0.25, help="share of kills aimed at the write (default 0.25)"
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="directory to work in (default: a new temporary one)"
    )
    parser.add_argument("--flow", action="store_true", help="kill select-content flow runs instead of the command")
    args = parser.parse_args(argv)

    with contextlib.ExitStack() as stack:
        d = stack.enter_context(tempfile.TemporaryDirectory(prefix="crash-kill-", dir=args.workdir))
        started = time.monotonic()
        if args.flow:
            env = {**child_env(), "PREFECT_API_URL": stack.enter_context(prefect_api())}

            def recover(inp: Path) -> str | None:
                proc = subprocess.run([*FLOW_CMD, str(inp)], env=env, capture_output=True, text=True, check=False)
                return None if proc.returncode == 0 else f"status {proc.returncode}: {proc.stderr.strip()[-300:]}"

            rig = CrashRig(Path(d), int(args.mb * 1_000_000), args.seed, command=FLOW_CMD, env=env, recover=recover)
        else:
            rig = CrashRig(Path(d), int(args.mb * 1_000_000), seed=args.seed)
        duration = rig.measure(runs=1 if args.flow else 3)
        print(
            f"batch: {rig.input.stat().st_size} bytes, output {len(rig.reference)} bytes; "
            f"an unkilled run takes {duration:.2f} s; killing {args.kills} runs",
            flush=True,
        )
        rng = random.Random(args.seed)
        kills = survived = trials = 0
        phases: Counter[str] = Counter()
        failures: list[str] = []
        while kills < args.kills:
            at_write = rng.random() < args.write_share
            delay = rng.uniform(0.0, 0.004) if at_write else rng.uniform(0.0, duration * 1.05)
            state = STATES[trials % len(STATES)]
            outcome = rig.kill_trial(state, delay, at_write=at_write)
            trials += 1
            phases[outcome.phase] += 1
            if outcome.killed:
                kills += 1
                survived += not outcome.problems
            for problem in outcome.problems:
                failures.append(f"trial {trials} (target {state}, delay {delay:.3f}s, at_write={at_write}): {problem}")
                print(f"FAIL {failures[-1]}", flush=True)
            if trials % 20 == 0:
                print(f"  {trials} trials, {kills} kills, {survived} survived", flush=True)
        elapsed = time.monotonic() - started
    print(
        f"phases: {dict(sorted(phases.items()))} (during-write: a temporary file was left and the next run removed it)"
    )
    print(f"trials: {trials} ({trials - kills} finished before their kill); time {elapsed:.0f} s")
    print(f"kills survived / kills tried: {survived} / {kills}")
    return 0 if survived == kills and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
