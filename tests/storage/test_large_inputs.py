"""Very large fields and very many articles are handled, on a scale a test can afford.

The full scale (a 50 MB text, 200,000 articles) and the peak memory are
measured by ``benchmarks/memory_large_fields.py``; tests never time anything or
measure memory. Here: a multi-MB text, a multi-MB field that is not compared,
an article with thousands of keys, and tens of thousands of tiny articles go
through ``content-selection select`` and come out complete and in order.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from selection_cli.main import main


def run(tmp_path: Path, doc: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[bytes, dict[str, Any]]:
    inp = tmp_path / "large_extracted.json"
    data = orjson.dumps(doc) + b"\n"
    inp.write_bytes(data)
    status = main(["select", str(inp)])
    _, err = capsys.readouterr()
    assert status == 0, err
    assert inp.read_bytes() == data
    out = (tmp_path / "large_extracted_selected.json").read_bytes()
    return data, orjson.loads(out)


def assert_kept(doc_in: dict[str, Any], doc_out: dict[str, Any]) -> list[str]:
    assert list(doc_out) == list(doc_in)
    assert len(doc_out["articles"]) == len(doc_in["articles"])
    chosen = []
    for a_in, a_out in zip(doc_in["articles"], doc_out["articles"], strict=True):
        chosen.append(a_out.pop("selected_extractor"))
        assert list(a_out.items()) == list(a_in.items())
    return chosen


def big_text(n_words: int, seed: int) -> str:
    rng = random.Random(seed)
    vocab = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyzäöüß") for _ in range(rng.randint(2, 9))) for _ in range(3000)
    ]
    return " ".join(rng.choices(vocab, k=n_words))


def test_megabyte_texts_in_one_article(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = big_text(160_000, seed=1)  # about 1 MB, three times in the article
    doc = {
        "articles": [
            {
                "id": "big",
                "trafilatura": {"text": text[: len(text) // 3]},
                "newspaper4k": {"text": text},
                "readability": {"cleaned_text": "Cookie banner. " + text},
            }
        ]
    }
    _, out = run(tmp_path, doc, capsys)
    assert out["articles"][0]["newspaper4k"]["text"] == text
    assert assert_kept(doc, out) == ["newspaper4k"]


def test_a_large_field_that_is_not_compared_is_kept_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blob = "".join(chr(c) for c in range(0x20, 0x3000) if not 0xD800 <= c <= 0xDFFF) * 300  # ~3.6 M characters
    doc = {
        "articles": [
            {
                "id": "a",
                "html": blob,
                "newspaper4k": {"text": "one two three four five six"},
                "raw": [blob[:1000]] * 500,
            }
        ]
    }
    _, out = run(tmp_path, doc, capsys)
    assert out["articles"][0]["html"] == blob
    assert assert_kept(doc, out) == ["newspaper4k"]


def test_an_article_with_thousands_of_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    article: dict[str, Any] = {f"k{i:05d}": i for i in range(20_000)}
    article["trafilatura"] = {"text": "alpha beta gamma delta epsilon"}
    doc = {"articles": [article], "meta": {f"m{i}": [i] for i in range(5_000)}}
    _, out = run(tmp_path, doc, capsys)
    assert assert_kept(doc, out) == ["trafilatura"]
    assert list(out["articles"][0])[-1] == "trafilatura"  # selected_extractor was popped; it was appended last


def test_tens_of_thousands_of_tiny_articles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n = 30_000
    articles = []
    for i in range(n):
        a: dict[str, Any] = {"id": i}
        if i % 3 == 0:
            a["trafilatura"] = {"text": f"w{i} x"}
        if i % 3 != 2:
            a["newspaper4k"] = {"text": f"w{i} x y"}
        if i % 5 == 0:
            a["readability"] = {"cleaned_text": f"w{i} x", "error": "partial"}
        articles.append(a)
    doc = {"articles": articles}
    _, out = run(tmp_path, doc, capsys)
    chosen = assert_kept(doc, out)
    assert [a["id"] for a in out["articles"]] == list(range(n))
    # Pinned from the rule: i%3==0 -> two usable one-shingle texts with no shared
    # shingle, the larger count ties (1 and 1) and priority picks newspaper4k;
    # i%3==1 -> newspaper4k alone; i%3==2 -> no usable text: the degraded
    # readability if present (i%5==0), else the fallback newspaper4k.
    expected = ["readability" if i % 3 == 2 and i % 5 == 0 else "newspaper4k" for i in range(n)]
    assert chosen == expected
