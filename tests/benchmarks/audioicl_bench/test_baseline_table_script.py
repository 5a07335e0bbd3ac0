"""The baseline table (audioeval.benchmarks.audioicl_bench.baseline_table) names no task itself: its rows come from the tasks' YAML metadata, the same facts
the AudioICL-Bench report shows, and the README table it wrote carries them."""

from __future__ import annotations

from pathlib import Path

from audioeval.benchmarks.audioicl_bench import baseline_table

ROOT = Path(__file__).resolve().parents[3]


def test_baseline_rows_come_from_the_task_metadata_and_match_the_readme():
    facts = baseline_table.TASKS
    assert list(facts)[:2] == ["audioicl_audio_count", "audioicl_audio_count_hard"]
    assert len(facts) == 10 and "audioicl_morse_letter" in facts
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for short, full, chance in facts.values():
        assert f"| {full} ({short}) | 0 | {chance} |" in readme, (short, full, chance)
