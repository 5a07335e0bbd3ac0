"""The dataset card (README.md) of a folder written by `audioeval build`, and reading one back.

The YAML header is what a Hub user and `datasets` read: pretty_name, licence(s), task categories, languages,
tags, `configs:` (which parquet files make which config and split), `dataset_info:` (features, sizes; written
by `datasets`' own serializer, as `push_to_hub` writes it) and `audioeval:` (the generation parameters: benchmark,
seed, n_episodes, max_shots, versions, which corpora were read). The body describes every feature, the
sources and their licences, the paper to cite and how to load the data. No local path ever enters a card:
arguments that name files are recorded as the corpus they point at, or as "a local file".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audioeval.data.about import BenchmarkAbout
from audioeval.errors import DataError

CARD_KEY = "audioeval"
GENERATION_FLAGS = ("seed", "n_episodes", "max_shots")


@dataclass
class ConfigStats:
    features: Any  # datasets.Features
    split: str
    num_examples: int
    num_bytes: int  # size of the rows in Arrow format
    download_size: int  # size of the parquet files


# ---- features ---------------------------------------------------------------------------------------------


def feature_paths(features: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Every column and nested field as (path, type): `query.clips[].audio`, `demos[].label`, ..."""
    import datasets

    out: list[tuple[str, str]] = []

    def walk(feature: Any, path: str) -> None:
        if isinstance(feature, dict):
            if path:
                out.append((path, "struct"))
            for name, sub in feature.items():
                walk(sub, f"{path}.{name}" if path else name)
        elif isinstance(feature, datasets.List | datasets.LargeList | datasets.Sequence | list):
            inner = feature[0] if isinstance(feature, list) else feature.feature
            out.append((path, "list"))
            walk(inner, f"{path}[]")
        elif isinstance(feature, datasets.Audio):
            out.append((path, f"audio ({feature.sampling_rate} Hz)" if feature.sampling_rate else "audio"))
        elif isinstance(feature, datasets.Value):
            out.append((path, feature.dtype))
        else:
            out.append((path, type(feature).__name__))

    walk(features, prefix)
    return out


def undescribed(features: Any, about: BenchmarkAbout) -> list[str]:
    return [path for path, _ in feature_paths(features) if path not in about.features]


# ---- generation parameters ------------------------------------------------------------------------------------


def public_parameters(config: Any, kwargs: dict[str, Any], about: BenchmarkAbout | None) -> dict[str, Any]:
    """The builder arguments as a card may show them: corpora by name, other paths as "a local file"."""
    sources: dict[str, str] = {}
    parameters: dict[str, Any] = {}
    for key, value in sorted(kwargs.items()):
        if key in GENERATION_FLAGS or value is None:
            continue
        corpus = about.corpus_for_arg(key) if about else None
        if corpus is not None:
            sources[key] = f"{corpus.title} (a local copy)"
        elif (about and key in about.path_args) or _looks_like_path(value):
            sources[key] = "a local file or folder given at build time"
        else:
            parameters[key] = value if isinstance(value, bool | int | float) else str(value)
    generation = {flag: getattr(config, flag, None) for flag in GENERATION_FLAGS}
    return {**generation, "sources": sources, "parameters": parameters}


def _looks_like_path(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    return "/" in value or "\\" in value or value.startswith("~") or Path(value).expanduser().exists()


# ---- writing --------------------------------------------------------------------------------------------------


def size_category(rows: int) -> str:
    for limit, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if rows < limit:
            return name
    return "n>1M"


@dataclass
class Build:
    """What a card says about one `audioeval build`."""

    benchmark: str
    about: BenchmarkAbout | None
    description: str  # the builder's docstring, for builders without ABOUT
    stats: dict[str, ConfigStats]
    generation: dict[str, Any]  # public_parameters() + builder_version
    versions: dict[str, str]
    reproduce: str  # the command line, local paths as placeholders


def card_text(build: Build) -> str:
    import datasets
    from huggingface_hub import DatasetCardData

    benchmark, about, stats, generation = build.benchmark, build.about, build.stats, build.generation

    named = [about.corpus_for_arg(arg) for arg in generation["sources"]] if about else []
    used = [c for c in dict.fromkeys(named) if c is not None]
    licenses = list(dict.fromkeys([about.generated_license] + [c.license for c in used])) if about else []
    card_fields: dict[str, Any] = {
        CARD_KEY: {"benchmark": benchmark, **generation, "versions": build.versions}
    }
    data = DatasetCardData(
        pretty_name=about.pretty_name if about else benchmark,
        license=licenses or None,
        language=list(about.languages) if about else None,
        task_categories=list(about.task_categories) if about else None,
        tags=list(dict.fromkeys(["audio", "audioeval", *(about.tags if about else ())])),
        size_categories=[size_category(sum(s.num_examples for s in stats.values()))],
        configs=[
            {"config_name": name, "data_files": [{"split": s.split, "path": f"{name}/{s.split}-*.parquet"}]}
            for name, s in stats.items()
        ],
        **card_fields,
    )
    infos = {
        name: datasets.DatasetInfo(
            features=s.features,
            splits=datasets.SplitDict({s.split: datasets.SplitInfo(s.split, s.num_bytes, s.num_examples)}),
            download_size=s.download_size,
            dataset_size=s.num_bytes,
        )
        for name, s in stats.items()
    }
    datasets.info.DatasetInfosDict(infos).to_dataset_card_data(data)
    return f"---\n{data.to_yaml()}\n---\n\n{_body(build, used)}"


def _body(build: Build, used: list[Any]) -> str:
    about, stats, generation = build.about, build.stats, build.generation
    title = about.pretty_name if about else build.benchmark
    summary = (
        about.summary if about else build.description or f"Built with audioeval from `{build.benchmark}`."
    )
    lines = [f"# {title}", "", summary, ""]
    if about:
        lines += [f"Benchmark: {about.paper}. {about.homepage}", ""]
    lines += ["## Generation parameters", "", "| parameter | value |", "|---|---|"]
    for flag in GENERATION_FLAGS:
        value = generation.get(flag)
        lines.append(f"| {flag} | {'all items' if value is None else value} |")
    for key, value in generation["parameters"].items():
        lines.append(f"| {key} | {value} |")
    for key, source in generation["sources"].items():
        lines.append(f"| {key} | {source} |")
    lines += [f"| {name} version | {version} |" for name, version in build.versions.items()]
    lines += ["", "Rebuild it with:", "", "```", build.reproduce, "```", ""]
    lines += ["## Configs", "", "| config | split | rows |", "|---|---|---|"]
    lines += [f"| {name} | {s.split} | {s.num_examples} |" for name, s in stats.items()] + [""]
    lines += _feature_section(about, stats)
    lines += _licence_section(about, used, generation)
    if about:
        lines += ["## Citation", "", "```bibtex", about.citation.strip(), "```", ""]
    lines += [
        "## Loading",
        "",
        "```python",
        "import datasets",
        f'ds = datasets.load_dataset("<this repository or folder>", "{next(iter(stats))}", split="test")',
        "```",
        "",
        "Evaluate a model on exactly these rows with audioeval: "
        "`audioeval --tasks <task> --task_args dataset=<this repository or folder> --model ...`.",
        "",
    ]
    return "\n".join(lines)


def _feature_section(about: BenchmarkAbout | None, stats: dict[str, ConfigStats]) -> list[str]:
    lines = ["## Features", ""]
    groups: dict[str, list[str]] = {}
    for name, s in stats.items():
        groups.setdefault(repr(s.features), []).append(name)
    for names in groups.values():
        features = stats[names[0]].features
        if len(groups) > 1:
            lines += [f"Configs {', '.join(names)}:", ""]
        lines += ["| feature | type | description |", "|---|---|---|"]
        for path, kind in feature_paths(features):
            text = (about.features.get(path) if about else None) or ""
            lines.append(f"| `{path}` | {kind} | {text} |")
        lines.append("")
    return lines


def _licence_section(about: BenchmarkAbout | None, used: list[Any], generation: dict[str, Any]) -> list[str]:
    if about is None:
        return []
    lines = ["## Licences and sources", "", "| part | licence | source |", "|---|---|---|"]
    lines.append(f"| episodes generated by audioeval | {about.generated_license} | {about.generated_note} |")
    for corpus in used:
        lines.append(f"| {corpus.title} | {corpus.license} ({corpus.license_note}) | {corpus.home} |")
    lines += ["", f"The benchmark itself: {about.upstream_license}", ""]
    others = [c for c in about.corpora if c not in used]
    if others:
        names = ", ".join(c.title for c in others)
        lines += [f"Not used by this build (the built-in sources stood in for them): {names}.", ""]
    return lines


# ---- reading ------------------------------------------------------------------------------------------------


@dataclass
class CardInfo:
    path: Path
    configs: dict[str, dict[str, list[str]]]  # config -> split -> data file patterns
    generation: dict[str, Any] | None  # the `audioeval:` block, None for a dataset audioeval did not write
    infos: dict[str, Any]  # config -> datasets.DatasetInfo (features) when the card declares them


def read_card(folder: Path, what: str) -> CardInfo:
    """The configs, features and generation parameters a dataset card declares; DataError naming what is
    missing. `what` names the folder or repository in messages."""
    import datasets
    from huggingface_hub import DatasetCard

    path = folder / "README.md"
    if not path.is_file():
        raise DataError(
            f"{what}: no README.md dataset card, so this is not a dataset written by `audioeval build` "
            "(or pushed from one). Build one with `audioeval build <benchmark> --output_dir DIR`."
        )
    try:
        card = DatasetCard.load(path)
    except Exception as err:  # noqa: BLE001 - any YAML problem becomes one message naming the file
        raise DataError(f"{path}: cannot read the dataset card's YAML header ({err}).") from err
    meta = card.data.to_dict()
    raw_configs = meta.get("configs")
    if not isinstance(raw_configs, list) or not raw_configs:
        raise DataError(
            f"{path}: the card declares no `configs:` (which parquet files make which config); "
            "a folder written by `audioeval build` has one entry per builder config."
        )
    configs: dict[str, dict[str, list[str]]] = {}
    for entry in raw_configs:
        name = entry.get("config_name", "default") if isinstance(entry, dict) else None
        files = entry.get("data_files") if isinstance(entry, dict) else None
        if not isinstance(name, str) or files is None:
            raise DataError(f"{path}: a `configs:` entry lacks config_name or data_files: {entry!r}.")
        configs[name] = _splits(files, path, name)
    generation = meta.get(CARD_KEY) if isinstance(meta.get(CARD_KEY), dict) else None
    infos = dict(datasets.info.DatasetInfosDict.from_dataset_card_data(card.data))
    return CardInfo(path=path, configs=configs, generation=generation, infos=infos)


def _splits(files: Any, path: Path, name: str) -> dict[str, list[str]]:
    if isinstance(files, str | list) and not (
        isinstance(files, list) and files and isinstance(files[0], dict)
    ):
        return {"train": [files] if isinstance(files, str) else [str(f) for f in files]}
    if isinstance(files, dict):
        return {str(k): [v] if isinstance(v, str) else list(v) for k, v in files.items()}
    out: dict[str, list[str]] = {}
    for item in files:
        if not isinstance(item, dict) or "path" not in item:
            raise DataError(f"{path}: config {name!r} has a data_files entry without `path`: {item!r}.")
        patterns = item["path"]
        out.setdefault(str(item.get("split", "train")), []).extend(
            [patterns] if isinstance(patterns, str) else list(patterns)
        )
    return out
