#!/usr/bin/env python3
"""Quality of the consensus selection against human ground truth (ScrapingHub benchmark layout).

    python benchmarks/quality.py [--dataset DIR] [--out benchmarks/out/quality]   # DIR: tests/data/aeb-pages

Runs the extract step (the three real extractors, as ``content-selection extract``
runs them) on ``html/<id>.html.gz``, runs the selection core on the batch, and
scores with the benchmark's own metric (``benchmarks/aeb_metric.py``):

* each extractor alone;
* the consensus selection (the text of the extractor the core selected);
* the best-of-three oracle: per page, the extractor with the highest page F1
  (ties: the first in ``EXTRACTORS`` order), which no rule can beat;
* how often the selection picked a per-page best extractor (ties count).

``--stored`` scores the dataset's stored outputs (``extractor-outputs/``) instead
of running the extractors: a check of the metric against the figures the
benchmark's repository reports for them (trafilatura 0.958, newspaper4k 0.949,
readability 0.922).

Writes to ``--out``: ``quality.md`` (Markdown table), ``quality.json`` (every
figure), ``quality.png`` (bar chart; needs matplotlib, the ``bench`` extra) and,
with ``--save-batch``, the extracted batch ``aeb_extracted.json``. Same dataset
and library versions, same files.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import orjson

try:
    from benchmarks.aeb_metric import PageCounts, page_counts, score
except ImportError:  # run as a script: benchmarks/ is on sys.path
    from aeb_metric import PageCounts, page_counts, score  # type: ignore[no-redef]

import selection_core as sc
from selection_core.config import EXTRACTORS, TEXT_FIELDS

#: Figures the benchmark's repository reports for its stored outputs.
REPORTED_STORED_F1: Final[dict[str, float]] = {"trafilatura": 0.958, "newspaper4k": 0.949, "readability": 0.922}

#: Stored output file of each extractor.
STORED_FILES: Final[dict[str, str]] = {
    "trafilatura": "trafilatura.json",
    "newspaper4k": "newspaper.json",
    "readability": "readability.json",
}

#: Versions the dataset's README gives for stored outputs whose file does not record one.
STORED_VERSIONS: Final[dict[str, str]] = {"trafilatura": "2.0.0", "newspaper4k": "0.9.3.1", "readability": "0.8.4.1"}

#: Goal of the project for the consensus selection on the 181 pages.
GOAL_F1: Final[float] = 0.974

DEFAULT_OUT: Final[Path] = Path(__file__).resolve().parent / "out" / "quality"

#: The benchmark's pages and ground truth as the repository holds them (its stored outputs are not there).
DEFAULT_DATASET: Final[Path] = Path(__file__).resolve().parents[1] / "tests" / "data" / "aeb-pages"


def page_folder(dataset: Path) -> Path:
    """Where the pages are: ``html/`` in the benchmark's own layout, else the folder itself (tests/data)."""
    return dataset / "html" if (dataset / "html").is_dir() else dataset


def load_truth(dataset: Path) -> dict[str, dict[str, str]]:
    """``{id: {"articleBody", "url"}}`` from ``ground-truth.json``."""
    raw = json.loads((dataset / "ground-truth.json").read_text(encoding="utf-8"))
    return {k: {"articleBody": v.get("articleBody") or "", "url": v.get("url") or ""} for k, v in raw.items()}


def extract_dataset(dataset: Path, source: str, time_limit: float, workers: int | None) -> dict[str, Any]:
    """Run the extract step on the dataset's pages (ids in sorted order, with their URLs)."""
    truth = load_truth(dataset)
    pages = [
        (k, truth[k]["url"] or None, f"html/{k}.html.gz", page_folder(dataset) / f"{k}.html.gz") for k in sorted(truth)
    ]
    return extract_batch(source, pages, time_limit, workers)


def extract_batch(
    source: str, pages: Sequence[tuple[str, str | None, str, Path]], time_limit: float, workers: int | None
) -> dict[str, Any]:
    """The batch of the extract step on ``pages`` (``(id, url, path as the batch writes it, file)``, in order)."""
    from selection_extraction import ExtractionSettings, Page, PageSet, extract_pages

    page_set = PageSet(source, "manifest", tuple(Page(id=i, url=u, path=p, file=f) for i, u, p, f in pages))
    settings = ExtractionSettings(time_limit_seconds=time_limit, workers=workers)

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\rextracting {done}/{total}", end="\n" if done == total else "", file=sys.stderr, flush=True)

    return extract_pages(page_set, settings, progress=progress).doc


def stored_batch(dataset: Path) -> dict[str, Any]:
    """A batch made of the dataset's stored extractor outputs (the benchmark's own figures)."""
    truth = load_truth(dataset)
    bodies: dict[str, dict[str, str]] = {}
    versions: dict[str, str] = dict(STORED_VERSIONS)
    for name, file_name in STORED_FILES.items():
        raw = json.loads((dataset / "extractor-outputs" / file_name).read_text(encoding="utf-8"))
        if isinstance(raw.get("output"), dict):
            versions[name] = str(raw.get("version") or versions[name])
            raw = raw["output"]
        bodies[name] = {k: (v.get("articleBody") or "") for k, v in raw.items()}
    articles = []
    for k in sorted(truth):
        article: dict[str, Any] = {"id": k, "url": truth[k]["url"]}
        for name in EXTRACTORS:
            article[name] = {TEXT_FIELDS[name]: bodies[name].get(k, ""), "error": None}
        articles.append(article)
    return {"extractor_versions": {name: versions[name] for name in EXTRACTORS}, "articles": articles}


def evaluate(doc: Mapping[str, Any], truth: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """Every figure of the report, from a batch and the ground truth."""
    articles = doc["articles"]
    ids = [a["id"] for a in articles]
    if sorted(ids) != sorted(truth):
        raise SystemExit("quality: the batch's article ids do not match ground-truth.json")
    selections = sc.select_articles(articles)

    def text(article: Mapping[str, Any], name: str) -> str:
        block = article.get(name)
        value = block.get(TEXT_FIELDS[name]) if isinstance(block, dict) else None
        return value if isinstance(value, str) else ""

    per_page: dict[str, dict[str, PageCounts]] = {}
    for article in articles:
        body = truth[article["id"]]["articleBody"]
        per_page[article["id"]] = {name: page_counts(body, text(article, name)) for name in EXTRACTORS}

    methods: dict[str, list[PageCounts]] = {name: [per_page[i][name] for i in ids] for name in EXTRACTORS}
    chosen = [sel.selected for sel in selections]
    methods["consensus"] = [per_page[i][c] for i, c in zip(ids, chosen, strict=True)]
    oracle_choice = [_best(per_page[i]) for i in ids]
    methods["oracle"] = [per_page[i][c] for i, c in zip(ids, oracle_choice, strict=True)]

    picked_best = sum(
        1 for i, c in zip(ids, chosen, strict=True) if per_page[i][c].f1 == max(per_page[i][n].f1 for n in EXTRACTORS)
    )
    errors = {
        name: sum(1 for a in articles if isinstance(a.get(name), dict) and a[name].get("error")) for name in EXTRACTORS
    }
    summary = sc.summarize(selections)
    return {
        "pages": len(ids),
        "scores": {name: score(counts).to_dict() for name, counts in methods.items()},
        "selection": {
            "picked_per_page_best": picked_best,
            "picked_per_page_best_share": picked_best / len(ids),
            "by_extractor": dict(summary.by_extractor),
            "by_reason": dict(summary.by_reason),
        },
        "extractor_errors": errors,
        "extractor_versions": dict(doc.get("extractor_versions", {})),
    }


def _best(counts: Mapping[str, PageCounts]) -> str:
    """The extractor with the highest page F1; ties go to the first in ``EXTRACTORS`` order."""
    top = max(counts[name].f1 for name in EXTRACTORS)
    return next(name for name in EXTRACTORS if counts[name].f1 == top)


LABELS: Final[dict[str, str]] = {
    "trafilatura": "trafilatura alone",
    "newspaper4k": "newspaper4k alone",
    "readability": "readability alone",
    "consensus": "**consensus selection**",
    "oracle": "best-of-three oracle (per page)",
}


def markdown(report: Mapping[str, Any], command: str) -> str:
    """The Markdown table and the notes below it."""
    versions = ", ".join(f"{k} {v}" for k, v in report["extractor_versions"].items())
    lines = [
        f"Quality on {report['pages']} pages (ScrapingHub article-extraction benchmark, its own metric); {versions}.",
        "",
        "| Method | Precision | Recall | F1 |",
        "|---|---:|---:|---:|",
    ]
    for key, label in LABELS.items():
        s = report["scores"][key]
        lines.append(f"| {label} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} |")
    sel = report["selection"]
    lines += [
        "",
        f"The selection picked a per-page best extractor on {sel['picked_per_page_best']} of {report['pages']} "
        f"pages ({100 * sel['picked_per_page_best_share']:.1f} %; ties count as best).",
        "Selections: " + ", ".join(f"{k} {v}" for k, v in sel["by_extractor"].items()) + ".",
        "Extractor errors: " + ", ".join(f"{k} {v}" for k, v in report["extractor_errors"].items()) + ".",
    ]
    if "reported_f1" in report:
        lines.append(
            "F1 reported by the benchmark's repository for these stored outputs: "
            + ", ".join(f"{k} {v:.3f}" for k, v in report["reported_f1"].items())
            + "."
        )
    lines += ["", f"Reproduce: `{command}`", ""]
    return "\n".join(lines)


def chart(report: Mapping[str, Any], target: Path) -> bool:
    """A grouped bar chart of precision, recall and F1 per method; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    keys = list(LABELS)
    names = [LABELS[k].strip("*").replace(" (per page)", "").replace(" alone", "") for k in keys]
    metrics = ("precision", "recall", "f1")
    width = 0.26
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    for j, metric in enumerate(metrics):
        values = [report["scores"][k][metric] for k in keys]
        xs = [i + (j - 1) * width for i in range(len(keys))]
        bars = ax.bar(xs, values, width, label=metric if metric != "f1" else "F1")
        if metric == "f1":
            for bar, value in zip(bars, values, strict=True):
                ax.annotate(
                    f"{value:.3f}",
                    (bar.get_x() + bar.get_width() / 2, value),
                    ha="center",
                    va="bottom",
                    fontsize=8,
                    xytext=(0, 2),
                    textcoords="offset points",
                )
    ax.set_xticks(range(len(keys)), names, fontsize=9)
    low = min(report["scores"][k][m] for k in keys for m in metrics)
    ax.set_ylim(max(0.0, low - 0.03), 1.005)
    ax.axhline(GOAL_F1, color="grey", linestyle=":", linewidth=1, label=f"goal F1 {GOAL_F1}")
    ax.set_ylabel("score")
    versions = ", ".join(f"{k} {v}" for k, v in report["extractor_versions"].items())
    ax.set_title(
        f"ScrapingHub benchmark, {report['pages']} pages ({report.get('source', '')}): {versions}", fontsize=10
    )
    ax.legend(loc="upper left", fontsize=8, ncol=4)
    fig.tight_layout()
    fig.savefig(target, format="png", metadata={"Software": None})
    plt.close(fig)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--dataset",
        type=Path,
        default=DEFAULT_DATASET,
        help="folder with ground-truth.json and the pages (<id>.html.gz, or under html/); default: the repository's "
        "copy (tests/data/aeb-pages); --stored needs the benchmark's own folder (its extractor-outputs/)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--stored", action="store_true", help="score the stored extractor-outputs/ instead of extracting"
    )
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per extractor and page (default: 60)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    parser.add_argument("--save-batch", action="store_true", help="also write the extracted batch (aeb_extracted.json)")
    args = parser.parse_args(argv)

    dataset: Path = args.dataset
    if not (dataset / "ground-truth.json").is_file():
        print(f"quality: {dataset}: no ground-truth.json; pass the dataset folder", file=sys.stderr)
        return 65
    truth = load_truth(dataset)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.stored:
        doc = stored_batch(dataset)
    else:
        doc = extract_dataset(dataset, dataset.name, args.time_limit, args.workers)
        if args.save_batch:
            sc_io_write(args.out / "aeb_extracted.json", doc)
    report = evaluate(doc, truth)
    report["source"] = "stored outputs" if args.stored else "extracted"
    if args.stored:
        report["reported_f1"] = dict(REPORTED_STORED_F1)
    command = "python benchmarks/quality.py" + ("" if dataset == DEFAULT_DATASET else f" --dataset {dataset}")
    command += " --stored" if args.stored else ""
    (args.out / "quality.md").write_text(markdown(report, command), encoding="utf-8")
    (args.out / "quality.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    drew = chart(report, args.out / "quality.png")
    print(markdown(report, command))
    print(
        f"wrote {args.out / 'quality.md'}, {args.out / 'quality.json'}"
        + (f", {args.out / 'quality.png'}" if drew else " (no chart: pip install 'content-selection[bench]')")
    )
    return 0


def sc_io_write(target: Path, doc: dict[str, Any]) -> None:
    from selection_storage import write_atomic

    write_atomic(target, sc.dump_batch(doc))


if __name__ == "__main__":
    sys.exit(main())
