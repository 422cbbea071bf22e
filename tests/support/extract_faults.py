"""Fault-injecting extractors for the extraction tests (imported by the worker processes).

Each is a drop-in for an extractor function ``(html, url) -> (text, title)``:
it misbehaves when the page holds its marker comment and otherwise runs the
real extractor, so a batch mixes real results with one injected fault.
Swap one in with ``dataclasses.replace(extractor, function=...)``.
"""

from __future__ import annotations

import os
import re
import signal
import socket

from selection_extraction.adapters import extract_newspaper4k, extract_trafilatura

HANG = "<!--fault:hang-->"
CRASH = "<!--fault:crash-->"
RAISE = "<!--fault:raise-->"
NETWORK = "<!--fault:network-->"
NETWORK_MANY = "<!--fault:network-many-->"

#: Network attempts one call makes on a page marked :data:`NETWORK_MANY`.
MANY_ATTEMPTS = 150


def faulty_trafilatura(html: str, url: str | None) -> tuple[str, str | None]:
    """trafilatura, unless the page asks for a fault."""
    if HANG in html:
        # Catastrophic backtracking: runs inside the C regex engine, holding the GIL,
        # for longer than the age of the universe. Only killing the process stops it.
        re.fullmatch(r"(a|aa)+b", "a" * 200)
    if CRASH in html:
        os.kill(os.getpid(), signal.SIGSEGV)
    if RAISE in html:
        raise RuntimeError("injected failure")
    if NETWORK_MANY in html:
        for _ in range(MANY_ATTEMPTS):  # each attempt is blocked (and recorded); carry on regardless
            try:
                socket.getaddrinfo("example.com", 80)
            except ConnectionError:
                pass
    if NETWORK in html:
        socket.create_connection(("127.0.0.1", 9), timeout=1).close()
    return extract_trafilatura(html, url)


def newspaper_fetching_images(html: str, url: str | None) -> tuple[str, str | None]:
    """newspaper4k with its default ``fetch_images=True``: what the real adapter must not do."""
    import newspaper

    article = newspaper.article(url or "", input_html=html, config=newspaper.Config())
    return article.text or "", article.title or None


__all__ = [
    "CRASH",
    "HANG",
    "MANY_ATTEMPTS",
    "NETWORK",
    "NETWORK_MANY",
    "RAISE",
    "extract_newspaper4k",
    "faulty_trafilatura",
    "newspaper_fetching_images",
]
