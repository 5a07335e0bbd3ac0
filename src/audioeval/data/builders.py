"""Dataset builders: loading them by name and the episode contract the harness relies on.

A builder is a `datasets.GeneratorBasedBuilder` living in `datasets_builders/<name>/<name>.py`. Builders used
by the harness derive from `EpisodeBuilder` and implement two pure methods:

    num_episodes() -> int
    episode(index) -> dict     # a pure function of (builder config, seed, index)

An episode is a dict:

    {"id": str, "index": int,
     "context": [clip, ...],                      # reference clips shown before the demos (e.g. a bank of reference sounds)
     "demos": [{"clips": [clip, ...], "label": str, **fields}, ...],   # max_shots of them, nested across k
     "query": {"clips": [clip, ...], "label": str, **fields},
     "metadata": {...}}                           # JSON-ready facts that justify the label

    clip = {"role": str, "label": str | None, "audio": AudioClip}

`_generate_examples` (used by `datasets` and by `audioeval build`) serialises the same episodes, so what the
harness evaluates and what is pushed to the Hub are one thing.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import datasets
import numpy as np

from audioeval.audio.wav import PCM16_SCALE, decode_wav, encode_wav
from audioeval.data.about import BenchmarkAbout
from audioeval.errors import ConfigError, unknown_name_message
from audioeval.hooks import import_file
from audioeval.resources import builders_dir
from audioeval.types import AudioClip


@dataclass
class EpisodeBuilderConfig(datasets.BuilderConfig):
    """Common builder kwargs; benchmark configs add their own fields."""

    #: fields inherited from datasets.BuilderConfig (data_dir, data_files, ...) that the builder reads; the
    #: others are refused as builder kwargs, so a stray `data_dir` is an error instead of being ignored
    READS_BASE_FIELDS: ClassVar[tuple[str, ...]] = ()

    n_episodes: int = 300
    max_shots: int = 5
    seed: int = 0
    sampling_rate: int = 16000


def clip_features(sampling_rate: int) -> dict[str, Any]:
    return {
        "role": datasets.Value("string"),
        "label": datasets.Value("string"),
        "audio": datasets.Audio(sampling_rate=sampling_rate),
    }


def standard_features(sampling_rate: int) -> datasets.Features:
    clip = clip_features(sampling_rate)
    shot = {
        "clips": datasets.List(clip),
        "label": datasets.Value("string"),
        "fields": datasets.Value("string"),
    }
    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "index": datasets.Value("int32"),
            "context": datasets.List(clip),
            "demos": datasets.List(shot),
            "query": shot,
            "metadata": datasets.Value("string"),
        }
    )


def standard_feature_descriptions(metadata: str, fields: str) -> dict[str, str]:
    """Descriptions of every `standard_features` path, for dataset cards; `metadata` and `fields` say what the
    benchmark's JSON strings hold."""
    clip = {
        "role": "what the clip is in the episode (e.g. demo, query, letter)",
        "label": "the clip's own label when the prompt shows one (null otherwise)",
        "audio": "the clip, 16-bit PCM WAV",
    }
    out = {
        "id": "episode id (unique within the config)",
        "index": "episode index: the episode is a pure function of (config, seed, index)",
        "context": "reference clips shown before the demonstrations (empty for most tasks)",
        "demos": "the demonstrations, max_shots of them; a k-shot prompt uses the first k",
        "demos[]": "one demonstration",
        "demos[].clips": "the demonstration's clips, in prompt order",
        "demos[].label": "the demonstration's answer",
        "demos[].fields": fields,
        "query": "the question the model answers",
        "query.clips": "the query's clips, in prompt order",
        "query.label": "the reference answer",
        "query.fields": fields,
        "metadata": metadata,
    }
    for prefix in ("context[]", "demos[].clips[]", "query.clips[]"):
        out[prefix] = "one clip"
        out.update({f"{prefix}.{name}": text for name, text in clip.items()})
    return out


def _clip_to_row(clip: dict[str, Any]) -> dict[str, Any]:
    audio: AudioClip = clip["audio"]
    return {
        "role": clip.get("role"),
        "label": None if clip.get("label") is None else str(clip["label"]),
        "audio": {"bytes": encode_wav(audio.samples, audio.sampling_rate), "path": None},
    }


def _clip_from_row(row: dict[str, Any]) -> dict[str, Any]:
    audio = row["audio"]
    if isinstance(audio, dict) and audio.get("bytes") is not None:
        samples, rate = decode_wav(audio["bytes"])
        clip = AudioClip.from_array(samples, rate)
    elif isinstance(audio, dict) and "array" in audio:
        clip = AudioClip.from_array(audio["array"], audio["sampling_rate"])
    else:  # a datasets AudioDecoder
        decoded = audio.get_all_samples()
        # torchcodec scales PCM16 by 1/32768, the harness's grid is 1/32767 (audio/wav.py): rescale so the
        # clip lands back on exactly the samples that were written.
        samples = decoded.data.numpy().astype(np.float64).mean(axis=0) * (32768.0 / PCM16_SCALE)
        clip = AudioClip.from_array(samples, decoded.sample_rate)
    return {"role": row.get("role"), "label": row.get("label"), "audio": clip}


def _shot_to_row(shot: dict[str, Any]) -> dict[str, Any]:
    fields = {k: v for k, v in shot.items() if k not in ("clips", "label")}
    return {
        "clips": [_clip_to_row(c) for c in shot.get("clips") or []],
        "label": None if shot.get("label") is None else str(shot["label"]),
        "fields": json.dumps(fields, sort_keys=True, ensure_ascii=False),
    }


def episode_to_row(episode: dict[str, Any]) -> dict[str, Any]:
    """Serialise an episode into the `standard_features` row layout (audio as PCM16 WAV bytes)."""
    return {
        "id": episode["id"],
        "index": int(episode["index"]),
        "context": [_clip_to_row(c) for c in episode.get("context") or []],
        "demos": [_shot_to_row(d) for d in episode.get("demos") or []],
        "query": _shot_to_row(episode["query"]),
        "metadata": json.dumps(episode.get("metadata") or {}, sort_keys=True, ensure_ascii=False),
    }


def row_to_episode(row: dict[str, Any]) -> dict[str, Any]:
    """Inverse of `episode_to_row`, for rows read back with `datasets.load_dataset`."""

    def shot(s: dict[str, Any]) -> dict[str, Any]:
        return {
            **json.loads(s.get("fields") or "{}"),
            "clips": [_clip_from_row(c) for c in s["clips"]],
            "label": s["label"],
        }

    return {
        "id": row["id"],
        "index": row["index"],
        "context": [_clip_from_row(c) for c in row.get("context") or []],
        "demos": [shot(d) for d in row.get("demos") or []],
        "query": shot(row["query"]),
        "metadata": json.loads(row.get("metadata") or "{}"),
    }


class EpisodeBuilder(datasets.GeneratorBasedBuilder):
    """Base class for audioeval builders: episodes on demand, and the same episodes as a `test` split."""

    BUILDER_CONFIG_CLASS = EpisodeBuilderConfig
    ABOUT: BenchmarkAbout | None = None  # paper, licences, corpora, feature descriptions (dataset cards)

    # --- the contract -------------------------------------------------------------------------------------
    def num_episodes(self) -> int:
        return int(self.config.n_episodes)

    def episode(self, index: int) -> dict[str, Any]:
        raise NotImplementedError

    def episode_outline(self, index: int) -> dict[str, Any] | None:
        """Episode `index`'s structure and labels without synthesis, for a model that studies episodes without
        listening (a signal-blind baseline): the episode's shape, labels and label facts, with
        `types.UnrenderedClip`s whose identities are equal exactly where the episode's clips are
        byte-identical. None (the default): this builder makes none, and the episode itself is read."""
        return None

    def validate(self) -> None:
        """Check the config and any source folders before generation starts; raise ConfigError/DataError."""

    def max_supported_shots(self) -> int | None:
        """The largest k this config's episodes can carry (None: no limit beyond the episode itself)."""
        return None

    def augmentation_refusal(self, transform: str) -> str | None:
        """Why `--augment <transform>` must not touch this config's clips (the transform changes what the
        label measures, or the clips must stay bit-exact); None when it may."""
        return None

    # --- datasets plumbing ----------------------------------------------------------------------------------
    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(description=self.__doc__ or "", features=self.features_for_hub())

    def features_for_hub(self) -> datasets.Features:
        return standard_features(int(getattr(self.config, "sampling_rate", 16000)))

    def to_row(self, episode: dict[str, Any]) -> dict[str, Any]:
        return episode_to_row(episode)

    def episode_reader(self, open_config: Callable[[str], Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """How a stored row of this config (`to_row`'s layout) becomes the episode again, for runs on built or
        Hub data; `open_config(name)` gives another config's rows of the same dataset (e.g. a demo pool)."""
        return row_to_episode

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        # checked here, before `datasets` starts writing: a bad argument or source folder surfaces as our
        # message, not wrapped in a DatasetGenerationError
        self.validate()
        return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={})]

    def _generate_examples(self) -> Iterator[tuple[int, dict[str, Any]]]:
        self.validate()
        for index in range(self.num_episodes()):
            yield index, self.to_row(self.episode(index))


def builder_names() -> list[str]:
    """The shipped builders: the folders of datasets_builders/ holding `<name>/<name>.py`."""
    root = builders_dir()
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.py").is_file()) if root.is_dir() else []


def _module_path(name: str, base_dir: Path | None) -> Path:
    candidate = Path(name)
    if candidate.suffix == ".py":
        path = candidate if candidate.is_absolute() else (base_dir or Path.cwd()) / candidate
        if not path.is_file():
            raise ConfigError(f"builder file {path} does not exist.")
        return path.resolve()
    root = builders_dir()
    path = root / name / f"{name}.py"
    if not path.is_file():
        raise ConfigError(
            unknown_name_message(
                "builder", name, builder_names(), f"Builders live in {root}/<name>/<name>.py."
            )
        )
    return path


def load_builder_class(name: str, base_dir: Path | None = None) -> type[datasets.DatasetBuilder]:
    return _builder_class_at(_module_path(name, base_dir))


@cache
def _builder_class_at(path: Path) -> type[datasets.DatasetBuilder]:
    module_name = f"audioeval_builders.{path.parent.name}.{path.stem}"
    module = import_file(path, module_name)
    classes = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj) and issubclass(obj, datasets.DatasetBuilder) and obj.__module__ == module_name
    ]
    if len(classes) != 1:
        raise ConfigError(f"{path}: expected exactly one dataset builder class, found {len(classes)}.")
    return classes[0]


def builder_config_names(cls: type[datasets.DatasetBuilder]) -> list[str]:
    return [c.name for c in cls.BUILDER_CONFIGS]


def make_builder(
    name: str, config_name: str | None, kwargs: dict[str, Any], base_dir: Path | None = None, source: str = ""
) -> EpisodeBuilder:
    try:
        cls = load_builder_class(name, base_dir)
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}" if source else str(err)) from err
    names = builder_config_names(cls)
    if config_name is not None and names and config_name not in names:
        raise ConfigError(f"{source or name}: " + unknown_name_message("builder config", config_name, names))
    config_class = cls.BUILDER_CONFIG_CLASS
    unread_base = set(inspect.signature(datasets.BuilderConfig).parameters) - set(
        getattr(config_class, "READS_BASE_FIELDS", ())
    )
    allowed = sorted(set(inspect.signature(config_class).parameters) - unread_base)
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{source or name}: "
            + unknown_name_message(f"argument of builder {name!r}", unknown[0], allowed)
            + " (builder_kwargs, or a task parameter's builder_kwarg)"
        )
    # datasets writes lock files under the builder's cache folder even when nothing is prepared: keep them
    # beside audioeval's own cache rather than in the user's Hugging Face cache
    cache = Path(os.environ.get("AUDIOEVAL_CACHE", Path.home() / ".cache" / "audioeval")) / "datasets"
    builder = cls(config_name=config_name, cache_dir=str(cache), **kwargs)
    if not isinstance(builder, EpisodeBuilder):
        raise ConfigError(f"builder {name!r} does not derive from audioeval.data.builders.EpisodeBuilder.")
    builder.validate()
    return builder
