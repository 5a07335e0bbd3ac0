"""No backend can read a query's answer. The harness keeps each episode (with the query's label, metadata and
the facts generators attach) for scoring; a backend gets the prompt, the generation settings, the label space
and `Request.shown`, the typed view of what the prompt shows. Proved twice on requests the harness builds from
episodes whose query label is poisoned: what reaches a backend through the server holds the poison nowhere,
and every offline backend answers exactly as it does on the clean episodes."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from audioeval.config.registry import TaskRegistry
from audioeval.models.base import Model, StreamingModel
from audioeval.models.registry import create_model, model_names
from audioeval.run.cache import ResponseCache
from audioeval.run.prepared import preflight, prepare_tasks
from audioeval.run.serving import Server
from audioeval.types import Request, Response

POISON = "POISONED-QUERY-LABEL"
TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy"
TASKS = ["toy_tones", "audioicl_audio_count", "audioicl_audio_remap", "audioicl_morse_letter"]
# backends that need weights, an endpoint or an engine; what they receive is what the spies below receive
NOT_OFFLINE = {"hf", "vllm", "openai", "hf-chat", "cascade", "realtime"}
OFFLINE_ARGS = {"tts": {"text_model": "demo-majority"}}  # backends that need arguments to run offline


def _poisoned(episode: dict[str, Any]) -> dict[str, Any]:
    """The episode with its query's answer replaced, on the query and on any query clip that carries it."""
    query = dict(episode["query"])
    answer = query.get("label")
    query["clips"] = [
        {**c, "label": POISON} if c.get("label") not in (None, "") and c.get("label") == answer else c
        for c in query.get("clips") or []
    ]
    query["label"] = POISON
    return {**episode, "query": query}


@pytest.fixture(scope="module")
def tasks() -> list[Any]:
    registry = TaskRegistry.discover([TOY])
    return prepare_tasks(registry, TASKS, num_fewshot=[0, 2], task_args={}, limit="2", seed=0, gen_kwargs={})


@pytest.fixture(scope="module")
def request_pairs(tasks) -> list[tuple[Request, Request]]:
    """(clean, poisoned) requests as the harness builds them, for k = 0 and 2 on two episodes of each task."""
    pairs = []
    for task in tasks:
        for index in range(2):
            episode = task.episode(index)
            clean = [r for r, _ in task.requests_for(episode)]
            poisoned = [r for r, _ in task.requests_for(_poisoned(episode))]
            assert all(
                POISON in repr(r.info["episode"]["query"]) for r in poisoned
            )  # the harness still has it
            pairs.extend(zip(clean, poisoned, strict=True))
    return pairs


def _holds_poison(obj: Any, seen: set[int] | None = None) -> bool:
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, np.ndarray | int | float | bool | type(None)):
        return False
    seen.add(id(obj))
    if isinstance(obj, str):
        return POISON in obj
    if isinstance(obj, dict):
        return any(_holds_poison(k, seen) or _holds_poison(v, seen) for k, v in obj.items())
    if isinstance(obj, list | tuple | set):
        return any(_holds_poison(v, seen) for v in obj)
    if dataclasses.is_dataclass(obj):
        return any(_holds_poison(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    return POISON in repr(obj)


def _accepts(model: Model, task: str, requests: list[Request]) -> bool:
    supported = model.supported_tasks()
    if supported is not None and task not in supported:
        return False
    try:
        for request in requests:
            model.check_request(request, task)
    except Exception:
        return False
    return True


class _Spy:
    """Records what it is handed; answers "x"."""

    name = "spy"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.received: list[Request] = []

    @property
    def identity(self) -> dict[str, Any]:
        return {"model": self.name}


class BatchSpy(_Spy, Model):
    def generate(self, requests: list[Request]) -> list[Response]:
        self.received.extend(requests)
        return [Response(text="x") for _ in requests]


class StreamSpy(_Spy, StreamingModel):
    async def generate_one(self, request: Request) -> Response:
        self.received.append(request)
        return Response(text="x")


def _serve(model: Model, requests: list[Request], tmp_path: Path, name: str) -> list[Response]:
    async def run() -> list[Response]:
        server = Server(model, ResponseCache(tmp_path / f"{name}.sqlite"), kind="generate")
        try:
            return list(await asyncio.gather(*server.submit(requests)))
        finally:
            await server.close()

    return asyncio.run(run())


@pytest.mark.parametrize("spy_class", [BatchSpy, StreamSpy])
def test_what_reaches_a_backend_holds_no_query_label(request_pairs, tmp_path, spy_class):
    poisoned = [p for _, p in request_pairs]
    spy = spy_class(batch_size=4, seed=0)
    _serve(spy, poisoned, tmp_path, spy_class.__name__)
    assert len(spy.received) == len(poisoned)
    for got in spy.received:
        assert got.info == {} and got.shown is not None
        assert not _holds_poison(got), f"{got.rid}: the query label reached the backend"
    # the prompt itself never shows the query's answer: poisoning it changes no message
    for clean, bad in request_pairs:
        assert clean.content_key({}) == bad.content_key({})


def test_the_spies_would_see_a_label_left_in_the_view(request_pairs):
    """The check above can fail: a view that kept the query's answer is caught."""
    _, bad = request_pairs[0]
    leaky = dataclasses.replace(bad.shown, query=dataclasses.replace(bad.shown.query, label=POISON))
    assert _holds_poison(dataclasses.replace(bad.for_backend(), shown=leaky))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(model_names()) - NOT_OFFLINE))
def test_every_offline_backend_answers_the_same_without_the_query_label(tasks, request_pairs, tmp_path, name):
    model = create_model(name, dict(OFFLINE_ARGS.get(name, {})), batch_size=4, seed=0)
    usable = [
        t for t in tasks if _accepts(model, t.name, [c for c, _ in request_pairs if c.rid.task == t.name])
    ]
    assert usable, f"{name}: none of {TASKS} to compare on"
    model.prepare(usable)
    names = {t.name for t in usable}
    pairs = [(c, p) for c, p in request_pairs if c.rid.task in names]
    clean = _serve(model, [c for c, _ in pairs], tmp_path, f"{name}-clean")
    poisoned = _serve(model, [p for _, p in pairs], tmp_path, f"{name}-poisoned")
    assert [r.text for r in clean] == [r.text for r in poisoned]
    assert all(r.ok for r in clean)


def test_the_preflight_check_of_a_backend_sees_what_the_backend_sees(tasks):
    checked: list[Request] = []

    class CheckingSpy(BatchSpy):
        @classmethod
        def check_request(cls, request: Request, source: str) -> None:
            checked.append(request)

    preflight(tasks, CheckingSpy)
    assert checked and all(r.info == {} and r.shown is not None for r in checked)
