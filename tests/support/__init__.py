"""Helpers of the test suite, the bench scripts and scripts/ that a user of the package does not need: tiny
random-weight checkpoints of real architectures, the headless browser of the viewer tests, a real vLLM server
from `.venv-vllm`. They run from a source checkout (its root on sys.path)."""
