#!/usr/bin/env python3
"""Regenerate the golden data of tests/core/test_golden.py.

    python scripts/regen_golden.py                      # expected selections from the committed batch
    python scripts/regen_golden.py --rebuild-batch      # also rebuild the batch from ../shared

The batch ``tests/data/aeb_batch_extracted.json`` holds the stored outputs of
trafilatura, newspaper4k and readability on the 181 pages of the ScrapingHub
article-extraction benchmark (MIT). ``tests/data/aeb_expected_selections.json``
pins, per article, the decision and its evidence, and the SHA-256 of the output.
Commit regenerated data together with the change that caused it, and say why.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import selection_core as sc  # noqa: E402

BATCH = ROOT / "tests/data/aeb_batch_extracted.json"
EXPECTED = ROOT / "tests/data/aeb_expected_selections.json"


def expected_from_batch(data: bytes) -> dict:
    out, selections = sc.select_batch_bytes(data, str(BATCH.name))
    doc = orjson.loads(data)
    return {
        "core_version": sc.__version__,
        "output_sha256": hashlib.sha256(out).hexdigest(),
        "summary": sc.summarize(selections).to_dict(),
        "articles": [{"id": doc["articles"][s.index].get("id"), **s.to_dict()} for s in selections],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rebuild-batch", action="store_true", help="rebuild the batch from --dataset first")
    ap.add_argument("--dataset", type=Path, default=ROOT.parent / "shared/datasets/scrapinghub-aeb")
    args = ap.parse_args(argv)
    if args.rebuild_batch:
        from build_aeb_batch import build_batch

        BATCH.write_bytes(sc.dump_batch(build_batch(args.dataset)))
    expected = expected_from_batch(BATCH.read_bytes())
    EXPECTED.write_bytes(orjson.dumps(expected, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"{EXPECTED.relative_to(ROOT)}: {len(expected['articles'])} articles, {expected['summary']['by_extractor']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
