"""What a model can score on AudioICL-Bench without analysing the signal: the shortcuts the paper's episodes
carry (AudioRemap twins, AudioCount elimination, MorseLetter's query = its bank clip), the `shortcut_free`
builds that remove them, the `shortcut` baseline that exploits them, and its column in the report."""

from __future__ import annotations

import numpy as np
import pytest

from audioeval.benchmarks.audioicl_bench.common import TASK_IDS
from audioeval.config.registry import TaskRegistry
from audioeval.data.builders import make_builder
from audioeval.errors import ModelError
from audioeval.models.registry import create_model
from audioeval.run.conductor import RunConfig, run_evaluation
from audioeval.run.prepared import prepare_tasks
from audioeval.types import AudioClip
from tests.conftest import latest_run, load_samples

N = 40


def episodes(config: str, n: int = N, **kwargs) -> list[dict]:
    builder = make_builder("audioicl_bench", config, {"n_episodes": n, "anomaly_seconds": 2.0, **kwargs})
    return [builder.episode(i) for i in range(n)]


def query_clip(episode: dict) -> AudioClip:
    return episode["query"]["clips"][-1]["audio"]


def labelled_hashes(episode: dict) -> set[str]:
    clips = [c for d in episode["demos"] for c in d["clips"]] + list(episode["context"])
    return {c["audio"].sha256 for c in clips if c.get("label")}


@pytest.mark.parametrize("config", list(TASK_IDS))
def test_no_shortcut_free_query_is_byte_identical_to_a_labelled_clip(config):
    for ep in episodes(config, n=6, shortcut_free=True):
        assert query_clip(ep).sha256 not in labelled_hashes(ep), ep["id"]
        assert ep["metadata"]["shortcut_free"] is True


def test_audio_remap_twins_by_default_and_an_independent_pattern_without_them():
    for ep in episodes(
        "audio_remap"
    ):  # default: the query MIX is a demo's twin exactly when its pattern was shown
        shown = [d["pattern"] for d in ep["demos"]]
        twin = query_clip(ep).sha256 in {d["clips"][-1]["audio"].sha256 for d in ep["demos"]}
        assert twin == (ep["query"]["pattern"] in shown)
    free = episodes("audio_remap", shortcut_free=True)
    repeated = [ep["query"]["pattern"] in [d["pattern"] for d in ep["demos"]] for ep in free]
    assert 0 < sum(repeated) < len(free)  # the query pattern may or may not be a demo's
    assert {p for ep in free for p in [ep["query"]["pattern"], *(d["pattern"] for d in ep["demos"])]} >= {
        "AAA",
        "BBB",
    }
    builder = make_builder("audioicl_bench", "audio_remap", {"shortcut_free": True, "max_shots": 8})
    assert builder.max_supported_shots() == 8 and len(builder.episode(0)["demos"]) == 8


@pytest.mark.slow
@pytest.mark.parametrize("config", ["audio_count", "audio_count_hard"])
def test_audio_count_query_count_is_unseen_by_default_and_independent_with_shortcut_free(config):
    n = 12 if config == "audio_count_hard" else N
    for ep in episodes(config, n=n):
        assert ep["query"]["label"] not in [d["label"] for d in ep["demos"]]
    free = episodes(config, n=n, shortcut_free=True)
    seen = [ep["query"]["label"] in [d["label"] for d in ep["demos"]] for ep in free]
    assert 0 < sum(seen) < len(free)
    assert all(len({d["label"] for d in ep["demos"]}) == len(ep["demos"]) for ep in free)


def test_morse_letter_query_is_its_bank_clip_unless_shortcut_free():
    for ep in episodes("morse_letter"):
        bank = {c["label"]: c["audio"].sha256 for c in ep["context"]}
        assert query_clip(ep).sha256 == bank[ep["query"]["label"]]
    free = episodes("morse_letter", shortcut_free=True)
    for ep in free:
        assert 0.05 <= abs(ep["query"]["wpm"] / ep["metadata"]["morse"]["wpm"] - 1) <= 0.15
    seen = [ep["query"]["label"] in [d["label"] for d in ep["demos"]] for ep in free]
    assert 0 < sum(seen) < len(free)  # the query letter is drawn independently of the demos'


def test_shortcut_free_is_a_task_parameter_and_must_be_a_boolean():
    registry = TaskRegistry.discover()
    (task,) = prepare_tasks(registry, ["audioicl_audio_count"], num_fewshot=None, task_args={"shortcut_free": "true"},
                            limit=None, seed=0, gen_kwargs={})  # fmt: skip
    assert task.builder.config.shortcut_free is True
    with pytest.raises(Exception, match="shortcut_free='yes': expected true or false"):
        make_builder("audioicl_bench", "audio_count", {"shortcut_free": "yes"}).validate()


# ---- the `shortcut` baseline -------------------------------------------------------------------------------


def run(tmp_path, name: str, tasks: str, model: str = "shortcut", **task_args) -> dict:
    return run_evaluation(
        RunConfig(tasks=tasks, model=model, limit="30", num_fewshot=[0, 1, 3, 5], task_args=task_args,
                  output_path=str(tmp_path / name), log_samples=True, no_cache=True, show_progress=False,
                  bootstrap_resamples=0)
    )  # fmt: skip


def rules(tmp_path, name: str, task: str) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for record in load_samples(latest_run(tmp_path / name), task):
        out.setdefault(record["shots"], []).append(record)
    return out


@pytest.mark.slow
def test_shortcut_model_copies_twins_eliminates_seen_labels_and_loses_both_on_shortcut_free_builds(tmp_path):
    tasks = "audioicl_audio_remap,audioicl_audio_count,audioicl_morse_letter"
    default = run(tmp_path, "default", tasks)["results"]
    free = run(tmp_path, "free", tasks, shortcut_free=True)["results"]

    remap = rules(tmp_path, "default", "audioicl_audio_remap")
    twins = [r for r in remap[5] if r["response_info"]["shortcut"]["rule"] == "clip identity"]
    assert len(twins) > len(remap[5]) / 2 and all(r["scores"]["accuracy"] == 1.0 for r in twins)
    others = [r for r in remap[5] if r not in twins]
    assert all(
        r["response_info"]["shortcut"] == {"rule": "elimination + label statistics", "candidates": 3}
        for r in others
    )
    count = rules(tmp_path, "default", "audioicl_audio_count")
    assert {r["response_info"]["shortcut"]["candidates"] for r in count[3]} == {
        5
    }  # 8 counts less the 3 shown
    assert default["audioicl_morse_letter"]["0-shot"]["accuracy"] == 1.0  # the query is its bank clip

    for task in ("audioicl_audio_remap", "audioicl_audio_count", "audioicl_morse_letter"):
        for k, records in rules(tmp_path, "free", task).items():
            assert all(r["response_info"]["shortcut"]["rule"] == "label statistics" for r in records), (
                task,
                k,
            )
    assert default["audioicl_audio_remap"]["5-shot"]["accuracy"] >= 0.85
    assert free["audioicl_audio_remap"]["5-shot"]["accuracy"] <= 0.3
    assert free["audioicl_morse_letter"]["0-shot"]["accuracy"] <= 0.2


def test_shortcut_model_never_reads_the_samples_and_answers_the_same_in_any_order():
    registry = TaskRegistry.discover()
    (task,) = prepare_tasks(registry, ["audioicl_audio_remap"], num_fewshot=[0, 1, 3, 5], task_args={"n_episodes": 6},
                            limit=None, seed=0, gen_kwargs={})  # fmt: skip
    model = create_model("shortcut", {}, batch_size=1, seed=0)
    model.prepare([task])
    requests = [r for i in range(6) for r, _ in task.requests_for(task.episode(i))]
    answers = [(r.text, r.info) for r in model.generate(requests)]
    assert answers[::-1] == [(r.text, r.info) for r in model.generate(requests[::-1])]
    again = create_model("shortcut", {}, batch_size=1, seed=0)
    again.prepare([task])
    assert answers == [(r.text, r.info) for r in again.generate(requests)]

    # every distinct clip replaced by a different noise clip: same identities, other samples -> same rules
    rng = np.random.default_rng(0)
    replacement: dict[str, np.ndarray] = {}
    for i in range(6):
        ep = task.episode(i)
        for clip in [c for d in ep["demos"] for c in d["clips"]] + ep["query"]["clips"]:
            noise = replacement.setdefault(clip["audio"].sha256, 0.1 * rng.standard_normal(800))
            clip["audio"] = AudioClip.from_array(noise, 16000)
        for (request, _), (_text, info) in zip(
            task.requests_for(ep), answers[i * 4 : i * 4 + 4], strict=True
        ):
            (response,) = model.generate([request])
            assert response.info == info


def test_shortcut_model_refuses_tasks_outside_audioicl(tmp_path, toy_dir):
    with pytest.raises(ModelError, match="has no method for task 'toy_tones'.*audioicl_audio_count"):
        run_evaluation(RunConfig(tasks="toy_tones", model="shortcut", include_path=[str(toy_dir)], no_cache=True,
                                 show_progress=False))  # fmt: skip


@pytest.mark.slow
def test_report_prints_the_shortcut_score_beside_chance(tmp_path):
    tasks = "audioicl_audio_remap,audioicl_audio_count"
    run(tmp_path, "chance", tasks, model="chance")
    shortcut = run(tmp_path, "shortcut", tasks)["results"]
    report = (latest_run(tmp_path / "chance") / "audioicl_report.md").read_text()
    assert "| task | axis | chance | shortcut (k = 0 / 1 / 3 / 5) |" in report
    for name, short in (
        ("audioicl_audio_remap", "AudioRemap (AR)"),
        ("audioicl_audio_count", "AudioCount (AC)"),
    ):
        expected = " / ".join(f"{100 * shortcut[name][f'{k}-shot']['accuracy']:.1f}" for k in (0, 1, 3, 5))
        assert f"| {short} | A2 | 12.5 | {expected} |" in report
    own = (latest_run(tmp_path / "shortcut") / "audioicl_report.md").read_text()

    def shortcut_cells(text: str) -> list[str]:
        return [line.split(" | ")[3] for line in text.splitlines() if line.startswith(("| Audio", "| **A2"))]

    assert shortcut_cells(own) == shortcut_cells(report)  # read from its own results, recomputed for others


@pytest.mark.slow
def test_the_shortcut_reference_model_is_served_from_the_response_cache_on_a_rerun(tmp_path, monkeypatch):
    """`reference_models: [shortcut]` takes the serving path every model takes: a rerun with the same cache
    answers its requests from the cache, so it never studies a task again, and reports the same numbers as a
    run that scores it without any cache."""
    from audioeval.benchmarks.audioicl_bench.baselines.shortcut import ShortcutModel

    studied: list[str] = []
    study = ShortcutModel.study
    monkeypatch.setattr(
        ShortcutModel, "study", lambda self, task: studied.append(task.name) or study(self, task)
    )

    def evaluate(**settings) -> dict:
        return run_evaluation(
            RunConfig(tasks="audioicl_audio_count", model="chance", limit="4", num_fewshot=[0, 1],
                      task_args={"n_episodes": 4, "max_shots": 1}, show_progress=False,
                      bootstrap_resamples=100, **settings)
        )  # fmt: skip

    first = evaluate(cache_dir=str(tmp_path / "cache"))
    assert studied == ["audioicl_audio_count"]
    again = evaluate(cache_dir=str(tmp_path / "cache"))
    assert studied == ["audioicl_audio_count"]  # the rerun's reference requests were all cache hits
    assert (
        again["reference_models"] == first["reference_models"] == evaluate(no_cache=True)["reference_models"]
    )
    block = first["reference_models"]["shortcut"]["audioicl_audio_count"]
    assert set(block) == {"0-shot", "1-shot"} and block["0-shot"]["n"] == 4
