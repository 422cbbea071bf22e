"""Run extractors on every real page, repeatedly, in shuffled orders: the child process of the determinism tests.

    python -m tests.support.extract_repeatedly --seed 1 --repeats 2 [--function NAME ...]

Prints one JSON object: ``{page id: {function name: [SHA-256 of each call's result]}}``,
the result being the text, the title and the exception type of the call. Between
calls it keeps a random number of small lxml trees alive, so that the pages' elements
are allocated at other addresses from one call to the next (the way a long extraction
run's memory moves), which is what set-ordered code is sensitive to.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import warnings
from typing import Any

#: The adapters the determinism tests run by default: the three the extract step uses.
DEFAULT_FUNCTIONS = ("extract_trafilatura", "extract_newspaper4k", "extract_readability")


def _digest(function: Any, html: str, url: str | None) -> str:
    try:
        text, title = function(html, url)
        result = ["ok", text, title]
    except Exception as exc:  # noqa: BLE001 - the exception's type is part of the result
        result = ["error", type(exc).__name__, None]
    return hashlib.sha256(json.dumps(result).encode("utf-8")).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--function", action="append", dest="functions")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from selection_extraction import adapters
    from selection_extraction.pool import quiet_libraries
    from tests.support.real_pages import AllocationNoise, real_pages

    adapters.prepare_worker()
    quiet_libraries()
    functions = {name: getattr(adapters, name) for name in args.functions or DEFAULT_FUNCTIONS}
    pages = real_pages()
    rng = random.Random(args.seed)
    noise = AllocationNoise(args.seed)
    digests: dict[str, dict[str, list[str]]] = {p.id: {name: [] for name in functions} for p in pages}
    for _ in range(args.repeats):
        order = list(pages)
        rng.shuffle(order)
        for page in order:
            for name, function in functions.items():
                noise.shake()
                digests[page.id][name].append(_digest(function, page.html, page.url))
    json.dump(digests, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
