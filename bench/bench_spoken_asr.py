"""The ASR of spoken answers overlaps generation: wall time of a spoken run against the longer of its two
stages run alone (target: wall <= 1.2 x max(generation, ASR); issue 21).

    python bench/bench_spoken_asr.py [--episodes 8] [--latency 0.4] [--concurrency 2]

`--model tts` over a fake endpoint (in this process, a fixed delay per request, answers that vary with the
request so every spoken answer is a different clip) speaks each answer with eSpeak NG; pocketsphinx hears it
in its worker process. Three runs on the toy task (task wall time, from results.json):
1. generation alone: `--asr none --spoken_text transcript`, fresh cache;
2. ASR alone: the same requests again with pocketsphinx, generation answered from the cache of run 1;
3. both: a fresh cache, generation and ASR together.
Then the ASR's own loss on known text: `tts_pocketsphinx_wer`, the corpus WER of pocketsphinx on short
English sentences spoken by `--model tts`'s voice (normalised as `spoken_text_wer` is).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "fixtures" / "toy"
WORDS = "zero one two three four five six seven eight nine".split()


def varied_answer(body: dict[str, Any]) -> str:
    """A different short sentence per prompt, so no two spoken answers share a clip (nor an ASR request)."""
    from audioeval.testing.fake_openai import prompt_text

    digest = hashlib.sha256(prompt_text(body).encode()).digest()
    return "the answer is " + " ".join(WORDS[b % 10] for b in digest[:3])


def task_wall(base_url: str, cache: str, episodes: int, concurrency: int, asr: bool) -> dict[str, float]:
    from audioeval.run.conductor import RunConfig, run_evaluation

    cfg = RunConfig(
        tasks="toy_tones",
        model="tts",
        model_args={
            "text_model": "openai",
            "model": "bench",
            "base_url": base_url,
            "num_concurrent": concurrency,
        },
        include_path=[str(TOY)],
        limit=str(episodes),
        cache_dir=cache,
        bootstrap_resamples=0,
        show_progress=False,
        asr="pocketsphinx" if asr else "none",
        spoken_text="asr" if asr else "transcript",
    )
    timing = run_evaluation(cfg)["timing"]["tasks"]["toy_tones"]
    return {k: timing[k] for k in ("wall_seconds", "generate_seconds", "asr_seconds", "samples")}


SENTENCES = (
    "the answer is seven", "the sky is blue", "two plus two is four", "paris is the capital of france",
    "water boils at one hundred degrees", "yes", "no", "the second clip is longer", "it is a dog barking",
    "there are three sounds in the clip",
)  # fmt: skip


def asr_loss() -> float:
    """Corpus WER of pocketsphinx on SENTENCES spoken as `--model tts` speaks (eSpeak NG, en, 24 kHz)."""
    from audioeval.audio.speech import synthesize
    from audioeval.models.pocketsphinx_asr import PocketSphinxModel
    from audioeval.models.speech.tts import SAMPLING_RATE
    from audioeval.results.spoken_metrics import edit_distance, normalise_words
    from audioeval.types import AudioClip

    asr = PocketSphinxModel()
    edits = words = 0
    for text in SENTENCES:
        clip = AudioClip.from_array(synthesize(text, sampling_rate=SAMPLING_RATE), SAMPLING_RATE)
        ref, hyp = normalise_words(text), normalise_words(asr.transcribe(clip))
        edits, words = edits + edit_distance(ref, hyp), words + len(ref)
    return edits / words


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=8, help="toy episodes (x3 shot counts = answers)")
    parser.add_argument("--latency", type=float, default=0.4, help="seconds per request at the fake endpoint")
    parser.add_argument("--concurrency", type=int, default=2, help="text requests in flight")
    args = parser.parse_args()
    from audioeval.testing.fake_openai import FakeOpenAIServer

    with (
        FakeOpenAIServer(reply=varied_answer, delay=args.latency) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        generation = task_wall(server.base_url, f"{tmp}/a", args.episodes, args.concurrency, asr=False)
        asr_alone = task_wall(server.base_url, f"{tmp}/a", args.episodes, args.concurrency, asr=True)
        both = task_wall(server.base_url, f"{tmp}/b", args.episodes, args.concurrency, asr=True)
    longer = max(generation["wall_seconds"], asr_alone["wall_seconds"])
    figures = {
        "answers": both["samples"],
        "generation_alone_s": generation["wall_seconds"],
        "asr_alone_s": asr_alone["wall_seconds"],
        "both_s": both["wall_seconds"],
        "both_generate_busy_s": both["generate_seconds"],
        "both_asr_busy_s": both["asr_seconds"],
        "ratio_to_longer_stage": round(both["wall_seconds"] / longer, 3),
        "target": "<= 1.2",
        "tts_pocketsphinx_wer": round(asr_loss(), 3),
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
