"""Results are typed end to end: the run writes results.json and its sample lines from RunRecord and
SampleRecord, readers get the same types back, the files are exactly what the types write, the published
JSON Schemas are the ones the types generate and real files conform to them, and a damaged file is one line
naming the file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from json_schema_check import CHECKED, DESCRIPTIVE, keywords, problems

from audioeval.errors import DataError
from audioeval.results.blocks import MetricStats, ShotBlock
from audioeval.results.outputs import write_json
from audioeval.results.record import RunRecord
from audioeval.results.run_files import find_sample_files, read_run
from audioeval.results.sample_record import SampleRecord
from audioeval.results.schemas import SCHEMAS, schema_text
from tests.conftest import TOY, latest_run, run_cli

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "schemas"


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("records")
    args = ["--include_path", str(TOY), "--tasks", "toy", "--model", "chance", "--limit", "4"]
    code, _, err = run_cli([*args, "--log_samples", "--output_path", str(out), "--bootstrap_iters", "200"])
    assert code == 0, err
    return latest_run(out)


def test_results_json_reads_back_as_the_record_that_writes_it_byte_for_byte(toy_run, tmp_path):
    run = read_run(toy_run)
    assert run.record is not None
    again = tmp_path / "results.json"
    write_json(again, run.record.to_json())
    assert again.read_bytes() == (toy_run / "results.json").read_bytes()
    assert RunRecord.from_json(run.record.to_json()) == run.record
    block = run.record.sections.results["toy_tones"]["1-shot"]
    assert isinstance(block, ShotBlock) and block.main_metric == "accuracy"
    assert block.scored("accuracy") == block.n == 4 and block.get("accuracy").ci95 is not None
    group = run.record.sections.groups["toy"]["0-shot"]
    assert group.subtasks and set(group.subtasks) <= set(run.record.sections.results)


def test_sample_lines_read_back_as_the_records_that_write_them(toy_run):
    run = read_run(toy_run)
    lines = (toy_run / "samples_toy_tones.jsonl").read_text(encoding="utf-8").splitlines()
    samples = list(run.samples("toy_tones"))
    assert len(samples) == len(lines) > 0
    for line, sample in zip(lines, samples, strict=True):
        assert isinstance(sample, SampleRecord)
        assert json.dumps(sample.to_json(), ensure_ascii=False) == line
        assert SampleRecord.from_json(sample.to_json()) == sample
    first = samples[0]
    assert first.messages and any(p["type"] == "audio" for m in first.messages for p in m["content"])
    assert set(first.scores) >= {"accuracy", "parse_failure_rate"} and not first.failed


def test_a_failed_sample_keeps_its_typed_failure_beside_the_message():
    from audioeval.types import Failure

    line = {**_sample(), "response": None, "error": "HTTP 429: slow down", "prediction": None, "scores": {}}
    line |= {"latency_s": 0.5, "cached": False}
    record = SampleRecord.from_json(line)
    assert record.failed and record.failure is None and record.to_json() == line  # a file from before
    failed = SampleRecord.from_json(
        {**line, "failure": {"kind": "rate_limited", "status": 429, "detail": line["error"]}}
    )
    assert failed.failure == Failure("rate_limited", "HTTP 429: slow down", 429)
    assert list(failed.to_json())[-1] == "failure" and SampleRecord.from_json(failed.to_json()) == failed
    schema = json.loads((SCHEMA_DIR / "sample.schema.json").read_text())
    assert problems(failed.to_json(), schema) == []
    assert problems({**failed.to_json(), "failure": {"kind": "oops", "status": None, "detail": "x"}}, schema)


def test_a_field_a_later_version_adds_is_kept_where_it_was():
    line = {**_sample(), "latency_s": 0.5, "cached": False, "newer_field": {"x": 1}}
    record = SampleRecord.from_json(line)
    assert record.extra == {"newer_field": {"x": 1}} and record.to_json() == line


def test_the_shipped_schemas_are_those_the_types_generate(toy_run):
    for name in SCHEMAS:
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == schema_text(name), (
            f"docs/schemas/{name} is stale: run `python -m audioeval.results.schemas docs/schemas`"
        )


def test_a_real_runs_files_conform_to_the_published_schemas(toy_run):
    results = json.loads((SCHEMA_DIR / "results.schema.json").read_text())
    sample = json.loads((SCHEMA_DIR / "sample.schema.json").read_text())
    for schema in (results, sample):
        assert keywords(schema) <= CHECKED | DESCRIPTIVE, keywords(schema) - CHECKED - DESCRIPTIVE
    assert problems(json.loads((toy_run / "results.json").read_text()), results) == []
    for path in sorted(toy_run.glob("samples_*.jsonl")):
        for line in path.read_text().splitlines():
            assert problems(json.loads(line), sample) == [], path
    # and the checker does tell a damaged file
    damaged = json.loads((toy_run / "results.json").read_text())
    damaged["results"]["toy_tones"]["0-shot"]["accuracy_ci95"] = [0.1]
    assert problems(damaged, results)


def test_a_damaged_sample_line_names_the_file_line_and_field(toy_run, tmp_path):
    run = _copy(toy_run, tmp_path)
    path = run / "samples_toy_tones.jsonl"
    lines = path.read_text().splitlines()
    bad = json.loads(lines[2])
    bad["scores"] = {"accuracy": "yes"}
    lines[2] = json.dumps(bad)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        list(read_run(run).samples())
    assert f"{path}:3: `scores.accuracy` is a string, not a number" in str(err.value)


def test_a_damaged_results_json_names_the_line_and_field(toy_run, tmp_path):
    run = _copy(toy_run, tmp_path)
    path = run / "results.json"
    data = json.loads(path.read_text())
    data["results"]["toy_tones"]["1-shot"]["accuracy_ci95"] = [0.5]
    write_json(path, data)
    with pytest.raises(DataError) as err:
        read_run(run)
    line = next(
        i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith('"1-shot"')
    )
    assert f"{path}:{line}: `results.toy_tones.1-shot`: `accuracy_ci95` is [0.5], not [low, high]" in str(
        err.value
    )


def test_the_sample_files_of_degraded_copies_are_found(tmp_path):
    names = ["toy_tones", "toy_tones@noise_snr=5", "toy_tones@noise_snr=5+reverb=0.3"]
    for name in names:
        (tmp_path / f"samples_{name}.jsonl").write_text("")
    (tmp_path / "samples_toy_tones_chat@noise_snr=20.rank0.partial.jsonl").write_text("")
    found = find_sample_files(tmp_path)
    assert {t: [p.name for p in paths] for t, paths in found.items()} == {
        **{name: [f"samples_{name}.jsonl"] for name in names},
        "toy_tones_chat@noise_snr=20": ["samples_toy_tones_chat@noise_snr=20.rank0.partial.jsonl"],
    }


def test_a_block_keeps_what_it_was_told_and_nothing_else():
    block = ShotBlock(
        {"acc": MetricStats(0.5, 0.1, (0.3, 0.7), missing=2, unscored=["t2"]), "rate": MetricStats(None)},
        n=6,
        errors=1,
        subtasks=["t1", "t2"],
    )
    data = block.to_json()
    assert list(data) == [
        "acc", "acc_stderr", "acc_ci95", "acc_missing", "acc_unscored",
        "rate", "rate_stderr", "rate_ci95", "n", "errors", "subtasks",
    ]  # fmt: skip
    assert ShotBlock.from_json(data) == block and block.scored("acc") == 4
    with pytest.raises(ValueError, match="`stray_ci95` belongs to no metric"):
        ShotBlock.from_json({**data, "stray_ci95": [0, 1]})


def _sample() -> dict:
    return {
        "task": "t", "episode": 0, "episode_id": "e0", "shots": 0, "metadata": {}, "request_key": None,
        "messages": [], "gen_kwargs": {}, "response": "a", "error": None, "prediction": "a", "target": "a",
        "parse_failure": False, "scores": {"accuracy": 1.0}, "audio_seconds": 1.0,
    }  # fmt: skip


def _copy(run: Path, tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "run"
    shutil.copytree(run, target)
    return target
