"""Throughput of the `hf` backend on a tiny Qwen2-Audio checkpoint, and lm-eval's `hf-audiolm-qwen` on the
same requests and the same checkpoint, side by side.

    PYTHONPATH=src python bench/bench_backends.py [--requests 48] [--batch-sizes 1,4,16] \
        [--out bench/results/backends.json]

Reports samples/s and real-time factor (wall seconds per second of audio) per batch size, and the ratio
audioeval / lm-eval. The `openai` backend is not measured here (it is developed separately).

lm-eval is first run as released. Where that fails (it does with lm-eval 0.4.13 + transformers 5: see the
`lm_eval.unpatched` entry of the output), it is run again with the smallest shims that make its code path
work, each listed in the output, and its outputs are compared with audioeval's (same greedy decoding).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # tests/support/: the tiny checkpoint builders

from audioeval.types import AudioClip, AudioPart, Message, Request, RequestId, TextPart  # noqa: E402

RATE = 16000
SYSTEM = "Answer low or high."
MAX_NEW = 8


def _tone(rng: np.random.Generator) -> tuple[AudioClip, str]:
    high = rng.random() < 0.5
    freq = rng.uniform(1500, 3000) if high else rng.uniform(100, 400)
    seconds = rng.uniform(0.5, 1.5)
    t = np.arange(int(seconds * RATE)) / RATE
    return AudioClip.from_array(0.3 * np.sin(2 * np.pi * freq * t), RATE), "high" if high else "low"


def make_requests(n: int, seed: int = 0) -> list[Request]:
    """Toy ICL prompts: k in 0..3 labelled demo tones, then a query tone."""
    rng = np.random.default_rng(seed)
    requests = []
    for i in range(n):
        k = i % 4
        parts: list[Any] = []
        for d in range(k):
            clip, label = _tone(rng)
            parts += [TextPart(f"[Demo {d + 1}] "), AudioPart(clip), TextPart(f" Label: {label}\n")]
        clip, _ = _tone(rng)
        parts += [TextPart("[Query] "), AudioPart(clip), TextPart(" Label:")]
        messages = (Message("system", (TextPart(SYSTEM),)), Message("user", tuple(parts)))
        requests.append(
            Request(messages, {"max_new_tokens": MAX_NEW, "until": ["\n"]}, RequestId("bench", k, i))
        )
    return requests


def _chunks(requests: list[Request], size: int) -> list[list[Request]]:
    ordered = sorted(requests, key=lambda r: -r.audio_seconds)  # as the evaluator hands them over
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


class AudioevalRunner:
    """The `hf` backend on the requests, chunked as the evaluator hands them over."""

    name = "audioeval hf"

    def __init__(self, model_dir: Path) -> None:
        from audioeval.models.registry import create_model

        self.model = create_model("hf", {"pretrained": str(model_dir), "audio_placement": "inline"}, 1, 0)

    def run(self, requests: list[Request], size: int) -> list[str]:
        self.model.batch_size = size
        texts = {}
        for chunk in _chunks(requests, size):
            for request, response in zip(chunk, self.model.generate(chunk), strict=True):
                texts[request.rid.episode] = response.text
        return [texts[r.rid.episode] for r in requests]


def measure(runners: list[Any], requests: list[Request], sizes: list[int], repeats: int) -> dict[str, Any]:
    """Best-of-`repeats` wall time per runner and batch size, the runners alternating so that a slow patch
    of a shared machine hits both alike."""
    audio = sum(r.audio_seconds for r in requests)
    out: dict[str, Any] = {runner.name: {"runs": {}, "texts": {}} for runner in runners}
    for size in sizes:
        for runner in runners:
            runner.run(requests[:size], size)  # warm-up
        walls: dict[str, list[float]] = {runner.name: [] for runner in runners}
        for _ in range(repeats):
            for runner in runners:
                started = time.perf_counter()
                texts = runner.run(requests, size)
                walls[runner.name].append(time.perf_counter() - started)
                out[runner.name]["texts"][str(size)] = texts
        for runner in runners:
            run = _rates(len(requests), min(walls[runner.name]), audio)
            run["wall_seconds_all_repeats"] = [round(w, 3) for w in walls[runner.name]]
            out[runner.name]["runs"][str(size)] = run
    return out


def _rates(n: int, wall: float, audio: float) -> dict[str, float]:
    return {
        "samples": n,
        "wall_seconds": round(wall, 3),
        "samples_per_second": round(n / wall, 3),
        "real_time_factor": round(wall / audio, 5),
    }


# ---------------------------------------------------------------------------------------------------------
# lm-eval


def _instances(prompts: list[str], requests: list[Request]) -> list[Any]:
    from lm_eval.api.instance import Instance

    placeholder = "<|audio_bos|><|AUDIO|><|audio_eos|>"
    out = []
    for i, (prompt, request) in enumerate(zip(prompts, requests, strict=True)):
        context = prompt.replace(placeholder, "<audio>")  # lm-eval writes its own placeholder back
        audio = [{"array": c.samples, "sampling_rate": c.sampling_rate} for c in request.clips]
        out.append(
            Instance(
                "generate_until",
                {},
                (context, {"max_gen_toks": MAX_NEW, "until": ["\n"]}, {"audio": audio}),
                i,
            )
        )
    return out


def _load_lm_eval_class(fix_registry: bool) -> Any:
    from lm_eval.api.registry import get_model, model_registry

    if fix_registry:
        # lm-eval 0.4.13 registers the lazy alias as `hf_audiolm:HFAudioLM`; the class is `HFAUDIOLMQWEN`.
        model_registry._objs["hf-audiolm-qwen"] = "lm_eval.models.hf_audiolm:HFAUDIOLMQWEN"
    return get_model("hf-audiolm-qwen")


class _AudioKwargProcessor:
    """Forwards lm-eval's deprecated `audios=` as `audio=` (removed from transformers processors in 4.54)."""

    def __init__(self, processor: Any) -> None:
        self._processor = processor

    def __call__(self, *args: Any, audios: Any = None, **kwargs: Any) -> Any:
        return self._processor(*args, audio=audios, sampling_rate=RATE, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._processor, name)


@contextlib.contextmanager
def _cuda_to_cpu():
    """lm-eval moves input_ids with a hard-coded .to("cuda"); on a CPU-only machine send them to the CPU."""
    import torch

    if torch.cuda.is_available():
        yield
        return
    original = torch.Tensor.to

    def to(self, *args, **kwargs):
        args = tuple("cpu" if a == "cuda" else a for a in args)
        return original(self, *args, **kwargs)

    torch.Tensor.to = to
    try:
        yield
    finally:
        torch.Tensor.to = original


class LmEvalRunner:
    """lm-eval's hf-audiolm-qwen with the shims that let it run here (listed in `shims`)."""

    name = "lm-eval hf-audiolm-qwen"

    def __init__(self, model_dir: Path, prompts: list[str], requests: list[Request], device: str) -> None:
        cls = _load_lm_eval_class(fix_registry=True)
        self.lm = cls(pretrained=str(model_dir), device=device, batch_size=1, dtype="float32")
        self.lm.processor = _AudioKwargProcessor(self.lm.processor)
        self.instances = {id(r): i for r, i in zip(requests, _instances(prompts, requests), strict=True)}

    def run(self, requests: list[Request], size: int) -> list[str]:
        self.lm.batch_size_per_gpu = size
        with _cuda_to_cpu():
            return self.lm.generate_until([self.instances[id(r)] for r in requests], disable_tqdm=True)


def lm_eval_status(
    model_dir: Path, requests: list[Request], prompts: list[str], device: str
) -> dict[str, Any]:
    """What happens with lm-eval as released, and with the `audios=` kwarg it passes to the processor."""
    out: dict[str, Any] = {}
    try:
        cls = _load_lm_eval_class(fix_registry=False)
        lm = cls(pretrained=str(model_dir), device=device, batch_size=1, dtype="float32")
        lm.generate_until(_instances(prompts[:2], requests[:2]), disable_tqdm=True)
        out["unpatched"] = {"ran": True}
    except Exception as err:
        out["unpatched"] = {"ran": False, "error": f"{type(err).__name__}: {err}".strip()[:400]}
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(str(model_dir))
    clip = requests[0].clips[0]
    try:
        encoded = processor(
            audios=[clip.samples], text=["x <|audio_bos|><|AUDIO|><|audio_eos|>"], return_tensors="pt"
        )
        dropped = not any("feature" in k for k in encoded)
        out["audios_kwarg"] = "silently dropped (no audio features in the output)" if dropped else "accepted"
    except Exception as err:
        out["audios_kwarg"] = f"refused: {type(err).__name__}: {err}"
    out["shims"] = [
        "registry alias hf-audiolm-qwen -> HFAUDIOLMQWEN",
        "processor(audios=...) forwarded as audio=...",
    ]
    if device == "cpu":
        out["shims"].append('Tensor.to("cuda") -> cpu (no GPU here)')
    return out


# ---------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--batch-sizes", default="1,4,16")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per batch size (best is kept)")
    parser.add_argument("--model-dir", help="an existing tiny qwen2_audio checkpoint (default: build one)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1: stable numbers on a shared machine)"
    )
    parser.add_argument("--skip-lm-eval", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "backends.json"))
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    requests = make_requests(args.requests)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(args.model_dir) if args.model_dir else None
        if model_dir is None:
            from tests.support.tiny import build_tiny_model

            model_dir = build_tiny_model("qwen2_audio", Path(tmp) / "qwen2_audio")
        ours = AudioevalRunner(model_dir)
        prompts = [ours.model.frontend.prompt(r) for r in requests]
        runners: list[Any] = [ours]
        status = None
        if not args.skip_lm_eval:
            status = lm_eval_status(model_dir, requests, prompts, device)
            try:
                theirs = LmEvalRunner(model_dir, prompts, requests, device)
                status["tokenizer_padding_side"] = theirs.lm.tokenizer.padding_side
                runners.append(theirs)
            except Exception as err:
                status["shimmed_error"] = f"{type(err).__name__}: {err}"
        try:
            measured = measure(runners, requests, sizes, args.repeats)
        except Exception as err:
            if len(runners) == 1:
                raise
            status["shimmed_error"] = f"{type(err).__name__}: {err}"
            measured = measure(runners[:1], requests, sizes, args.repeats)
    report = summarize(requests, measured, status, sizes, args.repeats)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    print(f"\nwritten: {args.out}")
    return 0


def _cut(text: str) -> str:
    return text.split("\n")[0]


def summarize(
    requests: list[Request], measured: dict, status: dict | None, sizes: list[int], repeats: int
) -> dict[str, Any]:
    import torch
    import transformers

    ours = measured[AudioevalRunner.name]
    report: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "cpu_threads": torch.get_num_threads(),
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        },
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "model": "tiny Qwen2-Audio (tests.support.tiny), float32",
        "requests": len(requests),
        "audio_seconds": round(sum(r.audio_seconds for r in requests), 3),
        "clips": sum(len(r.clips) for r in requests),
        "max_new_tokens": MAX_NEW,
        "timing": f"best of {repeats} timed repeats after a warm-up, the two harnesses alternating",
        "audioeval_hf": {
            "runs": ours["runs"],
            "batch_invariant": len({json.dumps(t) for t in ours["texts"].values()}) == 1,
        },
        "openai": "not measured: the openai backend is developed separately and is not on this branch",
    }
    if status is not None:
        import lm_eval

        report["versions"]["lm_eval"] = lm_eval.__version__
        lm = dict(status)
        theirs = measured.get(LmEvalRunner.name)
        if theirs:
            lm["runs"] = theirs["runs"]
            lm["speedup_audioeval_over_lm_eval"] = {
                s: round(ours["runs"][s]["samples_per_second"] / theirs["runs"][s]["samples_per_second"], 3)
                for s in theirs["runs"]
            }
            reference = [_cut(t) for t in ours["texts"][str(sizes[0])]]
            lm["same_outputs_as_audioeval"] = {
                s: round(sum(a == _cut(b) for a, b in zip(reference, texts, strict=True)) / len(reference), 4)
                for s, texts in theirs["texts"].items()
            }
        report["lm_eval_hf_audiolm_qwen"] = lm
    return report


def print_report(report: dict[str, Any]) -> None:
    print(
        f"{report['requests']} requests, {report['clips']} clips, {report['audio_seconds']} s of audio, "
        f"max_new_tokens={report['max_new_tokens']} ({report['model']})"
    )
    lm = report.get("lm_eval_hf_audiolm_qwen") or {}
    print("\nbatch | audioeval hf samples/s (RTF) | lm-eval hf-audiolm-qwen samples/s (RTF) | ratio")
    for size, run in report["audioeval_hf"]["runs"].items():
        other = (lm.get("runs") or {}).get(size)
        theirs = f"{other['samples_per_second']:.2f} ({other['real_time_factor']:.4f})" if other else "n/a"
        ratio = (lm.get("speedup_audioeval_over_lm_eval") or {}).get(size)
        print(
            f"{size:>5} | {run['samples_per_second']:>8.2f} ({run['real_time_factor']:.4f})"
            f"{'':>10} | {theirs:>26}{'':>14} | {ratio if ratio is not None else 'n/a'}"
        )
    print(f"\naudioeval outputs identical across batch sizes: {report['audioeval_hf']['batch_invariant']}")
    if lm:
        print(f"lm-eval as released: {lm['unpatched']}")
        print(f"processor(audios=...) on this transformers: {lm['audios_kwarg']}")
        print(f"lm-eval measured with shims: {lm['shims']}")
        if lm.get("tokenizer_padding_side") == "right":
            print(
                "lm-eval pads batches on the right (the tokenizer's default): outputs depend on batch mates"
            )
        if "shimmed_error" in lm:
            print(f"lm-eval failed even with the shims: {lm['shimmed_error']}")
        if "same_outputs_as_audioeval" in lm:
            print(
                f"share of lm-eval outputs equal to audioeval's (cut at the stop string): {lm['same_outputs_as_audioeval']}"
            )
    print(f"openai: {report['openai']}")


if __name__ == "__main__":
    sys.exit(main())
