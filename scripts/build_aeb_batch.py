#!/usr/bin/env python3
"""Build a selection batch from the stored extractor outputs of a ScrapingHub-layout dataset.

    python scripts/build_aeb_batch.py --dataset ../shared/datasets/scrapinghub-aeb -o batch.json
    python scripts/build_aeb_batch.py --dataset ... --limit 12 -o examples/sample_extracted.json
    python scripts/build_aeb_batch.py --dataset ... --repeat 20 -o /tmp/big_extracted.json

Articles are in the order of their ids (sorted), each with ``id``, ``url`` and
the three extractor blocks in the batch format the selection stage reads. With
``--repeat N`` the articles are written N times; ``--distinct`` makes every copy's
texts differ (a copy number is appended as a final token) so that nothing can be
served from a cache. The output bytes depend only on the arguments and the data.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import orjson

FILES = {"trafilatura": "trafilatura.json", "newspaper4k": "newspaper.json", "readability": "readability.json"}


def load_outputs(dataset: Path) -> tuple[dict[str, dict[str, str]], dict[str, str], dict[str, str]]:
    """Per extractor: {id: body}; plus {id: url} and {id: version} (version may be missing)."""
    bodies: dict[str, dict[str, str]] = {}
    versions: dict[str, str] = {}
    for name, fname in FILES.items():
        raw = json.loads((dataset / "extractor-outputs" / fname).read_text(encoding="utf-8"))
        if "output" in raw and isinstance(raw["output"], dict):
            versions[name] = str(raw.get("version", ""))
            raw = raw["output"]
        bodies[name] = {k: (v.get("articleBody") or "") for k, v in raw.items()}
    truth = json.loads((dataset / "ground-truth.json").read_text(encoding="utf-8"))
    urls = {k: v.get("url", "") for k, v in truth.items()}
    return bodies, urls, versions


def build_batch(dataset: Path, limit: int | None = None, repeat: int = 1, distinct: bool = False) -> dict:
    bodies, urls, versions = load_outputs(dataset)
    ids = sorted(set(urls))
    if limit is not None:
        ids = ids[:limit]
    articles = []
    for copy in range(repeat):
        suffix = f" copy{copy}" if distinct and copy else ""
        for aid in ids:
            t, n, r = (bodies[k].get(aid, "") for k in ("trafilatura", "newspaper4k", "readability"))
            articles.append(
                {
                    "id": aid if repeat == 1 else f"{aid}-{copy}",
                    "url": urls[aid],
                    "trafilatura": {"text": t + suffix if t else t, "error": None},
                    "newspaper4k": {"text": n + suffix if n else n, "error": None},
                    "readability": {"cleaned_text": r + suffix if r else r, "error": None},
                }
            )
    return {
        "source": "scrapinghub/article-extraction-benchmark (MIT), stored extractor outputs",
        "extractor_versions": {
            "trafilatura": versions.get("trafilatura", ""),
            "newspaper4k": "0.9.3.1",
            "readability": versions.get("readability", ""),
        },
        "articles": articles,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--dataset", type=Path, default=Path(__file__).resolve().parents[2] / "shared/datasets/scrapinghub-aeb"
    )
    ap.add_argument("--limit", type=int, default=None, help="first N articles (by id)")
    ap.add_argument("--repeat", type=int, default=1, help="write the articles N times")
    ap.add_argument("--distinct", action="store_true", help="make every copy's texts distinct")
    ap.add_argument("-o", "--output", type=Path, required=True)
    args = ap.parse_args(argv)
    if not (args.dataset / "extractor-outputs").is_dir():
        print(f"build_aeb_batch: {args.dataset}: no extractor-outputs/ folder; pass --dataset", file=sys.stderr)
        return 65
    doc = build_batch(args.dataset, args.limit, args.repeat, args.distinct)
    args.output.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"{args.output}: {len(doc['articles'])} articles, {args.output.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
