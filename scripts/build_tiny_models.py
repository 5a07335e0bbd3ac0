"""Build tiny random-weight checkpoints of real audio-LM architectures (no download).

    python scripts/build_tiny_models.py OUT_DIR [--families qwen2_audio,qwen2_5_omni,audio_flamingo3] [--seed 0]

Each family goes to OUT_DIR/<family>/ and loads with `--model hf --model_args pretrained=OUT_DIR/<family>`.
See audioeval/testing/tiny.py and docs/models.md.
"""

from __future__ import annotations

import argparse
import sys

from audioeval.errors import AudioEvalError
from audioeval.testing.tiny import TINY_BUILDERS, build_tiny_models


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out_dir", help="folder to create the checkpoints in (one subfolder per family)")
    parser.add_argument("--families", default=",".join(TINY_BUILDERS), help="comma list; default: all")
    parser.add_argument("--seed", type=int, default=0, help="seed for the random weights")
    args = parser.parse_args(argv)
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    try:
        built = build_tiny_models(args.out_dir, families, seed=args.seed)
    except AudioEvalError as err:
        print(f"build_tiny_models: error: {err}", file=sys.stderr)
        return 2
    for family, path in built.items():
        print(f"{family}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
