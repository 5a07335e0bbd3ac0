"""The query format, the built-in corpus and the reader of the released ADU-Bench folder."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from adu_helpers import write_jsonl

from audioeval.benchmarks.adu_bench.domains import DOMAINS
from audioeval.benchmarks.adu_bench.queries import check_unique, read_query_file
from audioeval.benchmarks.adu_bench.upstream import read_dataset, recorded_variation
from audioeval.errors import DataError
from audioeval.resources import builders_dir

CORPUS = builders_dir() / "adu_bench" / "corpus"


def corpus_items():
    return [
        i
        for name in ("general", "skill", "multilingual", "ambiguity")
        for i in read_query_file(CORPUS / f"{name}.jsonl")
    ]


def test_builtin_corpus_covers_every_dataset_domain_and_ambiguity_type():
    items = corpus_items()
    check_unique(items)
    assert len(items) >= 100
    domains = {ds: {i.domain for i in items if i.dataset == ds} for ds in DOMAINS}
    assert domains["general"] == set(DOMAINS["general"])
    assert domains["skill"] == set(DOMAINS["skill"])  # all 12 skills
    assert domains["ambiguity"] == {"intonation", "pause", "homophone", "repetition"}
    languages = {i.language for i in items if i.dataset == "multilingual"}
    assert len(languages) >= 3 and "en" in languages
    assert all(i.reference.strip() and i.question.strip() for i in items)


def test_pause_and_intonation_items_come_in_pairs_whose_reference_follows_the_reading():
    items = [i for i in corpus_items() if i.dataset == "ambiguity"]
    by_question: dict[tuple[str, str], list] = {}
    for i in items:
        if i.domain in ("pause", "intonation"):
            by_question.setdefault((i.domain, i.question), []).append(i)
    assert len(by_question) >= 4
    for (domain, _q), pair in by_question.items():
        assert len(pair) == 2
        assert pair[0].reference != pair[1].reference
        if domain == "pause":
            assert pair[0].spoken != pair[1].spoken  # the pause sits elsewhere
        else:
            assert {p.contour for p in pair} == {"rising", "falling"}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{not json", "not valid JSON"),
        (
            {"id": "x", "dataset": "skill", "domian": "law", "question": "q", "reference": "r"},
            "Did you mean domain",
        ),
        (
            {"id": "x", "dataset": "skill", "domain": "astrology", "question": "q", "reference": "r"},
            "not a domain of skill",
        ),
        (
            {"id": "x", "dataset": "skills", "domain": "law", "question": "q", "reference": "r"},
            "dataset 'skills'",
        ),
        (
            {"id": "x", "dataset": "skill", "domain": "law", "question": "q"},
            "missing required field 'reference'",
        ),
        (
            {"id": "x", "dataset": "skill", "domain": "law", "question": "", "reference": "r"},
            "'question' must be",
        ),
        (
            {"id": "x", "dataset": "multilingual", "language": "xx", "question": "q", "reference": "r"},
            "language 'xx'",
        ),
        (
            {"id": "x", "dataset": "ambiguity", "domain": "pause", "question": "a b c", "reference": "r"},
            "needs `spoken`",
        ),
        (
            {
                "id": "x",
                "dataset": "ambiguity",
                "domain": "pause",
                "question": "a b c",
                "spoken": "a | b d",
                "reference": "r",
            },
            "same words",
        ),
        (
            {
                "id": "x",
                "dataset": "ambiguity",
                "domain": "pause",
                "question": "a b c",
                "spoken": "a, | b c",
                "reference": "r",
            },
            "punctuation",
        ),
        (
            {
                "id": "x",
                "dataset": "ambiguity",
                "domain": "intonation",
                "question": "Really",
                "contour": "up",
                "reference": "r",
            },
            "rising or falling",
        ),
        (
            {
                "id": "x",
                "dataset": "skill",
                "domain": "law",
                "question": "q",
                "reference": "r",
                "contour": "rising",
            },
            "only for ambiguity",
        ),
    ],
)
def test_query_file_errors_name_the_file_line_and_field(tmp_path: Path, row, message):
    good = {"id": "ok", "dataset": "skill", "domain": "law", "question": "q", "reference": "r"}
    path = write_jsonl(tmp_path / "q.jsonl", [good, "", row])
    with pytest.raises(DataError) as err:
        read_query_file(path)
    assert f"{path}:3:" in str(err.value)
    assert message in str(err.value)


def test_duplicate_ids_are_reported_with_both_places(tmp_path: Path):
    row = {"id": "dup", "dataset": "skill", "domain": "law", "question": "q", "reference": "r"}
    path = write_jsonl(tmp_path / "q.jsonl", [row, row])
    with pytest.raises(DataError, match=r"q\.jsonl:2: id 'dup' is already used by .*q\.jsonl:1"):
        check_unique(read_query_file(path))


def test_upstream_folder_domains_languages_and_file_name_variation(upstream_dir: Path):
    skill = read_dataset(upstream_dir, "skill")
    assert Counter(i.domain for i in skill) == {"mathematics": 1, "physics": 2}  # math.jsonl -> mathematics
    first = next(i for i in skill if i.domain == "physics")
    assert first.reference == "Rayleigh scattering." and first.source == "MMLU"
    assert first.recorded_variation["speaker"] == "AndrewMultilingualNeural"
    assert first.recorded_variation["rate"] == "+10%" and first.recorded_variation["pitch"] == "standard"
    assert recorded_variation("x/27cc7ee8a0404f9c_11130_17850.wav")["speaker"] == "recording"
    (zh,) = read_dataset(upstream_dir, "multilingual")
    assert (zh.domain, zh.language) == ("chinese", "zh")


def test_upstream_errors_name_file_and_line(upstream_dir: Path):
    path = upstream_dir / "input" / "ADU-Skill" / "physics.jsonl"
    lines = path.read_text().splitlines()
    row = json.loads(lines[1])
    row["audio"] = "ADU-Skill/physics/missing.wav"
    path.write_text("\n".join([lines[0], json.dumps(row)]) + "\n")
    with pytest.raises(DataError, match=rf"{path}:2: audio file 'ADU-Skill/physics/missing.wav' not found"):
        read_dataset(upstream_dir, "skill")
    path.write_text(lines[0] + "\n" + json.dumps({"question": "q", "audio": "a.wav"}) + "\n")
    with pytest.raises(DataError, match=rf"{path}:2: field 'answer'"):
        read_dataset(upstream_dir, "skill")
    with pytest.raises(DataError, match="no folder input/ADU-General"):
        read_dataset(upstream_dir, "general")
