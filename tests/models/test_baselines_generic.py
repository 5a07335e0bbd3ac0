"""The generic baselines on AudioICL-Bench episodes: which clips `examples_of` hands them as labelled examples
(AudioRemap's MIX clips, AnomalyDetect's Normal/Anomalous recordings, the Morse bank for a one-letter query),
and what `knn-icl` and `demo-majority` then answer."""

from __future__ import annotations

import string
from pathlib import Path

import pytest

from audioeval.data.builders import make_builder
from audioeval.models.baselines.examples import examples_of
from audioeval.models.registry import create_model
from audioeval.run.conductor import RunConfig, run_evaluation
from audioeval.types import Request, RequestId, ShownEpisode
from tests.conftest import load_samples


def _request(config: str, episode: dict, k: int, choices: list[str]) -> Request:
    return Request(
        messages=(),
        gen_kwargs={},
        rid=RequestId(f"audioicl_{config}", k, episode["index"]),
        choices=tuple(choices),
        shown=ShownEpisode.of(episode, k, config),
    )


def _shas(clips) -> list[str]:
    return [c.sha256 for c in clips]


def test_remap_examples_are_the_demo_mix_clips_and_the_target_the_query_mix():
    episode = make_builder("audioicl_bench", "audio_remap", {"n_episodes": 1, "seed": 43}).episode(0)
    view = examples_of(_request("audio_remap", episode, 4, episode["query"]["candidates"]), "knn-icl")
    mixes = [d["clips"][-1] for d in episode["demos"][:4]]
    assert all(c["role"] == "MIX" for c in mixes)
    assert _shas(e.clip for e in view.examples) == _shas(c["audio"] for c in mixes)
    assert view.labels == [d["label"] for d in episode["demos"][:4]]
    assert view.target.sha256 == episode["query"]["clips"][-1]["audio"].sha256
    assert view.context_examples == []


def test_anomaly_examples_are_the_labelled_recordings_of_each_demo():
    builder = make_builder(
        "audioicl_bench", "anomaly_detect", {"n_episodes": 1, "seed": 43, "anomaly_seconds": 1.0}
    )
    episode = builder.episode(0)
    view = examples_of(_request("anomaly_detect", episode, 2, ["Normal", "Anomalous"]), "knn-icl")
    assert view.labels == [
        "Normal",
        "Anomalous",
        "Normal",
        "Anomalous",
    ]  # never the demo's "Normal Anomalous"
    recordings = [c["audio"] for d in episode["demos"][:2] for c in d["clips"]]
    assert _shas(e.clip for e in view.examples) == _shas(recordings)
    assert view.target.sha256 == episode["query"]["clips"][0]["audio"].sha256
    for model in ("knn-icl", "demo-majority"):
        answers = create_model(model, {}, 1, 0).generate(
            [_request("anomaly_detect", episode, k, ["Normal", "Anomalous"]) for k in (0, 1, 2)]
        )
        assert all(r.text in ("Normal", "Anomalous") for r in answers), model


def test_the_morse_bank_is_an_example_set_only_where_letters_are_answers():
    letters = make_builder("audioicl_bench", "morse_letter", {"n_episodes": 1, "seed": 43}).episode(0)
    view = examples_of(_request("morse_letter", letters, 0, list(string.ascii_uppercase)), "knn-icl")
    assert [e.label for e in view.context_examples] == list(string.ascii_uppercase)
    assert _shas(e.clip for e in view.context_examples) == _shas(c["audio"] for c in letters["context"])
    words = make_builder("audioicl_bench", "morse_code", {"n_episodes": 1, "seed": 43}).episode(0)
    view = examples_of(_request("morse_code", words, 2, words["query"]["candidates"]), "knn-icl")
    assert view.context_examples == [] and view.labels == [d["label"] for d in words["demos"][:2]]


def test_demo_majority_answers_a_demo_label_and_so_never_a_count_it_was_shown(tmp_path):
    episode = make_builder("audioicl_bench", "audio_count", {"n_episodes": 1, "seed": 43}).episode(0)
    model = create_model("demo-majority", {}, 1, 0)
    for k in (1, 3, 5):
        (answer,) = model.generate([_request("audio_count", episode, k, [str(i) for i in range(1, 9)])])
        assert answer.text in [d["label"] for d in episode["demos"][:k]]
        assert answer.text != episode["query"]["label"]  # demo counts differ from the query's by design


@pytest.mark.slow
def test_knn_icl_matches_the_bank_and_repeated_remap_patterns(tmp_path):
    out = run_evaluation(
        RunConfig(
            tasks="audioicl_morse_letter,audioicl_audio_remap",
            model="knn-icl",
            num_fewshot=[0, 5],
            task_args={"n_episodes": 8},
            seed=47,
            output_path=str(tmp_path),
            log_samples=True,
            no_cache=True,
            bootstrap_resamples=200,
            show_progress=False,
        )
    )
    assert out is not None
    # the query letter's tones are its bank entry's: the nearest neighbour among the 26 bank clips, even at k=0
    assert out["results"]["audioicl_morse_letter"]["0-shot"]["accuracy"] == 1.0
    builder = make_builder("audioicl_bench", "audio_remap", {"n_episodes": 8, "seed": 47})
    repeated = 0
    for sample in load_samples(Path(out["run_dir"]), "audioicl_audio_remap"):
        if sample["shots"] != 5:
            continue
        demo_labels = [d["label"] for d in builder.episode(sample["episode"])["demos"][:5]]
        assert sample["response"] in demo_labels  # nearest neighbour answers a demo's label
        if sample["target"] in demo_labels:  # the same pattern was shown: its MIX is the identical clip
            repeated += 1
            assert sample["response"] == sample["target"]
    assert repeated >= 4
