"""The model interface, registered by name. A backend says how it takes work:

- in batches (`Model`): `generate(requests) -> responses`; the serving path hands it length-sorted lists of
  `request_chunk_size` requests, one call at a time, from a worker thread;
- as a stream (`StreamingModel`, API endpoints): `await generate_one(request)`; the serving path sends each
  request the moment it is rendered and the backend keeps its own bounded number in flight.

Either way `stats` holds what the backend was asked and how it answered (results.json, per endpoint).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from audioeval.config.fields import (
    Argument,
    FieldProblem,
    arguments_of,
    check_values,
)
from audioeval.errors import ModelError, UsageError
from audioeval.models.endpoint_stats import EndpointStats
from audioeval.models.generation import LOCAL_GEN_KWARGS
from audioeval.redact import env_name_problem, env_name_refusal, is_secret_name
from audioeval.types import Request, Response

if TYPE_CHECKING:  # the backend contract stays light to import (`--model list`, `--help`)
    from audioeval.config.task import TaskConfig
    from audioeval.config.templates import PromptRenderer


class ModelTask(Protocol):
    """What `Model.prepare` sees of a task about to run (a prepared task of the run satisfies it)."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> TaskConfig: ...

    @property
    def shots(self) -> list[int]: ...

    @property
    def indices(self) -> list[int]: ...

    @property
    def renderer(self) -> PromptRenderer: ...

    def episode(self, index: int) -> dict[str, Any]: ...

    def requests_for(self, episode: dict[str, Any]) -> list[tuple[Request, str]]: ...

    def episodes_of_seed(
        self, seed: int, indices: Sequence[int], audio: bool = True
    ) -> Iterator[dict[str, Any]]:
        """Episodes of the task's configuration under another seed (the run keeps them once made); with
        `audio=False`, outlines where the builder makes them (labels and clip identities, no synthesis)."""
        ...


class Model(ABC):
    """A backend. Subclasses take their --model_args as keyword arguments of __init__, each declared once there:
    its type and default, and where it helps its description and bounds,
    `num_concurrent: Annotated[int, Arg("requests in flight", ge=1)] = 8` (config/fields.py). The registry
    checks --model_args against them before anything loads; `--model NAME --model_args list` and the docs
    tables show them."""

    name: ClassVar[str] = ""
    #: False when the model's study of probe episodes (`probe_episodes`) reads their labels and clip
    #: identities only, never samples: the run then gives it episode outlines where the builder makes them
    #: (`EpisodeBuilder.episode_outline`), and synthesizes nothing for the study.
    studies_audio: ClassVar[bool] = True
    #: True when the backend needs the task's label space (e.g. `chance`).
    needs_choices: ClassVar[bool] = False
    #: modules the backend imports when it is made that take long to import (the openai SDK: half a second): a
    #: run that waits for its first episodes imports them meanwhile, on a thread of its own
    imports_ahead: ClassVar[tuple[str, ...]] = ()
    #: True for backends that take requests one at a time, concurrently (StreamingModel); a wrapper may set it
    #: per instance to follow the backend it wraps (`tts` takes work the way its text model does).
    streams: bool = False
    #: True for backends that answer in speech (`Response.spoken`); an instance may set it from its arguments
    #: (`openai` with audio_output=true). The run then transcribes the audio (--asr) before scoring.
    speaks: bool = False
    #: generation settings (a task's generation_kwargs merged with --gen_kwargs) this backend understands: name ->
    #: its declaration (`Annotated[int, Arg(..., ge=1)]`); by default what every local backend reads
    gen_kwargs_spec: ClassVar[dict[str, Any]] = LOCAL_GEN_KWARGS

    #: False: this backend's answers are never read from or written to the response cache (weights that may
    #: change between runs: a model loaded in memory); a model given to `evaluate` as an object is never cached
    cacheable: bool = True
    #: the --model_args the registry made this backend with (the default identity includes them)
    model_args: dict[str, Any] = {}

    def __init__(self, *, batch_size: int = 1, seed: int = 0, **_: Any) -> None:
        self.batch_size = max(1, int(batch_size))
        self.seed = int(seed)

    @property
    def identity(self) -> dict[str, Any]:
        """What makes this backend's outputs what they are; part of every cache key. The default names the
        backend, its class and the --model_args it was made with; a backend whose answers depend on more
        (weights, files, a seed) overrides it to say so."""
        cls = type(self)
        identity: dict[str, Any] = {
            "model": self.name or cls.__qualname__,
            "class": f"{cls.__module__}.{cls.__qualname__}",
        }
        if self.model_args:
            identity["args"] = self.model_args
        return identity

    @property
    def display_name(self) -> str:
        """Folder name under --output_path."""
        return self.name

    @classmethod
    def supported_tasks(cls) -> list[str] | None:
        """Builder configs or task names this backend can run; None means any task."""
        return None

    @classmethod
    def check_task(cls, task_name: str, builder_config: str | None) -> None:
        """Raise ModelError when this backend has no method for a task (checked before any model loads)."""
        supported = cls.supported_tasks()
        if supported is None:
            return
        if task_name not in supported and (builder_config or "") not in supported:
            raise ModelError(
                f"model {cls.name!r} has no method for task {task_name!r}. It supports: {', '.join(sorted(supported))}."
            )

    @classmethod
    def check_request(cls, request: Request, source: str) -> None:
        """Raise when this backend cannot answer a task's requests (run in preflight, before loading)."""
        if cls.needs_choices and not request.choices:
            raise ModelError(
                f"{source}: model {cls.name!r} draws its answers from a task's label space, and task "
                f"{request.rid.task!r} declares none (it is open-ended). Evaluate it with a generative model "
                "(hf, openai, vllm, cascade), or give the task a `label_space:` if its answers form a closed set."
            )

    @property
    def request_chunk_size(self) -> int:
        """How many requests the serving path hands to one generate() call."""
        return self.batch_size

    @property
    def batch_window(self) -> int:
        """A batch backend's requests are cut into windows of this many, each sorted longest first and handed
        over in chunks of request_chunk_size; what is batched with what depends only on the request order."""
        return 4 * self.request_chunk_size

    @property
    def max_in_flight(self) -> int:
        """The most requests this backend works on at once (a streaming backend's concurrency ceiling)."""
        return self.request_chunk_size

    @property
    def stats(self) -> EndpointStats:
        """Requests, retries, latencies, ... of this backend over the run (created on first use)."""
        stats = self.__dict__.get("_stats")
        if stats is None:
            stats = self.__dict__["_stats"] = EndpointStats()
        return stats

    def probe_episodes(self, task: ModelTask) -> tuple[int, int] | None:
        """(seed, count) of the episodes of `task`'s configuration under another seed that this model studies
        before answering it (a baseline's label statistics, say); the run synthesizes them ahead, once per
        configuration, with their own progress line, and hands them over through `task.episodes_of_seed`.
        None: it studies nothing."""
        return None

    def prepare(self, tasks: Sequence[ModelTask]) -> None:  # noqa: B027 - optional hook
        """Called once with the prepared tasks after the model is created and before evaluation starts (e.g. to
        size an engine for the largest number of clips per prompt the tasks will send)."""

    @abstractmethod
    def generate(self, requests: list[Request]) -> list[Response]:
        """One response per request, in order. A request the backend gave up on gets Response(error=...)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (servers, GPU memory)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release what belongs to the running event loop (connection pools, sessions); called once, when the
        run's event loop ends."""

    @classmethod
    def check_args(cls, model_args: dict[str, Any]) -> None:
        """Raise ModelError for --model_args this backend does not take, lacks, or gets with a value its
        declaration refuses. The default checks the keyword arguments of __init__ (their names, defaults and
        declarations); composite backends (e.g. `cascade`) override it to check each stage's. Runs before any
        task is prepared."""
        check_init_args(cls, model_args)

    @classmethod
    def code_modules(cls, model_args: dict[str, Any]) -> list[str]:
        """The modules this backend runs, whose imports preflight checks are installed (requirements.py)."""
        return [cls.__module__]

    @classmethod
    def check_gen_kwargs(cls, gen_kwargs: dict[str, Any], source: str, model_args: dict[str, Any]) -> None:
        """Raise UsageError for generation settings this backend does not declare (close matches listed) or whose
        value its declaration refuses; `source` names where they come from (--gen_kwargs, a task file)."""
        try:
            check_values(gen_kwargs, cls.gen_kwargs_spec)
        except FieldProblem as problem:
            what = f"{source}: model {cls.name!r}: "
            if problem.kind == "unknown":
                raise UsageError(what + problem.unknown("key")) from None
            raise UsageError(f"{what}{problem.key} {problem.words}.") from None


CONTRACT = (
    "Model.generate(requests) returns a list with one audioeval.Response per request, in order "
    "(StreamingModel.generate_one(request) returns one audioeval.Response)"
)


def check_generated(model: Model, produced: Any, n: int) -> list[Response]:
    """What a backend's generate() returned, checked against the model contract: a list of n Responses."""
    name = model.name or type(model).__name__
    if not isinstance(produced, list | tuple):
        raise ModelError(
            f"model {name!r} broke the model contract: {CONTRACT}; it returned {_what(produced)}."
        )
    if len(produced) != n:
        raise ModelError(
            f"model {name!r} broke the model contract: {CONTRACT}; it returned {len(produced)} responses for "
            f"{n} requests."
        )
    wrong = next((r for r in produced if not isinstance(r, Response)), None)
    if wrong is not None:
        raise ModelError(
            f"model {name!r} broke the model contract: {CONTRACT}; it returned {_what(wrong)} among the responses."
        )
    return list(produced)


def _what(value: Any) -> str:
    text = repr(value)
    return f"a {type(value).__name__} ({text[:60] + '...' if len(text) > 60 else text})"


def secret_arg_message(model: str, key: str, accepted: dict[str, Any]) -> str:
    """A key or token given as a --model_args value: refused, without repeating it. On the command line it
    would stay in the shell's history and the process list; keys are read from the environment only."""
    where = (
        "put it in an environment variable and name that with api_key_env=VAR (default OPENAI_API_KEY)"
        if "api_key_env" in accepted
        else "this backend reads its credentials from the environment (e.g. HF_TOKEN): set it there"
    )
    return (
        f"--model_args {key}: model {model!r} takes no keys on the command line (they would stay in the "
        f"shell history and the process list); {where}."
    )


def check_model_args(cls: type[Model], model_args: dict[str, Any]) -> None:
    """Unknown, missing or ill-typed --model_args are an error listing the close matches."""
    cls.check_args(model_args)


_NOT_ARGS = ("self", "batch_size", "seed")  # the run's own flags (--batch_size, --seed), not --model_args


def declared_args(cls: type[Model]) -> dict[str, Argument]:
    """The --model_args a backend's __init__ declares."""
    return arguments_of(cls.__init__, skip=_NOT_ARGS)


def check_init_args(cls: type[Model], model_args: dict[str, Any]) -> None:
    accepted = declared_args(cls)
    for key, value in model_args.items():
        if key not in accepted and is_secret_name(key):
            raise ModelError(secret_arg_message(cls.name, key, accepted))
        problem = env_name_problem(value) if key.endswith("_env") and value is not None else None
        if key in accepted and problem:
            raise ModelError(env_name_refusal("--model_args ", key, problem))
    try:
        check_values(model_args, cls.__init__, skip=_NOT_ARGS)
    except FieldProblem as problem:
        if problem.kind == "unknown":
            raise ModelError("--model_args: " + problem.unknown(f"argument for model {cls.name!r}")) from None
        if problem.kind == "missing":
            raise ModelError(
                f"--model {cls.name} needs --model_args {problem.key}=...: it has no default."
            ) from None
        given = f"--model_args {problem.key}={model_args.get(problem.key)}"
        if problem.custom:  # the declaration's own check says it all
            raise ModelError(f"{given}: {problem.words}") from None
        raise ModelError(f"{given}: model {cls.name!r} {problem.words}.") from None


class StreamingModel(Model):
    """A backend that takes one request at a time and keeps several in flight (API endpoints)."""

    streams: bool = True
    batch_window = 1  # every request is handed over the moment it is rendered (an episode's together)

    @abstractmethod
    async def generate_one(self, request: Request) -> Response:
        """The response to one request (Response(error=...) when the backend gave up on it)."""

    def prepare_request(self, request: Request) -> None:
        """Work on a request's audio that can be done before `generate_one`, on a worker thread rather than the
        event loop (the serving path calls it for each request with audio): encoding its clips, say. The
        clips' samples are read by then. Nothing by default."""

    def generate(self, requests: list[Request]) -> list[Response]:
        """All at once, in order: for callers outside the evaluator (cascade stages, scripts)."""
        if not requests:
            return []

        async def run() -> list[Response]:
            try:
                return list(await asyncio.gather(*(self.generate_one(r) for r in requests)))
            finally:
                await self.aclose()

        return asyncio.run(run())
