"""Hypothesis strategies for batch documents in any JSON formatting (shared by the layout and scan tests)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import strategies as st

# JSON values with the characters that matter to a scanner: quotes, backslashes,
# brackets inside strings, unicode, nesting, all scalar kinds.
_tricky_text = st.text(alphabet=st.sampled_from(list('ab "\\[]{},:\n\t/é\u2028\U0001f600')), max_size=12)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    _tricky_text,
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_tricky_text, inner, max_size=4)),
    max_leaves=12,
)
_articles = st.dictionaries(_tricky_text, _values, max_size=5)


@st.composite
def batch_documents(draw: st.DrawFn) -> tuple[bytes, dict[str, Any]]:
    """A batch, with other root keys before and after ``articles``, in a random JSON formatting."""
    others = draw(st.dictionaries(_tricky_text.filter(lambda k: k != "articles"), _values, max_size=3))
    position = draw(st.integers(0, len(others)))
    items = list(others.items())
    items.insert(position, ("articles", draw(st.lists(_articles, max_size=6))))
    doc = dict(items)
    style = draw(st.sampled_from(["orjson", "orjson-indent", "json-spaced", "json-indent-tab", "json-ascii"]))
    if style == "orjson":
        data = orjson.dumps(doc)
    elif style == "orjson-indent":
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    elif style == "json-spaced":
        data = json.dumps(doc, ensure_ascii=False, separators=(" , ", " : ")).encode()
    elif style == "json-indent-tab":
        data = json.dumps(doc, ensure_ascii=False, indent="\t").encode()
    else:
        data = json.dumps(doc, ensure_ascii=True).encode()
    padding = draw(st.sampled_from(["", " ", "\n", " \r\n\t"]))
    return padding.encode() + data + padding.encode(), doc
