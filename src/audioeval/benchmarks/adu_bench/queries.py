"""Query items and the query JSONL format (the built-in corpus and a user's `queries_file=`).

One JSON object per line:

    {"id": "gen-hq-001", "dataset": "general", "domain": "helpful_question", "language": "en",
     "question": "What is the tallest mountain in Africa?", "reference": "Mount Kilimanjaro ...",
     "spoken": "...", "contour": "rising", "contour_words": 1, "source": "...", "category": "...", "note": "..."}

Required: id, dataset (general, skill, multilingual, ambiguity), question (what is said, as a listener would
transcribe it), reference (the answer we expect), and domain (for multilingual it follows from `language`).
Ambiguity items: `pause` items give `spoken`, the question with `|` where the speaker pauses (and no commas,
which would add pauses of their own); `intonation` items give `contour` (rising or falling) and optionally
`contour_words`, how many final words carry it (default 1). The reference answers the reading that the
pause or the contour selects. Every error names the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audioeval.benchmarks.adu_bench.domains import DATASETS, DOMAINS, LANGUAGES, canonical_domain
from audioeval.benchmarks.adu_bench.jsonl import read_jsonl
from audioeval.errors import DataError, close_matches

REQUIRED = ("id", "dataset", "question", "reference")
OPTIONAL = ("domain", "language", "spoken", "contour", "contour_words", "source", "category", "note")
CONTOURS = ("rising", "falling")
PAUSE_MARK = "|"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


@dataclass(frozen=True)
class QueryItem:
    item_id: str
    dataset: str
    domain: str
    language: str
    question: str  # the transcript shown to judges
    reference: str
    source: str = ""
    category: str = ""
    spoken: str | None = None  # text to synthesise when it differs from `question` (pause marks)
    contour: str | None = None
    contour_words: int = 1
    audio_path: Path | None = None  # a recording or pre-rendered clip (ADU-Bench folders)
    recorded_variation: dict[str, Any] = field(default_factory=dict)  # what its file name says
    origin: str = ""  # file:line

    @property
    def ambiguity(self) -> str | None:
        return self.domain if self.dataset == "ambiguity" else None


def _words(text: str) -> list[str]:
    return re.sub(r"[^\w\s']", " ", text.lower()).split()


def _text(obj: dict[str, Any], key: str, where: str, required: bool = True) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: field {key!r} must be a non-empty string, got {value!r}.")
    return value.strip()


def parse_query(obj: Any, where: str) -> QueryItem:
    """Validate one decoded JSON line into a QueryItem; errors name `where` (file:line) and the field."""
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object per line, got {type(obj).__name__}.")
    for key in obj:
        if key not in REQUIRED + OPTIONAL:
            hints = close_matches(str(key), REQUIRED + OPTIONAL)
            hint = f" Did you mean {', '.join(hints)}?" if hints else ""
            raise DataError(
                f"{where}: unknown field {key!r}.{hint} Fields: {', '.join(REQUIRED + OPTIONAL)}."
            )
    for key in REQUIRED:
        if key not in obj:
            raise DataError(f"{where}: missing required field {key!r}.")
    item_id = _text(obj, "id", where)
    if not _ID.fullmatch(item_id):
        raise DataError(f"{where}: id {item_id!r} may only hold letters, digits, '_', '-' and '.'.")
    dataset = _text(obj, "dataset", where)
    if dataset not in DATASETS:
        raise DataError(f"{where}: dataset {dataset!r} is not one of {', '.join(DATASETS)}.")
    language = _text(obj, "language", where, required=False) or "en"
    if language not in LANGUAGES:
        raise DataError(
            f"{where}: language {language!r} is not one eSpeak NG speaks here; use one of {', '.join(LANGUAGES)}."
        )
    domain = _domain(obj, dataset, language, where)
    if dataset != "multilingual" and language != "en":
        raise DataError(f"{where}: only multilingual items may set a language other than en.")
    question = _text(obj, "question", where)
    spoken = _text(obj, "spoken", where, required=False) or None
    contour = _text(obj, "contour", where, required=False) or None
    contour_words = obj.get("contour_words", 1)
    _check_ambiguity_fields(dataset, domain, question, spoken, contour, contour_words, where)
    return QueryItem(
        item_id=item_id,
        dataset=dataset,
        domain=domain,
        language=language,
        question=question,
        reference=_text(obj, "reference", where),
        source=_text(obj, "source", where, required=False) or "audioeval",
        category=_text(obj, "category", where, required=False),
        spoken=spoken,
        contour=contour,
        contour_words=int(contour_words),
        origin=where,
    )


def _domain(obj: dict[str, Any], dataset: str, language: str, where: str) -> str:
    if dataset == "multilingual":
        expected = LANGUAGES[language][0]
        given = obj.get("domain")
        if given is not None and canonical_domain(dataset, str(given)) != expected:
            raise DataError(
                f"{where}: a multilingual item's domain is its language ({expected!r} for {language!r}), "
                f"got {given!r}; drop the field or fix `language`."
            )
        return expected
    if "domain" not in obj:
        raise DataError(f"{where}: missing required field 'domain' (one of {', '.join(DOMAINS[dataset])}).")
    domain = canonical_domain(dataset, str(obj["domain"]))
    if domain is None:
        hints = close_matches(str(obj["domain"]), DOMAINS[dataset])
        hint = f" Did you mean {', '.join(hints)}?" if hints else ""
        raise DataError(
            f"{where}: domain {obj['domain']!r} is not a domain of {dataset}.{hint} "
            f"Domains: {', '.join(DOMAINS[dataset])}."
        )
    return domain


def _check_ambiguity_fields(
    dataset: str,
    domain: str,
    question: str,
    spoken: str | None,
    contour: str | None,
    contour_words: Any,
    where: str,
) -> None:
    is_pause = dataset == "ambiguity" and domain == "pause"
    is_intonation = dataset == "ambiguity" and domain == "intonation"
    if spoken is not None and not is_pause:
        raise DataError(f"{where}: `spoken` (pause marks) is only for ambiguity items of domain pause.")
    if contour is not None and not is_intonation:
        raise DataError(f"{where}: `contour` is only for ambiguity items of domain intonation.")
    if is_pause:
        if spoken is None or PAUSE_MARK not in spoken:
            raise DataError(
                f"{where}: a pause item needs `spoken`, the question with '|' where the speaker pauses, "
                'e.g. "the old | men and women".'
            )
        if re.search(r"[,;:.!?]", spoken.rstrip(".!? ")):
            raise DataError(
                f"{where}: `spoken` must not contain punctuation before its end (eSpeak pauses there too); "
                "mark the intended pause with '|'."
            )
        if _words(spoken.replace(PAUSE_MARK, " ")) != _words(question):
            raise DataError(
                f"{where}: `spoken` without its '|' marks must say the same words as `question` "
                f"({spoken!r} vs {question!r})."
            )
    if is_intonation:
        if contour not in CONTOURS:
            raise DataError(
                f"{where}: an intonation item needs `contour`: rising or falling, got {contour!r}."
            )
        n_words = len(_words(question))
        if (
            not isinstance(contour_words, int)
            or isinstance(contour_words, bool)
            or not 1 <= contour_words <= n_words
        ):
            raise DataError(
                f"{where}: `contour_words` must be an integer from 1 to {n_words} (the question's words), "
                f"got {contour_words!r}."
            )


def read_query_file(path: Path) -> list[QueryItem]:
    """All items of one query JSONL file, validated; blank lines are skipped."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"query file {path} does not exist; pass the path of a JSONL file of queries.")
    return [parse_query(obj, where) for where, obj in read_jsonl(path)]


def check_unique(items: list[QueryItem]) -> None:
    seen: dict[tuple[str, str], str] = {}
    for item in items:
        key = (item.dataset, item.item_id)
        if key in seen:
            raise DataError(
                f"{item.origin}: id {item.item_id!r} is already used by {seen[key]}; ids must be unique per dataset."
            )
        seen[key] = item.origin
