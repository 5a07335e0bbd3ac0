#!/usr/bin/env bash
# Set up .venv with audioeval and everything it needs, from scratch.
#   bash scripts/bootstrap.sh        # to run evaluations
#   bash scripts/bootstrap.sh dev    # also the test and lint tools
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
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torchcodec releases are built against one torch release each: keep the pair together.
.venv/bin/python -m pip install -q "torch==2.13.0" "torchcodec==0.13.0"
if [ "$EXTRA" = "dev" ]; then
  .venv/bin/python -m pip install -q ".[dev,api]"
else
  .venv/bin/python -m pip install -q ".[api]"
fi
echo "bootstrap: ready ($(.venv/bin/python -c 'import audioeval; print("audioeval", audioeval.__version__)'))"
