"""Judge-human agreement (the paper's Table 3) from two runs' samples files and a human preference file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from adu_helpers import write_jsonl

from audioeval.benchmarks.adu_bench.agreement import main

# (episode_id, task, score of run A, score of run B)
ITEMS = [
    ("general/g1", "adu_general", 8.0, 3.0),  # judges prefer A
    ("general/g2", "adu_general", 2.0, 6.5),  # B
    ("general/g3", "adu_general", 5.0, 5.0),  # equal
    ("skill/s1", "adu_skill", 9.0, 1.0),  # A
    ("skill/s2", "adu_skill", None, 4.0),  # judge failure in run A: unscorable
    ("ambiguity/a1", "adu_ambiguity", 10.0, 0.0),  # A
]


def samples(path: Path, column: int, judge_scores: bool = True) -> Path:
    rows = []
    for item, task, *scores in ITEMS:
        score = scores[column]
        rows.append(
            {"task": task, "episode_id": item, "error": None,
             "scores": {"score": score, "score@judge-a": None if score is None else score / 2}}
        )  # fmt: skip
    return write_jsonl(path, rows)


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "run_a", tmp_path / "run_b"
    a.mkdir(), b.mkdir()
    samples(a / "samples_adu_all.jsonl", 0)
    samples(b / "samples_adu_all.jsonl", 1)
    return a, b


def test_agreement_per_dataset_and_overall(tmp_path: Path, runs, capsys):
    human = write_jsonl(
        tmp_path / "human.jsonl",
        [
            {"id": "general/g1", "preference": "A is better", "annotator": "h1"},
            {"id": "general/g1", "preference": "B", "annotator": "h2"},  # disagrees with the judges
            {"id": "general/g2", "preference": "b"},
            {"id": "general/g3", "preference": "Both are equal"},
            {"id": "skill/s1", "preference": "A"},
            {"id": "skill/s2", "preference": "A"},  # unscorable
            {"id": "ambiguity/a1", "preference": "tie"},  # judges say A
        ],
    )
    out = tmp_path / "agreement.json"
    assert (
        main(
            [
                "--samples_a",
                str(runs[0]),
                "--samples_b",
                str(runs[1]),
                "--human",
                str(human),
                "--output",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())["datasets"]
    assert result["general"]["agreement"] == 0.75 and result["general"]["n"] == 4
    assert result["skill"] == {"agreement": 1.0, "ci95": None, "n": 1, "unscorable": 1}  # one item: no CI
    assert result["ambiguity"]["agreement"] == 0.0
    assert result["all"]["agreement"] == pytest.approx(4 / 6, abs=1e-4) and result["all"]["unscorable"] == 1
    table = capsys.readouterr().out
    assert "| ADU-General | 75.0% |" in table and "| ADU-Bench | 66.7% |" in table
    # a tie margin turns small differences into "equal"; one judge's own scores can be chosen
    assert main(["--samples_a", str(runs[0]), "--samples_b", str(runs[1]), "--human", str(human),
                 "--judge", "judge-a", "--tie_margin", "5", "--output", str(out)]) == 0  # fmt: skip
    result = json.loads(out.read_text())["datasets"]
    assert result["ambiguity"]["agreement"] == 1.0  # |5 - 0| <= 5: equal, like the human
    assert result["general"]["agreement"] == 0.25  # only g3 ("equal") still matches


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "general/g1", "preference": "maybe"}', "preference 'maybe' must be A, B or equal"),
        ('{"id": "general/g1"', "not valid JSON"),
        ('{"id": "general/g9", "preference": "A"}', "id 'general/g9' is not in the samples of run A"),
        ('{"item": "general/g1", "preference": "A"}', "unknown field(s) ['item']"),
    ],
)
def test_bad_human_files_name_the_line(tmp_path: Path, runs, capsys, line, message):
    human = write_jsonl(tmp_path / "human.jsonl", ['{"id": "general/g2", "preference": "B"}', line])
    assert main(["--samples_a", str(runs[0]), "--samples_b", str(runs[1]), "--human", str(human)]) == 2
    err = capsys.readouterr().err
    assert f"{human}:2:" in err and message in err
