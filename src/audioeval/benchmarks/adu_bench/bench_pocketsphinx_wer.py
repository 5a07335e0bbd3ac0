"""How well the offline `pocketsphinx` ASR (the default first stage of `--model cascade`) hears ADU-Bench's
built-in English queries as eSpeak NG speaks them: word error rate per speaker and per speech rate.

    python -m audioeval.benchmarks.adu_bench.bench_pocketsphinx_wer [--limit N]
    python -m audioeval.benchmarks.adu_bench.bench_pocketsphinx_wer --augment babble_snr=20,10,0 [--config general]

Prints a markdown table (quoted in docs/adu_bench.md). English items of the general and skill datasets,
each rendered with every speaker at the standard settings and at the +-10% rates. With --augment (the
harness's flag, repeatable): the WER of one ADU-Bench config's queries as a run evaluates them, clean and
under every condition (quoted in docs/robustness.md).
"""

from __future__ import annotations

import argparse
import re
import time

import jiwer

from audioeval.benchmarks.adu_bench.domains import LANGUAGES
from audioeval.benchmarks.adu_bench.queries import read_query_file
from audioeval.benchmarks.adu_bench.render import SPEAKERS, Variation, render
from audioeval.models.pocketsphinx_asr import PocketSphinxModel
from audioeval.resources import builders_dir
from audioeval.types import AudioClip


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())


def wer_under_conditions(flags: list[str], config: str, limit: int | None) -> None:
    from audioeval.augment.episode import augment_episode
    from audioeval.augment.plan import parse_augment
    from audioeval.data.builders import make_builder

    plan = parse_augment(flags)
    assert plan is not None, "--augment names at least one condition"
    builder = make_builder("adu_bench", config, {})
    episodes = [
        builder.episode(i) for i in range(min(limit or builder.num_episodes(), builder.num_episodes()))
    ]
    episodes = [e for e in episodes if e["metadata"]["language"] == "en"]
    sphinx = PocketSphinxModel(batch_size=1, seed=0)
    refs = [normalise(e["metadata"]["question"]) for e in episodes]
    print(f"ADU-Bench {config}: {len(episodes)} English queries, the run's renderings (seed 0)\n")
    print("| condition | WER |")
    print("|---|---|")
    for condition in [None, *plan.conditions]:
        degraded = (
            episodes if condition is None else [augment_episode(e, condition, builder) for e in episodes]
        )
        hyps = [normalise(sphinx.transcribe(e["query"]["clips"][0]["audio"])) for e in degraded]
        print(
            f"| {'clean' if condition is None else condition.name} | {jiwer.wer(refs, hyps):.3f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None, help="queries per dataset (default: all)")
    parser.add_argument("--augment", action="append", default=[], help="as the harness's --augment")
    parser.add_argument("--config", default="general", help="with --augment: the ADU-Bench config")
    args = parser.parse_args()
    if args.augment:
        wer_under_conditions(args.augment, args.config, args.limit)
        return
    corpus = builders_dir() / "adu_bench" / "corpus"
    items = [
        i for name in ("general", "skill") for i in read_query_file(corpus / f"{name}.jsonl")[: args.limit]
    ]
    sphinx = PocketSphinxModel(batch_size=1, seed=0)
    print(f"{len(items)} English queries (general + skill)\n")
    print("| speaker | rate | WER | seconds of audio | decode x real time |")
    print("|---|---|---|---|---|")
    for speaker, gender in SPEAKERS:
        for rate in ("-10%", "standard", "+10%"):
            variation = Variation(
                speaker, gender, f"{LANGUAGES['en'][1]}+{speaker}", rate, "standard", "standard"
            )
            refs, hyps, audio_s, started = [], [], 0.0, time.perf_counter()
            for item in items:
                clip = AudioClip.from_array(render(item, variation, 16000), 16000)
                audio_s += clip.seconds
                refs.append(normalise(item.question))
                hyps.append(normalise(sphinx.transcribe(clip)))
            took = time.perf_counter() - started
            print(
                f"| {speaker} ({gender}) | {rate} | {jiwer.wer(refs, hyps):.3f} | {audio_s:.0f} | {took / audio_s:.2f} |"
            )


if __name__ == "__main__":
    main()
