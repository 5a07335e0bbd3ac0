"""Build tiny random-weight checkpoints of real audio-LM architectures (no download).

    python scripts/build_tiny_models.py OUT_DIR [--families qwen2_audio,qwen2_5_omni,audio_flamingo3] [--seed 0]

Each family goes to OUT_DIR/<family>/ and loads with `--model hf --model_args pretrained=OUT_DIR/<family>`.
qwen2_audio is built so that vLLM loads it too (`--model vllm`, and a vLLM OpenAI-compatible server): the
released weight names, head_dim 32 and the release's 30 s audio window. `--small_window` builds the variant
the unit tests use instead (4 s window, head_dim 16; vLLM refuses it). vLLM does not load the other families'
tiny checkpoints (see docs/models.md). See tests/support/tiny.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its tests/support/ builders

from audioeval.errors import AudioEvalError  # noqa: E402
from tests.support.tiny import SERVABLE_FAMILIES, TINY_BUILDERS, build_tiny_models  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out_dir", help="folder to create the checkpoints in (one subfolder per family)")
    parser.add_argument("--families", default=",".join(TINY_BUILDERS), help="comma list; default: all")
    parser.add_argument("--seed", type=int, default=0, help="seed for the random weights")
    parser.add_argument(
        "--small_window",
        action="store_true",
        help="build qwen2_audio as the unit tests do (4 s audio window, head_dim 16), which vLLM does not load",
    )
    args = parser.parse_args(argv)
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    try:
        built = build_tiny_models(args.out_dir, families, seed=args.seed, servable=not args.small_window)
    except AudioEvalError as err:
        print(f"build_tiny_models: error: {err}", file=sys.stderr)
        return 2
    for family, path in built.items():
        loads = "hf and vllm" if family in SERVABLE_FAMILIES and not args.small_window else "hf"
        print(f"{family}: {path} (loads in: {loads})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
