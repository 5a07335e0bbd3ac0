"""How well `--model realtime` keeps a Realtime endpoint busy, and what each response costs the client.

    PYTHONPATH=src python bench/bench_realtime.py [--responses 640] [--concurrency 32] [--clip_seconds 2] \
        [--out bench/results/realtime.json]

The fake Realtime server runs in its own process (`python -m audioeval.testing.fake_realtime --latency 0.2,1.0`):
each response takes a delay spread over 0.2-1.0 s by its request's hash, and streams 0.4-1.2 s of 24 kHz audio
with its transcript. Each request is a 16 kHz clip (resampled to 24 kHz by the backend) and a line of text.

- backend: `RealtimeModel.generate` with `num_concurrent` = C (building the events, resampling and encoding
  the clips, the session pool, reading the events, decoding the audio into a SpokenAnswer);
- aiohttp exchange: `RealtimeClient.respond` alone on ready-built events, C in flight;
- multiplexed: ready-built events (with `event_id`s, and their ids in `response.metadata`) several at once
  on each of N sessions (`--multiplex 1,4,8`), routed back to their response by response id: does answering
  C responses on fewer than C sessions help?
- SDK exchange: the same ready-built events through `openai.AsyncOpenAI().realtime.connect`, C sessions each
  answering one response at a time (`conn.send`, `conn.recv` until `response.done`, audio deltas decoded).

Ideal throughput = C / mean delay; achieved = responses / (last response.done - first response.create) at
the server. CPU per response = this process's CPU time (user + system; the server is another process) over
the run divided by the responses. Target (issue 21): >= 0.85 of ideal at 32 in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from audioeval.models.realtime import RealtimeModel, response_create_event, session_update  # noqa: E402
from audioeval.testing.fake_openai import throughput  # noqa: E402
from audioeval.types import AudioClip, AudioPart, Message, Request, RequestId, TextPart  # noqa: E402


class Server:
    """The fake Realtime server in its own process."""

    def __enter__(self) -> Server:
        cmd = [sys.executable, "-m", "audioeval.testing.fake_realtime", "--latency", "0.2,1.0", "--parallel"]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        self.base_url = json.loads(self.proc.stdout.readline())["base_url"]
        return self

    def stats(self) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def __exit__(self, *exc: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def requests(n: int, seconds: float, offset: int) -> list[Request]:
    rng = np.random.default_rng(offset)
    out = []
    for i in range(n):
        clip = AudioClip.from_array(0.2 * rng.standard_normal(int(16000 * seconds)), 16000)
        parts = (AudioPart(clip), TextPart(f"What do you hear? ({offset}-{i})"))
        out.append(Request((Message("user", parts),), {"max_new_tokens": 512}, RequestId("bench", 0, i)))
    return out


def measured(server: Server, concurrency: int, run: Any) -> dict[str, Any]:
    server.stats()  # forget earlier timings
    cpu, wall = time.process_time(), time.perf_counter()
    n = run()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    figures = throughput(server.stats()["timings"], concurrency)
    return {
        **figures,
        "responses": n,
        "wall_s": round(wall, 3),
        "cpu_ms_per_response": round(1000 * cpu / n, 3),
    }


def backend_run(base_url: str, batch: list[Request], concurrency: int) -> int:
    model = RealtimeModel(model="gpt-realtime", base_url=base_url, num_concurrent=concurrency)
    responses = model.generate(batch)
    assert all(r.ok and r.spoken is not None for r in responses), [r.error for r in responses if not r.ok][:3]
    return len(responses)


def aiohttp_run(base_url: str, events: list[str], concurrency: int) -> int:
    model = RealtimeModel(model="gpt-realtime", base_url=base_url, num_concurrent=concurrency)

    async def main() -> int:
        try:
            outcomes = await asyncio.gather(*(model.client.respond(e, True) for e in events))
        finally:
            await model.client.aclose()
        assert all(o.value is not None and o.value.audio for o in outcomes)
        return len(outcomes)

    return asyncio.run(main())


def tagged(events: list[str]) -> list[tuple[str, str]]:
    """(id, event): each `response.create` with an `event_id` (an `error` event names the client event it is
    about) and its id in `response.metadata` (echoed by `response.created`, which gives the response id that
    every later event of that response carries)."""
    out = []
    for i, event in enumerate(events):
        body = json.loads(event)
        body["event_id"] = f"evt_{i}"
        body["response"]["metadata"] = {"request": str(i)}
        out.append((str(i), json.dumps(body)))
    return out


def multiplexed_run(base_url: str, events: list[tuple[str, str]], concurrency: int, sessions: int) -> int:
    """Out-of-band responses multiplexed: `sessions` sockets, each with concurrency / sessions responses in
    flight at once, events routed to their response by response id (errors by the event id they name)."""
    import aiohttp

    from audioeval.models.api.realtime_client import realtime_url_and_headers

    url, headers = realtime_url_and_headers("local-no-key", base_url, "gpt-realtime")
    queue = list(events)
    done = 0

    async def one_session(http: Any, per_session: int) -> None:
        nonlocal done
        ws = await http.ws_connect(url, headers=headers, max_msg_size=64 * 2**20)
        while json.loads((await ws.receive()).data)["type"] != "session.created":
            pass
        await ws.send_str(json.dumps({"type": "session.update", "session": session_update("audio", "alloy")}))
        while json.loads((await ws.receive()).data)["type"] != "session.updated":
            pass
        audio: dict[str, list[bytes]] = {}  # request id -> its audio so far
        owner: dict[str, str] = {}  # response id -> request id
        in_flight = 0
        while queue or in_flight:
            while queue and in_flight < per_session:
                rid, event = queue.pop()
                audio[rid] = []
                in_flight += 1
                await ws.send_str(event)
            event = json.loads((await ws.receive()).data)
            kind = event["type"]
            if kind == "response.created":
                owner[event["response"]["id"]] = event["response"]["metadata"]["request"]
            elif kind == "response.output_audio.delta":
                audio[owner[event["response_id"]]].append(base64.b64decode(event["delta"]))
            elif kind == "response.done":
                rid = owner.pop(event["response"]["id"])
                assert audio.pop(rid)
                in_flight -= 1
                done += 1
            elif kind == "error":
                raise RuntimeError(f"response for {event['error'].get('event_id')}: {event['error']}")
        await ws.close()

    async def main() -> None:
        async with aiohttp.ClientSession() as http:
            await asyncio.gather(*(one_session(http, concurrency // sessions) for _ in range(sessions)))

    asyncio.run(main())
    return done


def sdk_run(base_url: str, events: list[str], concurrency: int) -> int:
    from openai import AsyncOpenAI

    queue = [json.loads(e) for e in events]
    done = 0

    async def session(client: Any) -> None:
        nonlocal done
        async with client.realtime.connect(model="gpt-realtime") as conn:
            await conn.send({"type": "session.update", "session": session_update("audio", "alloy")})
            while (await conn.recv()).type != "session.updated":
                pass
            while queue:
                await conn.send(queue.pop())
                audio = []
                while True:
                    event = await conn.recv()
                    if event.type == "response.output_audio.delta":
                        audio.append(base64.b64decode(event.delta))
                    elif event.type == "response.done":
                        break
                assert audio
                done += 1

    async def main() -> None:
        client = AsyncOpenAI(api_key="local-no-key", base_url=base_url)
        await asyncio.gather(*(session(client) for _ in range(concurrency)))

    asyncio.run(main())
    return done


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--responses", type=int, default=640)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--clip_seconds", type=float, default=2.0)
    parser.add_argument("--skip_sdk", action="store_true")
    parser.add_argument(
        "--multiplex",
        default="",
        help="also measure responses multiplexed on N sessions, e.g. 1,4,8 (comma-separated)",
    )
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    n, c = args.responses, args.concurrency
    import openai  # noqa: F401 - imported before any timing (the backend reads the SDK's endpoint settings once)

    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "load_1min": os.getloadavg()[0]}
    figures: dict[str, Any] = {"machine": machine}
    with Server() as server:
        batch = requests(n, args.clip_seconds, 1)
        figures["backend"] = measured(server, c, lambda: backend_run(server.base_url, batch, c))
        events = [response_create_event(r, "audio", "alloy", None) for r in requests(n, args.clip_seconds, 2)]
        figures["aiohttp_exchange"] = measured(server, c, lambda: aiohttp_run(server.base_url, events, c))
        for sessions in [int(x) for x in args.multiplex.split(",") if x]:
            batch = requests(n, args.clip_seconds, 4 + sessions)
            tagged_events = tagged([response_create_event(r, "audio", "alloy", None) for r in batch])
            figures[f"multiplexed_{sessions}_sessions"] = measured(
                server, c, lambda e=tagged_events, k=sessions: multiplexed_run(server.base_url, e, c, k)
            )
        if not args.skip_sdk:
            events = [
                response_create_event(r, "audio", "alloy", None) for r in requests(n, args.clip_seconds, 3)
            ]
            figures["sdk_exchange"] = measured(server, c, lambda: sdk_run(server.base_url, events, c))
    for name, f in figures.items():
        if name != "machine":
            print(
                f"{name:25s} {f['responses']} responses, {c} in flight: {f['ratio']:.3f} of ideal throughput "
                f"({f['achieved_per_s']:.1f}/s of {f['ideal_per_s']:.1f}/s), {f['cpu_ms_per_response']:.2f} ms CPU "
                "per response"
            )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
