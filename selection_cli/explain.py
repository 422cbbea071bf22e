"""``content-selection explain``: one article's decision, in words; nothing is written."""

from __future__ import annotations

import argparse
from pathlib import Path

from selection_cli.arguments import whole_number


def add_explain_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``explain`` to ``parser``."""
    parser.add_argument("input", metavar="BATCH", help='batch JSON file: {"articles": [...]}')
    which = parser.add_mutually_exclusive_group(required=True)
    index = whole_number(0, "an index is 0 or more, not {value}")
    which.add_argument("--index", type=index, metavar="N", help="the article at this position (0 is the first)")
    which.add_argument("--id", dest="article_id", metavar="ID", help="the first article whose id is ID")
    return parser


def explain_command(args: argparse.Namespace) -> int:
    """Run ``explain``; returns 0, raises the project's typed errors."""
    from selection_core.explain import explain_text
    from selection_core.select import select_article
    from selection_storage.lookup import find_article

    found = find_article(args.input, index=args.index, article_id=args.article_id)  # reads only that article
    selection = select_article(found.article, found.index)
    print(explain_text(found.article, selection, Path(args.input).name, found.total))
    return 0
