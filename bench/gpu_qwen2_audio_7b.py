"""Samples/s of the `hf` backend with a full-size Qwen2-Audio-7B model (random weights, bf16) on one GPU.

    PYTHONPATH=src python bench/gpu_qwen2_audio_7b.py [--batch-sizes 1,8,32] [--requests 64] \
        [--max-new-tokens 16] [--out bench/results/gpu_qwen2_audio_7b.json]

Nothing is downloaded. The configuration has the sizes of the released Qwen/Qwen2-Audio-7B-Instruct
(Whisper-large-v3-sized encoder: 32 layers x 1280, 128 mel bins, 30 s window; Qwen-7B-sized decoder:
32 layers x 4096, 32 heads, vocabulary 156,032), the weights are drawn at random directly on the GPU, and the
processor (Whisper features + a small BPE tokenizer with the Qwen2-Audio special tokens) is built locally.
The request mix is bench/bench_backends.py's: toy ICL prompts with 0-3 labelled demos, 0.5-1.5 s clips.
Random weights never emit the end token, so every request decodes exactly --max-new-tokens tokens: the
figures are per-token work for a fixed length, which is what the batch sizes are compared on.

Budget: about a minute of model init and a few minutes of generation on one H100/H200-class GPU.
`--smoke` shrinks the model to run the same code on a CPU in seconds (to check the script, not to measure).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # tests/support/: the tiny checkpoint builders
sys.path.insert(0, str(ROOT / "bench"))

from bench_backends import make_requests  # noqa: E402

# Sizes of the released Qwen2-Audio-7B(-Instruct) config.json.
AUDIO = {
    "d_model": 1280,
    "encoder_layers": 32,
    "encoder_attention_heads": 20,
    "encoder_ffn_dim": 5120,
    "num_mel_bins": 128,
    "max_source_positions": 1500,
}
TEXT = {
    "model_type": "qwen2",
    "vocab_size": 156032,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
}
SMOKE_AUDIO = {
    **AUDIO,
    "d_model": 64,
    "encoder_layers": 1,
    "encoder_attention_heads": 2,
    "encoder_ffn_dim": 128,
}
SMOKE_TEXT = {
    **TEXT,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
}


def build(folder: Path, smoke: bool, device: str):
    """The checkpoint folder without weights (config + processor) and the random-weight model in memory."""
    import torch
    from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration

    from tests.support.tiny import qwen2_audio_processor

    processor = qwen2_audio_processor(chunk_seconds=30, mel_bins=128)
    config = Qwen2AudioConfig(
        audio_config=SMOKE_AUDIO if smoke else AUDIO,
        text_config=SMOKE_TEXT if smoke else TEXT,
        audio_token_index=processor.tokenizer.convert_tokens_to_ids("<|AUDIO|>"),
    )
    processor.save_pretrained(folder)
    config.save_pretrained(folder)
    dtype = torch.float32 if smoke else torch.bfloat16
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2AudioForConditionalGeneration._from_config(config, dtype=dtype)
    model.generation_config.eos_token_id = processor.tokenizer.convert_tokens_to_ids("<|im_end|>")
    return model.eval()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch-sizes", default="1,8,32")
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=16)  # AudioICL-Bench's default
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU: checks the script only")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "gpu_qwen2_audio_7b.json"))
    args = parser.parse_args(argv)
    import torch
    import transformers

    from audioeval.models.registry import create_model

    device = "cpu" if args.smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device; use --smoke to check the script on a CPU", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    requests = make_requests(args.requests)
    for r in requests:
        r.gen_kwargs = {"max_new_tokens": args.max_new_tokens}
    audio = sum(r.audio_seconds for r in requests)
    report: dict = {
        "model": "Qwen2-Audio-7B sizes, random weights" + (" (SMOKE: tiny sizes)" if args.smoke else ""),
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "requests": len(requests),
        "clips": sum(len(r.clips) for r in requests),
        "audio_seconds": round(audio, 3),
        "max_new_tokens": args.max_new_tokens,
        "runs": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        model = build(Path(tmp), args.smoke, device)
        report["init_seconds"] = round(time.perf_counter() - started, 1)
        report["parameters"] = sum(p.numel() for p in model.parameters())
        report["dtype"] = str(model.dtype)
        print(
            f"model ready in {report['init_seconds']} s: {report['parameters'] / 1e9:.2f} B parameters",
            flush=True,
        )
        # The backend's own loading is replaced by the in-memory model; everything else is the real path.
        with mock.patch("audioeval.models.hf.load_model", return_value=model):
            backend = create_model(
                "hf", {"pretrained": tmp, "dtype": "float32" if args.smoke else "bfloat16"}, 1, 0
            )
        ordered = sorted(requests, key=lambda r: -r.audio_seconds)
        for size in sizes:
            backend.batch_size = size
            backend.generate(ordered[:size])  # warm-up
            if device == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            started = time.perf_counter()
            for i in range(0, len(ordered), size):
                backend.generate(ordered[i : i + size])
            if device == "cuda":
                torch.cuda.synchronize()
            wall = time.perf_counter() - started
            run = {
                "wall_seconds": round(wall, 3),
                "samples_per_second": round(len(requests) / wall, 3),
                "real_time_factor": round(wall / audio, 5),
                "generated_tokens_per_second": round(len(requests) * args.max_new_tokens / wall, 1),
            }
            if device == "cuda":
                run["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
            report["runs"][str(size)] = run
            print(f"batch {size:>3}: {json.dumps(run)}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
