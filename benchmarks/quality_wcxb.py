#!/usr/bin/env python3
"""Quality per page type on the Web Content Extraction Benchmark (WCXB), with its own metric.

    python benchmarks/quality_wcxb.py --dataset DIR [--split dev] [--out benchmarks/out/quality-wcxb]

``DIR`` is a copy of the benchmark's repository (``Murrough-Foley/web-content-extraction-benchmark``,
CC-BY-4.0; its pages are not shipped here): ``<split>/html/<id>.html.gz`` and ``<split>/ground-truth/<id>.json``.
The development split (``dev``, 1,497 pages) is the one to look at; ``test`` is held out.

As a user runs the stage: the extract step (the three real extractors, as ``content-selection extract`` runs
them) writes the batch, ``select --format dataset`` writes the dataset (Parquet), and DuckDB reads it. Scored
with the benchmark's word F1 (``benchmarks/wcxb_metric.py``), per page type:

* each extractor alone, the consensus selection (the dataset's ``text``) and the best of three per page (the
  extractor with the highest page F1, ties to the first in ``EXTRACTORS`` order: what no rule can beat);
* the decisions by reason code, with the mean F1 of the selection and of trafilatura alone on each;
* what :data:`KEEP_WHERE`, the README's DuckDB filter on the dataset's ``reason`` and ``score``, keeps: the share
  of pages, per page type, and the F1 of what it keeps and of what it drops.

Writes to ``--out``: ``wcxb-<split>.md`` (the tables), ``wcxb-<split>.json`` (every figure and every page's
scores), the batch ``wcxb-<split>_extracted.json`` and the dataset ``wcxb-<split>_selected.parquet``.
``--batch`` scores an extracted batch again instead of extracting (the same figures, in seconds).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

import orjson

try:
    from benchmarks.quality import extract_batch
    from benchmarks.wcxb_metric import WordScores, mean_scores, word_scores
except ImportError:  # run as a script: benchmarks/ is on sys.path
    from quality import extract_batch  # type: ignore[no-redef]
    from wcxb_metric import WordScores, mean_scores, word_scores  # type: ignore[no-redef]

from selection_core.config import EXTRACTORS
from selection_core.dataset import selected_text

#: The benchmark's page types, in its own order (its ``evaluate.py --per-type``).
PAGE_TYPES: Final[tuple[str, ...]] = (
    "article",
    "forum",
    "product",
    "collection",
    "listing",
    "documentation",
    "service",
)

#: The rows where the candidates agree: two or more candidates scored within the tie margin of each other against
#: the consensus (two extractors gave nearly the same text), and the selected one is nearly all consensus. Chosen
#: from the rule's meaning, not fitted to a benchmark; the README quotes it.
KEEP_WHERE: Final[str] = "reason LIKE 'consensus_tie%' AND score >= 0.9"

#: The score from which a decision counts as "nearly all consensus" in the report's table of reasons.
HIGH_SCORE: Final[float] = 0.9

#: The methods of the table, in order, with their labels.
METHODS: Final[dict[str, str]] = {
    "trafilatura": "trafilatura alone",
    "newspaper4k": "newspaper4k alone",
    "readability": "readability alone",
    "selection": "**consensus selection**",
    "best": "best of three per page",
}

DEFAULT_OUT: Final[Path] = Path(__file__).resolve().parent / "out" / "quality-wcxb"

#: Exit status of a dataset folder that is not the benchmark's layout (EX_DATAERR, as quality.py).
BAD_DATASET: Final[int] = 65

#: Exit status when DuckDB or pyarrow, which read and write the dataset, is missing (EX_UNAVAILABLE).
UNAVAILABLE: Final[int] = 69


class TruthPage(NamedTuple):
    """One page's ground truth: its id, URL, page type and main content."""

    id: str
    url: str | None
    page_type: str
    reference: str


def page_type(raw: Mapping[str, Any]) -> str:
    """The page type as the benchmark's ``evaluate.py`` reads it (``category`` is called ``collection``)."""
    found = (raw.get("_internal") or {}).get("page_type")
    kind = found.get("primary") if isinstance(found, dict) else found
    kind = kind if isinstance(kind, str) and kind else "article"
    return "collection" if kind == "category" else kind


def load_truth(split_dir: Path) -> list[TruthPage]:
    """The split's pages that have a ground truth, in id order (as the benchmark scores them)."""
    pages = []
    for path in sorted((split_dir / "ground-truth").glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        truth = raw.get("ground_truth")
        if not isinstance(truth, dict):
            continue
        pages.append(TruthPage(path.stem, raw.get("url") or None, page_type(raw), truth.get("main_content") or ""))
    return pages


def select_dataset(batch: Path, dataset: Path) -> None:
    """``content-selection select BATCH --format dataset -o DATASET``, through the engine the command runs."""
    from selection_engine import select_file

    select_file(batch, dataset, output_format="dataset")


def dataset_rows(dataset: Path) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """The dataset's rows by id, and the ids :data:`KEEP_WHERE` keeps, both read by DuckDB as a user reads them."""
    import duckdb

    con = duckdb.connect()
    cols = ["id", "text", "selected_extractor", "reason", "score"]
    rows = con.execute(f"SELECT {', '.join(cols)} FROM read_parquet(?)", [str(dataset)]).fetchall()
    kept = con.execute(f"SELECT id FROM read_parquet(?) WHERE {KEEP_WHERE}", [str(dataset)]).fetchall()
    return {row[0]: dict(zip(cols, row, strict=True)) for row in rows}, {row[0] for row in kept}


def _scores(pages: Sequence[WordScores]) -> dict[str, float]:
    return mean_scores(pages)._asdict()


def evaluate(
    truth: Sequence[TruthPage], batch: Mapping[str, Any], rows: Mapping[str, Mapping[str, Any]], kept: set[str]
) -> dict[str, Any]:
    """Every figure of the report, from the ground truth, the extracted batch and the dataset's rows."""
    articles = {a["id"]: a for a in batch["articles"]}
    if sorted(articles) != sorted(p.id for p in truth) or sorted(rows) != sorted(articles):
        raise SystemExit("quality_wcxb: the batch, the dataset and the ground truth do not have the same page ids")
    per_page: dict[str, dict[str, Any]] = {}
    for page in truth:
        scores = {name: word_scores(selected_text(articles[page.id], name), page.reference) for name in EXTRACTORS}
        top = max(s.f1 for s in scores.values())
        best = next(name for name in EXTRACTORS if scores[name].f1 == top)
        row = rows[page.id]
        scores["selection"] = word_scores(row["text"], page.reference)
        scores["best"] = scores[best]
        per_page[page.id] = {
            "page_type": page.page_type,
            "selected_extractor": row["selected_extractor"],
            "reason": row["reason"],
            "score": row["score"],
            "kept": page.id in kept,
            "f1": {method: scores[method].f1 for method in METHODS},
            "_scores": scores,
        }

    def group(ids: Sequence[str], method: str) -> dict[str, float]:
        return _scores([per_page[i]["_scores"][method] for i in ids])

    all_ids = [p.id for p in truth]
    types: dict[str, list[str]] = {t: [] for t in PAGE_TYPES}
    for p in truth:
        types.setdefault(p.page_type, []).append(p.id)
    reasons = sorted({per_page[i]["reason"] for i in all_ids})
    kept_ids = [i for i in all_ids if per_page[i]["kept"]]
    dropped_ids = [i for i in all_ids if not per_page[i]["kept"]]
    report = {
        "pages": len(all_ids),
        "page_types": {t: len(ids) for t, ids in types.items()},
        "scores": {m: {"all": group(all_ids, m), **{t: group(ids, m) for t, ids in types.items()}} for m in METHODS},
        "selected_extractor": {
            n: sum(1 for i in all_ids if per_page[i]["selected_extractor"] == n) for n in EXTRACTORS
        },
        "reasons": {
            r: {
                "pages": len(ids := [i for i in all_ids if per_page[i]["reason"] == r]),
                "selection_f1": group(ids, "selection")["f1"],
                "trafilatura_f1": group(ids, "trafilatura")["f1"],
                "high_score_pages": len(high := [i for i in ids if (per_page[i]["score"] or 0.0) >= HIGH_SCORE]),
                "high_score_selection_f1": group(high, "selection")["f1"] if high else None,
            }
            for r in reasons
        },
        "keep": {
            "where": KEEP_WHERE,
            "pages": len(kept_ids),
            "share": len(kept_ids) / len(all_ids),
            "share_by_type": {
                t: sum(1 for i in ids if per_page[i]["kept"]) / len(ids) for t, ids in types.items() if ids
            },
            "kept": {m: group(kept_ids, m)["f1"] for m in ("selection", "trafilatura")},
            "dropped": {m: group(dropped_ids, m)["f1"] for m in ("selection", "trafilatura")},
        },
        "extractor_versions": dict(batch.get("extractor_versions", {})),
    }
    for page in per_page.values():
        del page["_scores"]
    report["per_page"] = per_page
    return report


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def markdown(report: Mapping[str, Any], command: str) -> str:
    """The tables and the notes below them."""
    types = [t for t, n in report["page_types"].items() if n]
    head = [f"all ({report['pages']:,})"] + [f"{t} ({report['page_types'][t]})" for t in types]
    versions = ", ".join(f"{k} {v}" for k, v in report["extractor_versions"].items())
    lines = [
        f"Word F1 per page type, WCXB ({report['pages']:,} pages; the benchmark's metric); {versions}.",
        "",
        "| method | " + " | ".join(head) + " |",
        "|---|" + "---:|" * len(head),
    ]
    for method, label in METHODS.items():
        cells = [report["scores"][method]["all"]["f1"]] + [report["scores"][method][t]["f1"] for t in types]
        lines.append(f"| {label} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    lines += ["", "| method | precision | recall | F1 |", "|---|---:|---:|---:|"]
    for method, label in METHODS.items():
        s = report["scores"][method]["all"]
        lines.append(f"| {label} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} |")
    lines += [
        "",
        f"| reason | pages | F1 of the selection | F1 of trafilatura alone | pages with score >= {HIGH_SCORE} "
        "| F1 of the selection on them |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for reason, r in report["reasons"].items():
        lines.append(
            f"| `{reason}` | {r['pages']} | {r['selection_f1']:.3f} | {r['trafilatura_f1']:.3f} "
            f"| {r['high_score_pages']} | {_cell(r['high_score_selection_f1'])} |"
        )
    keep = report["keep"]
    share_by_type = ", ".join(f"{t} {100 * s:.0f} %" for t, s in keep["share_by_type"].items())
    lines += [
        "",
        "Selected: " + ", ".join(f"{k} {v}" for k, v in report["selected_extractor"].items()) + ".",
        "",
        f"`WHERE {keep['where']}` keeps {keep['pages']} of {report['pages']} pages "
        f"({100 * keep['share']:.1f} %; {share_by_type}). F1 of the kept rows: {keep['kept']['selection']:.3f} "
        f"(trafilatura alone on them: {keep['kept']['trafilatura']:.3f}); of the rows it drops: "
        f"{keep['dropped']['selection']:.3f} (trafilatura alone: {keep['dropped']['trafilatura']:.3f}).",
        "",
        f"Reproduce: `{command}`",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dataset", type=Path, required=True, help="a copy of the benchmark's repository")
    parser.add_argument("--split", choices=("dev", "test"), default="dev", help="the split to score (default: dev)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument("--batch", type=Path, help="score this extracted batch instead of extracting the pages")
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per extractor and page (default: 60)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    args = parser.parse_args(argv)

    split_dir = args.dataset / args.split
    if not (split_dir / "ground-truth").is_dir() or not (split_dir / "html").is_dir():
        print(
            f"quality_wcxb: {split_dir}: no ground-truth/ and html/ folders; pass the benchmark's repository "
            "(Murrough-Foley/web-content-extraction-benchmark) as --dataset",
            file=sys.stderr,
        )
        return BAD_DATASET
    missing = [name for name in ("duckdb", "pyarrow") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"quality_wcxb: needs {' and '.join(missing)}: pip install -e '.[dev]'", file=sys.stderr)
        return UNAVAILABLE
    truth = load_truth(split_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"wcxb-{args.split}"
    batch_path = args.batch or args.out / f"{stem}_extracted.json"
    if args.batch is None:
        pages = [
            (p.id, p.url, f"{args.split}/html/{p.id}.html.gz", split_dir / "html" / f"{p.id}.html.gz") for p in truth
        ]
        started = time.perf_counter()
        doc = extract_batch(f"wcxb-{args.split}", pages, args.time_limit, args.workers)
        print(f"extracted {len(pages)} pages in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        from selection_core import dump_batch
        from selection_storage import write_atomic

        write_atomic(batch_path, dump_batch(doc))
    else:
        doc = orjson.loads(batch_path.read_bytes())
    dataset = args.out / f"{stem}_selected.parquet"
    select_dataset(batch_path, dataset)
    rows, kept = dataset_rows(dataset)
    report = evaluate(truth, doc, rows, kept)
    command = f"python benchmarks/quality_wcxb.py --dataset {args.dataset}" + (
        f" --split {args.split}" if args.split != "dev" else ""
    )
    text = markdown(report, command)
    (args.out / f"{stem}.md").write_text(text, encoding="utf-8")
    (args.out / f"{stem}.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    print(text)
    print(f"wrote {args.out / (stem + '.md')}, {args.out / (stem + '.json')}, {batch_path}, {dataset}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
