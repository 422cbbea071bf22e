#!/usr/bin/env python3
"""Copy the sample pages of the extraction tests from a ScrapingHub-layout dataset.

    python scripts/make_sample_pages.py --dataset ../shared/datasets/scrapinghub-aeb
    python scripts/make_sample_pages.py --dataset ../shared/datasets/scrapinghub-aeb --all

Writes into ``tests/data/pages/``: the pages listed in ``SAMPLE_IDS`` (unchanged
``html/<id>.html.gz``), their ground truth (``ground-truth.json``), a JSON Lines
manifest of them (``manifest.jsonl``) and the dataset's ``LICENSE``. With ``--all``,
writes every page of the dataset into ``tests/data/aeb-pages/`` (pages, manifest,
``LICENSE`` and the whole ``ground-truth.json``, unchanged, which ``benchmarks/quality.py``
reads; the tests compare the extractors with themselves). The files depend only on the dataset; the tests never
read the dataset itself.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

#: English news and blog pages, a page whose extractors differ in length, a Korean and a Japanese page.
SAMPLE_IDS = (
    "06ee193de4bd611f7fafbab0c59b0f6fe3495093516720632cd093b24c7a0e98",
    "0ec95c7261d122f304728e90c983450ef1ce1e0b423546835c397d50aaf0d0f2",
    "4648a420af9984d45b76a4afedf4f74965f8a2e0bf1c69bd3da2dc189020f3c9",
    "85439e26c41c75901820d01a13e8cea7836abb58635ea3986f71a163ab0311d3",
    "c00962aabe7bdd1fca78f5360ea7fa93cd7674863b05157e00827506a7aa58c4",
    "d90bda7ed14df19574f4ca8b1ccde5752a78f40058af1393e81cc99adb3e8756",
)

TARGET = Path(__file__).resolve().parent.parent / "tests" / "data" / "pages"

#: Where ``--all`` writes every page of the dataset.
ALL_TARGET = TARGET.parent / "aeb-pages"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dataset", type=Path, required=True, help="folder with html/, ground-truth.json, LICENSE")
    parser.add_argument("--target", type=Path, default=None, help=f"default {TARGET} ({ALL_TARGET} with --all)")
    parser.add_argument("--all", action="store_true", help="every page of the dataset, with its whole ground truth")
    args = parser.parse_args(argv)
    truth = json.loads((args.dataset / "ground-truth.json").read_text(encoding="utf-8"))
    if args.target is None:
        args.target = ALL_TARGET if args.all else TARGET
    args.target.mkdir(parents=True, exist_ok=True)
    ids = sorted(path.name.removesuffix(".html.gz") for path in (args.dataset / "html").glob("*.html.gz"))
    entries = {}
    for page_id in ids if args.all else SAMPLE_IDS:
        shutil.copyfile(args.dataset / "html" / f"{page_id}.html.gz", args.target / f"{page_id}.html.gz")
        entries[page_id] = {"url": truth[page_id]["url"], "articleBody": truth[page_id]["articleBody"]}
    if args.all:
        shutil.copyfile(args.dataset / "ground-truth.json", args.target / "ground-truth.json")
    else:
        (args.target / "ground-truth.json").write_text(
            json.dumps(entries, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    (args.target / "manifest.jsonl").write_text(
        "".join(json.dumps({"id": k[:12], "url": v["url"], "path": f"{k}.html.gz"}) + "\n" for k, v in entries.items()),
        encoding="utf-8",
    )
    shutil.copyfile(args.dataset / "LICENSE", args.target / "LICENSE")
    print(f"{args.target}: {len(entries)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
