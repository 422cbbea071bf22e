#!/usr/bin/env python3
"""Determinism of the extractors: real pages that give more than one result over repeated calls.

    python benchmarks/determinism.py                                 # 3 processes x 2 calls per page
    python benchmarks/determinism.py --pages 10 --processes 2 --repeats 1 # smoke run

Pages: the real pages of ``tests/data/aeb-pages`` and ``tests/data/pages`` (their
manifests, for the URLs); a page listed in both (same URL, same bytes) is counted once.
Plus a synthetic tie page: two ``div class="story"`` (one in ``body``, one in a ``section``)
with one paragraph each, whose texts tie for newspaper4k's top gravity score.

**Repeated calls.** ``--processes`` fresh processes, each with its own ``PYTHONHASHSEED``,
read and decode every page once, then call every function on every page ``--repeats``
times (the tie page ``--tie-repeats`` times), all calls in one shuffled order (seeded per
process), with a random number of small lxml trees (``lxml.html.fromstring``, seeded) freed
and made alive between calls, so that the allocator hands out different addresses. Each
process prints, per function and page, the SHA-256 digests of the (text, title, error type)
it saw; a page is unstable for a function when the processes together saw more than one.
Functions: newspaper4k before the fix (``newspaper4k_default``, the library's call) and
after (``extract_newspaper4k``), readability's default call (``readability_default``) and
the adapter (``extract_readability``), trafilatura's one call (``extract_trafilatura``).

**Pages at risk** (deterministic, in this process): pages whose newspaper4k text changes
when the body extractor's two ``set``-ordered lists (the candidate ``div`` s of
``nodes_to_check`` and the scored parents of ``compute_gravity_scores``) are put in the
reverse of the fixed order (:class:`ReversedTieOrder`, installed on the article as
``adapters.newspaper4k_article`` does): the pages on which, before the fix, the allocator
could decide the text.

Writes benchmarks/out/determinism.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import OUT, ROOT, machine  # noqa: E402

sys.path.insert(0, str(ROOT))  # tests.support: the libraries' default calls

PAGE_FOLDERS = (ROOT / "tests/data/aeb-pages", ROOT / "tests/data/pages")

#: (extractor, "before" | "after") -> the function of ``selection_extraction.adapters`` ("after") or of
#: ``tests.support.reference_extractors`` ("before").
FUNCTIONS: dict[tuple[str, str], str] = {
    ("trafilatura", "after"): "extract_trafilatura",
    ("newspaper4k", "before"): "newspaper4k_default",
    ("newspaper4k", "after"): "extract_newspaper4k",
    ("readability", "before"): "readability_default",
    ("readability", "after"): "extract_readability",
}

TIE_ID = "synthetic-tie"
TIE_URL = "https://example.org/news/tie"
TIE_TEXTS = (
    "The council said that it would open the new bridge to all of the people in the town by the end of the year.",
    "The mayor said that it would open the new road to all of the people in the town by the end of the year.",
)
TIE_HTML = (
    "<html><head><title>Two stories</title></head><body>"
    f'<div class="story"><p>{TIE_TEXTS[0]}</p></div>'
    f'<section><div class="story"><p>{TIE_TEXTS[1]}</p></div></section>'
    "</body></html>"
)

#: The small tree allocated between calls to move the allocator.
SMALL_TREE = "<div><p>x</p></div>"


def _quiet() -> None:
    from selection_extraction.pool import quiet_libraries

    quiet_libraries()


def outcome(function: Any, html: str, url: str | None) -> list[Any]:
    """``["ok", text, title]`` or ``["error", exception type name]``."""
    try:
        text, title = function(html, url)
    except Exception as exc:  # noqa: BLE001 - an exception is an outcome, compared by its type name
        return ["error", type(exc).__name__]
    return ["ok", text, title]


def digest(result: list[Any]) -> str:
    return hashlib.sha256(json.dumps(result, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


# --------------------------------------------------------------------------- child


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """Every function on every page, repeatedly, in a shuffled order, with the allocator moved between calls."""
    import lxml.html

    from selection_extraction import adapters
    from selection_extraction.decode import decode_html
    from selection_extraction.pages import Page, read_page
    from tests.support import reference_extractors as reference

    _quiet()
    adapters.prepare_worker()
    rng = random.Random(spec["seed"])
    html: dict[str, tuple[str, str | None]] = {TIE_ID: (TIE_HTML, TIE_URL)}
    for page_id, file, url, encoding in spec["pages"]:
        page = Page(page_id, url, file, Path(file), encoding)
        html[page_id] = (decode_html(read_page(page), encoding).html, url)
    functions = {name: getattr(adapters, name, None) or getattr(reference, name) for name in spec["functions"]}
    calls = [
        (page_id, name)
        for page_id in html
        for name in functions
        for _ in range(spec["tie_repeats"] if page_id == TIE_ID else spec["repeats"])
    ]
    rng.shuffle(calls)
    seen: dict[str, dict[str, set[str]]] = {name: {page_id: set() for page_id in html} for name in functions}
    keep: list[Any] = []
    for page_id, name in calls:
        rng.shuffle(keep)
        del keep[rng.randrange(len(keep) + 1) :]
        keep.extend(lxml.html.fromstring(SMALL_TREE) for _ in range(rng.randrange(1, 80)))
        page_html, url = html[page_id]
        seen[name][page_id].add(digest(outcome(functions[name], page_html, url)))
    return {
        "seed": spec["seed"],
        "calls": len(calls),
        "digests": {name: {p: sorted(d) for p, d in pages.items()} for name, pages in seen.items()},
    }


# --------------------------------------------------------------------------- pages at risk


def pages_at_risk(pages: list[list[Any]]) -> dict[str, Any]:
    """Pages (and the tie page) whose newspaper4k text changes with the two tie orders reversed."""
    from selection_extraction import adapters
    from selection_extraction.decode import decode_html
    from selection_extraction.pages import Page, read_page

    _quiet()
    adapters.prepare_worker()

    class ReversedTieOrder(adapters.TieOrderBodyExtractor):
        """The fixed order reversed: the candidate ``div`` s last to first, the scored parents last to first."""

        def nodes_to_check(self, doc: Any) -> list[Any]:
            nodes = super().nodes_to_check(doc)
            return [n for n in nodes if n.tag != "div"] + [n for n in nodes if n.tag == "div"][::-1]

        def compute_gravity_scores(self, nodes_with_text: list[Any]) -> list[Any]:
            return super().compute_gravity_scores(nodes_with_text)[::-1]

    def reversed_order(html: str, url: str | None) -> tuple[str, str | None]:
        # as adapters.newspaper4k_article builds it, with the reversed body extractor
        article = adapters.newspaper.Article(url or "", language=None, config=adapters._newspaper_config())
        article.extractor.article_body_extractor = ReversedTieOrder(article.config)
        article.download(input_html=html)
        article = adapters.parse_text_and_title(article)
        return article.text or "", article.title or None

    def text_of(result: list[Any]) -> Any:
        return result[1] if result[0] == "ok" else result

    at_risk = []
    items = [(TIE_ID, TIE_HTML, TIE_URL)]
    for page_id, file, url, encoding in pages:
        page = Page(page_id, url, file, Path(file), encoding)
        items.append((page_id, decode_html(read_page(page), encoding).html, url))
    for page_id, html, url in items:
        fixed = outcome(adapters.extract_newspaper4k, html, url)
        reverse = outcome(reversed_order, html, url)
        if text_of(fixed) != text_of(reverse):
            at_risk.append(page_id)
    return {
        "needed_tie_fixes": sorted(adapters.NEEDED_TIE_FIXES),
        "pages": sorted(p for p in at_risk if p != TIE_ID),
        "tie_page_at_risk": TIE_ID in at_risk,
    }


# --------------------------------------------------------------------------- parent


def real_pages(limit: int | None) -> tuple[int, list[list[Any]]]:
    """How many pages the manifests list, and the distinct ones (URL and bytes), as [id, file, url, encoding]."""
    listed = 0
    distinct: dict[tuple[str | None, str], list[Any]] = {}
    for folder in PAGE_FOLDERS:
        for line in (folder / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            file = (folder / entry["path"]).resolve()
            listed += 1
            key = (entry.get("url"), hashlib.sha256(file.read_bytes()).hexdigest())
            distinct.setdefault(key, [entry["id"], str(file), entry.get("url"), entry.get("encoding")])
    pages = list(distinct.values())
    return listed, pages[:limit] if limit is not None else pages


def run_children(pages: list[list[Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    for p in range(args.processes):
        seed = p + 1
        spec = {
            "seed": seed,
            "pages": pages,
            "functions": list(FUNCTIONS.values()),
            "repeats": args.repeats,
            "tie_repeats": args.tie_repeats,
        }
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child"],
            input=json.dumps(spec),
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        result = json.loads(done.stdout)
        result["seconds"] = time.perf_counter() - t0
        results.append(result)
        print(
            f"  process {p + 1} (PYTHONHASHSEED={seed}): {result['calls']} calls, {result['seconds']:.1f} s", flush=True
        )
    return results


def merge(results: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per function and page, the number of distinct digests over every process."""
    merged: dict[str, dict[str, set[str]]] = {}
    for result in results:
        for name, pages in result["digests"].items():
            for page_id, digests in pages.items():
                merged.setdefault(name, {}).setdefault(page_id, set()).update(digests)
    return {name: {p: len(d) for p, d in pages.items()} for name, pages in merged.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2, help="calls per page and function in each process")
    ap.add_argument("--tie-repeats", type=int, default=20, help="calls of the synthetic tie page, per process")
    ap.add_argument("--pages", type=int, default=None, help="only the first N distinct real pages (smoke runs)")
    ap.add_argument("--json", type=Path, default=OUT / "determinism.json")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(sys.stdin.read()))))
        return 0
    started = time.perf_counter()
    result: dict[str, Any] = {"machine": machine()}
    listed, pages = real_pages(args.pages)
    print(
        f"{listed} pages listed in {', '.join(str(f.relative_to(ROOT)) for f in PAGE_FOLDERS)}; "
        f"{len(pages)} distinct pages used (same URL and bytes counted once), plus the synthetic tie page",
        flush=True,
    )
    print(
        f"{args.processes} processes x {args.repeats} calls per page and function "
        f"({args.tie_repeats} for the tie page), shuffled, lxml allocations between calls:",
        flush=True,
    )
    children = run_children(pages, args)
    counts = merge(children)
    risk = pages_at_risk(pages)
    labels = {f"{extractor}, {when}": name for (extractor, when), name in FUNCTIONS.items()}
    unstable = {
        label: sorted(p for p, n in counts[name].items() if n > 1 and p != TIE_ID) for label, name in labels.items()
    }
    tie = {label: counts[name][TIE_ID] for label, name in labels.items()}
    result.update(
        {
            "pages_listed": listed,
            "pages": len(pages),
            "processes": args.processes,
            "repeats": args.repeats,
            "tie_repeats": args.tie_repeats,
            "functions": labels,
            "unstable_pages": unstable,
            "distinct_results_on_unstable_pages": {
                label: {p: counts[labels[label]][p] for p in ids} for label, ids in unstable.items()
            },
            "tie_page_distinct_results": tie,
            "pages_at_risk": risk,
            "unstable_before_but_not_at_risk": sorted(set(unstable["newspaper4k, before"]) - set(risk["pages"])),
            "children": [{k: v for k, v in c.items() if k != "digests"} for c in children],
        }
    )
    print()
    print(f"  {'extractor':<12} {'before':>14} {'after':>6} {'pages at risk':>14}   (pages with > 1 distinct result)")
    print(
        f"  {'trafilatura':<12} {'(same call)':>14} {len(unstable['trafilatura, after']):>6} {'-':>14}\n"
        f"  {'newspaper4k':<12} {len(unstable['newspaper4k, before']):>14} {len(unstable['newspaper4k, after']):>6} "
        f"{len(risk['pages']):>14}\n"
        f"  {'readability':<12} {len(unstable['readability, before']):>14} {len(unstable['readability, after']):>6} "
        f"{'-':>14}"
    )
    print(
        f"  synthetic tie page, distinct newspaper4k texts over {args.processes * args.tie_repeats} calls: "
        f"before {tie['newspaper4k, before']}, after {tie['newspaper4k, after']}; "
        f"at risk: {'yes' if risk['tie_page_at_risk'] else 'no'}"
    )
    others = {k: v for k, v in tie.items() if not k.startswith("newspaper4k")}
    print(f"  synthetic tie page, other functions: {others}")
    for label, ids in unstable.items():
        if ids:
            print(f"  unstable, {label}: {', '.join(ids)}")
    print(f"  pages at risk: {', '.join(risk['pages']) or 'none'}")
    if result["unstable_before_but_not_at_risk"]:
        print(f"  unstable before the fix but not at risk: {', '.join(result['unstable_before_but_not_at_risk'])}")
    print(f"  tie fixes the installed newspaper4k needs: {', '.join(risk['needed_tie_fixes']) or 'none'}")
    result["run_seconds"] = time.perf_counter() - started
    print(f"run time {result['run_seconds']:.0f} s; machine: {result['machine']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
