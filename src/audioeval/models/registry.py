"""Model backends by name: the core's own, those a benchmark wing brings, and those of `--include_path` folders.

A backend is named by a `Backend` entry: where its class lives (`module:Class`, or `./file.py:Class` relative
to the file that declares it), one line saying what it is, and the pip extra that provides its dependencies.
Entries are plain strings, so listing them (`--model list`) or checking a name imports no backend; a
backend's module is imported only when it is used, so a missing optional dependency (transformers, openai,
vllm) only matters to the backend that needs it.

- the core's backends are listed in `CORE_BACKENDS` below;
- a wing declares its own in `audioeval/benchmarks/<wing>/backends.py` as `BACKENDS = {name: Backend(...)}`
  (a benchmark's own baselines), found by walking the wings;
- a folder given with `--include_path` declares them the same way in any `backends.py` inside it (the toy
  benchmark under tests/fixtures/toy brings its `toy-oracle`).

`--model module:Class` and `--model ./file.py:Class` name a backend class directly, without an entry.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audioeval.errors import AudioEvalError, ModelError, unknown_name_message
from audioeval.hooks import import_file, wing_modules

if TYPE_CHECKING:
    from audioeval.models.base import Model


@dataclass(frozen=True)
class Backend:
    target: str  # "package.module:Class" or "./file.py:Class"
    summary: str  # one line for `--model list`
    extra: str | None = None  # `pip install 'audioeval[<extra>]'` provides its dependencies
    base_dir: Path | None = None  # where a "./file.py" target is read from (set when a folder declares it)


CORE_BACKENDS: dict[str, Backend] = {
    "chance": Backend(
        "audioeval.models.baselines.chance:ChanceModel",
        "a uniform draw from the task's label space, seeded per request (offline)",
    ),
    "demo-majority": Backend(
        "audioeval.models.baselines.demo_majority:DemoMajorityModel",
        "the most frequent label among the episode's demonstrations (offline)",
    ),
    "knn-icl": Backend(
        "audioeval.models.baselines.knn_icl:KnnIclModel",
        "nearest neighbour / ridge regression over the demonstrations' clip embeddings (offline)",
    ),
    "hf": Backend(
        "audioeval.models.hf.model:HFModel",
        "a Hugging Face audio-chat checkpoint through its processor and chat template",
        "hf",
    ),
    "vllm": Backend(
        "audioeval.models.vllm_backend:VLLMModel",
        "offline vLLM (LLM.generate) with the audio as multi_modal_data",
        "vllm",
    ),
    "openai": Backend(
        "audioeval.models.openai_chat:OpenAIChatModel",
        "any OpenAI-compatible Chat Completions endpoint (OpenAI, vllm serve, Gemini's compatible endpoint)",
        "api",
    ),
    "realtime": Backend(
        "audioeval.models.realtime:RealtimeModel",
        "a Realtime API model over WebSockets (gpt-realtime), answering in speech or text",
        "api",
    ),
    "cascade": Backend(
        "audioeval.models.cascade:CascadeModel",
        "ASR then a text LLM (asr=pocketsphinx, llm=openai or hf-chat)",
    ),
    "pocketsphinx": Backend(
        "audioeval.models.pocketsphinx_asr:PocketSphinxModel",
        "offline en-us speech recognition (the pocketsphinx wheel's model)",
    ),
    "tts": Backend(
        "audioeval.models.speech.tts:TtsModel", "a text model's answer spoken by eSpeak NG (offline)"
    ),
    "hf-chat": Backend(
        "audioeval.models.text_chat:HFChatModel",
        "a text-only Hugging Face causal LM (the text side of a cascade)",
        "hf",
    ),
}


def _digest(path: Path) -> str:
    return hashlib.sha256(str(path).encode()).hexdigest()[:12]


_wings: dict[str, Backend] | None = None  # the wings' backends, read once
_folders: dict[Path, dict[str, Backend]] = {}  # --include_path folders, read once each
_active: list[Path] = []  # the folders of the run in progress


def _declared_in(module: Any, source: str, base_dir: Path | None) -> dict[str, Backend]:
    declared = getattr(module, "BACKENDS", None)
    if not isinstance(declared, dict) or not all(
        isinstance(k, str) and isinstance(v, Backend) for k, v in declared.items()
    ):
        raise ModelError(f"{source}: BACKENDS must be a dict of name -> audioeval.models.registry.Backend.")
    if base_dir is None:
        return dict(declared)
    return {name: Backend(b.target, b.summary, b.extra, base_dir) for name, b in declared.items()}


def _merge(into: dict[str, Backend], more: dict[str, Backend], source: str) -> None:
    for name, backend in more.items():
        if name in into and into[name] != backend:
            raise ModelError(f"{source}: backend {name!r} is already registered ({into[name].target}).")
        into[name] = backend


def _wing_backends() -> dict[str, Backend]:
    global _wings
    if _wings is None:
        found: dict[str, Backend] = {}
        for module_name in wing_modules("backends"):
            _merge(found, _declared_in(importlib.import_module(module_name), module_name, None), module_name)
        _wings = found
    return _wings


def use_backend_folders(folders: Iterable[str | Path]) -> None:
    """The backends of these folders (the run's --include_path) are known from now on, those of the folders of
    an earlier run no longer; each folder's `backends.py` files are read once."""
    _active.clear()
    for folder in folders:
        root = Path(folder).resolve()
        if not root.is_dir():
            continue
        _active.append(root)
        if root in _folders:
            continue
        declared: dict[str, Backend] = {}
        for path in sorted(root.rglob("backends.py")):
            try:
                module = import_file(path, f"audioeval_backends.{_digest(path)}")
            except Exception as err:
                raise ModelError(f"{path}: fails to import ({type(err).__name__}: {err}).") from err
            _merge(declared, _declared_in(module, str(path), path.parent), str(path))
        _folders[root] = declared


def backends() -> dict[str, Backend]:
    """Every named backend: the core's, the wings', those of the run's --include_path folders."""
    every = dict(CORE_BACKENDS)
    _merge(every, _wing_backends(), "audioeval.benchmarks")
    for root in _active:
        _merge(every, _folders[root], str(root))
    return every


def model_names() -> list[str]:
    return sorted(backends())


def listing() -> str:
    """`--model list`: one line per backend."""
    every = backends()
    width = max(len(name) for name in every)
    lines = []
    for name in sorted(every):
        backend = every[name]
        extra = f"  [pip install 'audioeval[{backend.extra}]']" if backend.extra else ""
        lines.append(f"{name:<{width}}  {backend.summary}{extra}")
    return "\n".join(lines)


def arguments_listing(name: str) -> str:
    """`--model NAME --model_args list`: the arguments the backend declares, as its declarations word them."""
    from audioeval.config.fields import argument_rows, text_table
    from audioeval.models.base import declared_args

    backend = backends().get(name)
    rows = argument_rows(declared_args(get_model_class(name)))
    head = f"--model {name}" + (f": {backend.summary}" if backend else "")
    if not rows:
        return f"{head}\n  (no --model_args)"
    return f"{head}\n" + text_table([("argument", "type", "default", "meaning"), *rows])


def _import_target(target: str, base_dir: Path | None, what: str) -> Any:
    where, _, attr = target.rpartition(":")
    if where.endswith(".py"):
        path = Path(where)
        path = (path if path.is_absolute() else (base_dir or Path.cwd()) / path).resolve()
        if not path.is_file():
            raise ModelError(f"{what}: file {path} does not exist.")
        module = import_file(path, f"audioeval_backends.{path.stem}_{_digest(path)}")
    else:
        module = importlib.import_module(where)
    cls = getattr(module, attr, None)
    if cls is None:
        raise ModelError(f"{what}: {where} has no class {attr!r}.")
    return cls


def get_model_class(name: str) -> type[Model]:
    every = backends()
    if name in every:
        backend = every[name]
        target, base_dir, extra = backend.target, backend.base_dir, backend.extra
    elif ":" in name:
        target, base_dir, extra = name, None, None
    else:
        raise ModelError(
            "--model: " + unknown_name_message("model", name, every, "`--model list` shows them all.")
        )
    try:
        cls = _import_target(target, base_dir, f"--model {name}")
    except ModuleNotFoundError as err:
        if extra is None and err.name and target.split(":")[0].startswith(err.name):
            raise ModelError(
                f"--model {name}: no module {err.name!r} (is its folder on PYTHONPATH? `./file.py:Class` names a "
                "file instead)."
            ) from err
        hint = f" Install it with: pip install 'audioeval[{extra}]'." if extra else ""
        raise ModelError(f"--model {name}: a dependency is missing ({err.name or err}).{hint}") from err
    except ImportError as err:
        hint = f" Install it with: pip install 'audioeval[{extra}]'." if extra else ""
        raise ModelError(f"--model {name}: a dependency is missing ({err.name or err}).{hint}") from err
    return _honours_the_contract(cls, name)


def _honours_the_contract(cls: Any, name: str) -> type[Model]:
    from audioeval.models.base import CONTRACT, Model

    if not (isinstance(cls, type) and issubclass(cls, Model)):
        raise ModelError(
            f"--model {name}: {getattr(cls, '__name__', cls)!r} is not a subclass of audioeval.Model; a backend "
            f"derives from it and implements the model contract: {CONTRACT}."
        )
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise ModelError(f"--model {name}: {cls.__name__} does not implement {missing} ({CONTRACT}).")
    return cls


def create_model(name: str, model_args: dict[str, Any], batch_size: int, seed: int) -> Model:
    """The backend, made with its --model_args, and the run's batch size and seed where its __init__ takes
    them (a backend of your own may take neither)."""
    from audioeval.models.base import check_model_args

    cls = get_model_class(name)
    check_model_args(cls, model_args)
    parameters = inspect.signature(cls.__init__).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    run = {k: v for k, v in (("batch_size", batch_size), ("seed", seed)) if takes_any or k in parameters}
    try:
        model = cls(**run, **model_args)
    except AudioEvalError:
        raise
    except Exception as err:
        raise ModelError(
            f"--model {name}: {cls.__name__}(...) failed ({type(err).__name__}: {err})."
        ) from err
    model.batch_size, model.seed = max(1, int(batch_size)), int(seed)
    model.model_args = dict(model_args)
    return model
