"""The extractors as the engine names them (selection_extraction.extractors).

The engine names the adapters module by a string, so no import checks that
the names are right: these tests resolve every reference in a fresh
interpreter, as a worker does.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest

from selection_core.errors import MissingExtraError
from selection_extraction import default_extractors
from selection_extraction.extractors import (
    ADAPTERS_MODULE,
    NEWSPAPER_CALL,
    NEWSPAPER_CONFIG,
    READABILITY_CALL,
    READABILITY_SUMMARY_OPTIONS,
    TRAFILATURA_CALL,
    TRAFILATURA_OPTIONS,
    WORKER_INITIALIZER,
    WORKER_PRELOAD,
    check_extractors,
)
from selection_extraction.pool import FunctionRef
from tests.support import ROOT

RESOLVE = """
import importlib, json, sys
refs = json.loads(sys.argv[1])
preload = json.loads(sys.argv[2])
for module in preload:
    importlib.import_module(module)
print(json.dumps([callable(getattr(importlib.import_module(m), n, None)) for m, n in refs]))
"""


def function_refs() -> list[FunctionRef]:
    """Every reference the engine hands to the workers: the initializer and the real extractors' functions."""
    return [WORKER_INITIALIZER, *(e.function for e in default_extractors() if isinstance(e.function, FunctionRef))]


def test_every_function_reference_of_the_engine_resolves() -> None:
    refs = function_refs()
    assert WORKER_INITIALIZER in refs and len(refs) == 4
    named = [[ref.module, ref.name] for ref in refs]
    out = subprocess.run(
        [sys.executable, "-c", RESOLVE, json.dumps(named), json.dumps(list(WORKER_PRELOAD))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == [True] * len(refs)


def test_the_adapters_module_is_named_once() -> None:
    assert WORKER_PRELOAD == (ADAPTERS_MODULE,)
    assert {ref.module for ref in function_refs()} == {ADAPTERS_MODULE}


def test_the_real_extractors_are_references_not_functions() -> None:
    assert all(isinstance(e.function, FunctionRef) for e in default_extractors())


@pytest.mark.parametrize(
    ("call", "options"),
    [
        pytest.param(TRAFILATURA_CALL, TRAFILATURA_OPTIONS, id="trafilatura"),
        pytest.param(NEWSPAPER_CALL, NEWSPAPER_CONFIG, id="newspaper4k"),
        pytest.param(READABILITY_CALL, READABILITY_SUMMARY_OPTIONS, id="readability"),
    ],
)
def test_each_recorded_call_spells_out_the_options_used(call: str, options: dict[str, object]) -> None:
    assert options
    for name, value in options.items():
        assert f"{name}={value!r}" in call


def test_the_recorded_settings_hold_the_options() -> None:
    by_name = {e.name: e for e in default_extractors()}
    assert by_name["trafilatura"].settings == TRAFILATURA_OPTIONS
    assert NEWSPAPER_CONFIG.items() <= by_name["newspaper4k"].settings.items()
    assert READABILITY_SUMMARY_OPTIONS.items() <= by_name["readability"].settings.items()


def test_only_one_extractor_of_each_name_is_accepted() -> None:
    extractors = default_extractors()
    check_extractors(extractors)
    with pytest.raises(ValueError, match="need one extractor for each of"):
        check_extractors(extractors[:2])
    with pytest.raises(ValueError, match="need one extractor for each of"):
        check_extractors((*extractors[:2], extractors[0]))


def test_a_missing_library_is_found_before_any_worker_starts(mocker: Any) -> None:
    real = importlib.util.find_spec
    mocker.patch(
        "importlib.util.find_spec", side_effect=lambda name, *a: None if name == "newspaper" else real(name, *a)
    )
    with pytest.raises(MissingExtraError) as caught:
        default_extractors()
    assert str(caught.value) == (
        "the extract step needs the 'extract' extra, which is not installed (newspaper is missing); "
        "install it with: pip install 'content-selection[extract]'"
    )
    assert caught.value.exit_code == 69


def test_default_extractors_do_not_import_the_libraries_here() -> None:
    code = (
        "import sys; from selection_extraction import default_extractors; default_extractors(); "
        "libraries = ('trafilatura', 'newspaper', 'readability', 'selection_extraction.adapters'); "
        "print(sorted(m for m in libraries if m in sys.modules))"
    )
    root = ROOT
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_batch_says_that_newspaper4k_ran_the_lean_path_with_the_tie_fix() -> None:
    newspaper4k = next(e for e in default_extractors() if e.name == "newspaper4k")
    assert "lean Article.parse()" in newspaper4k.call and "newspaper4k #738" in newspaper4k.call
    assert newspaper4k.settings["lean_path"].startswith("parse, title, metadata")
    assert "pull/738" in newspaper4k.settings["tie_order"]
    readability = next(e for e in default_extractors() if e.name == "readability")
    assert "first parse" in readability.call
