"""What one run is asked to do: the command line's settings, as `audioeval --tasks ...` parses them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audioeval.results.stats import DEFAULT_RESAMPLES

if TYPE_CHECKING:
    from audioeval.models.base import Model


@dataclass
class RunConfig:
    tasks: str
    model: str = (
        "chance"  # the backend's name (a model given as an object: its name, for folders and records)
    )
    model_instance: Model | None = None  # a model given as an object (`evaluate(model=obj)`), used as it is
    model_args: dict[str, Any] = field(default_factory=dict)
    num_fewshot: list[int] | None = None
    task_args: dict[str, Any] = field(default_factory=dict)
    limit: str | None = None
    batch_size: int = 1
    seed: int = 0
    output_path: str | None = None
    log_samples: bool = False
    include_path: list[str] = field(default_factory=list)
    gen_kwargs: dict[str, Any] = field(default_factory=dict)
    cache_dir: str | None = None
    no_cache: bool = False
    bootstrap_resamples: int = DEFAULT_RESAMPLES
    judge: list[str] = field(default_factory=list)
    judge_args: list[dict[str, Any]] = field(default_factory=list)
    show_progress: bool = True
    augment: list[str] = field(default_factory=list)  # --augment NAME[=LEVEL,...] (audioeval.augment)
    augment_target: str | None = None  # --augment_target (the query when not given)
    asr: str | None = None  # --asr: the ASR of spoken answers (default: pocketsphinx when the model speaks)
    asr_args: dict[str, Any] = field(default_factory=dict)
    spoken_text: str = "asr"  # --spoken_text: the text of a spoken answer that is scored (asr | transcript)
    # serve the reference models the tasks name beside the model (off: a probe run that needs only the names of
    # the numbers a run reports, as `audioeval build` makes for eval.yaml)
    reference_models: bool = True
    # said (as warnings) once every argument and task is checked, e.g. that no --model was given
    notices: list[str] = field(default_factory=list)


def default_cache_dir() -> Path:
    return Path(os.environ.get("AUDIOEVAL_CACHE", Path.home() / ".cache" / "audioeval"))


def episode_store_path(cfg: RunConfig) -> Path:
    """The episode store's file, beside the response cache."""
    return cache_folder(cfg)[0] / "episodes.sqlite"


def cache_folder(cfg: RunConfig) -> tuple[Path, str]:
    """The response cache's folder (the episode store sits beside it) and what chose it, for messages:
    --cache_dir, $AUDIOEVAL_CACHE or the default."""
    if cfg.cache_dir:
        return Path(cfg.cache_dir).expanduser(), "--cache_dir"
    if os.environ.get("AUDIOEVAL_CACHE"):
        return default_cache_dir(), "$AUDIOEVAL_CACHE"
    return default_cache_dir(), "the default cache folder (set --cache_dir or $AUDIOEVAL_CACHE to move it)"
