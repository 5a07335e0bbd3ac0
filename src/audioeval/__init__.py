"""audioeval: an evaluation harness for large audio-language models.

The public Python API is what this package exports (docs/python_api.md):

    import audioeval

    result = audioeval.evaluate(tasks=["my_group"], model="hf", model_args={"pretrained": "..."}, limit=20)
    print(result.table)

and the extension contract of task folders and backends (`audioeval.Model`, `audioeval.Response`,
`audioeval.EpisodeBuilder`, `audioeval.register_parser`, ...). Every other module path is private. Names are
imported on first use, so `import audioeval` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from audioeval import deprecation as _deprecation
from audioeval.api.exports import PUBLIC as _PUBLIC
from audioeval.version import __version__

if TYPE_CHECKING:  # what type checkers and editors see; at run time each name loads on first use
    from audioeval.api.evaluate import evaluate
    from audioeval.api.result import EvaluationResult
    from audioeval.config.parsers import register as register_parser
    from audioeval.config.verdicts import register as register_verdict
    from audioeval.data.about import BenchmarkAbout, Corpus, Download
    from audioeval.data.builders import EpisodeBuilder, EpisodeBuilderConfig
    from audioeval.data.by_name import load_dataset
    from audioeval.errors import AudioEvalError, ConfigError, DataError, ModelError, UsageError
    from audioeval.models.base import Model, ModelTask, StreamingModel
    from audioeval.models.registry import Backend
    from audioeval.results.blocks import MetricStats, ShotBlock
    from audioeval.results.record import RunRecord
    from audioeval.results.reports import ReportContext
    from audioeval.results.reports import register as register_report
    from audioeval.results.run_files import read_run
    from audioeval.results.sample_record import SampleRecord
    from audioeval.types import (
        AudioClip,
        AudioPart,
        Failure,
        Message,
        Request,
        RequestId,
        Response,
        ShownClip,
        ShownEpisode,
        ShownShot,
        SpokenAnswer,
        TextPart,
    )

__all__ = [  # the same names as api/exports.py PUBLIC (a test keeps them equal)
    "__version__",
    "evaluate",
    "EvaluationResult",
    "load_dataset",
    "read_run",
    "RunRecord",
    "ShotBlock",
    "MetricStats",
    "SampleRecord",
    "Model",
    "StreamingModel",
    "ModelTask",
    "Backend",
    "Request",
    "RequestId",
    "Response",
    "Failure",
    "SpokenAnswer",
    "Message",
    "TextPart",
    "AudioPart",
    "AudioClip",
    "ShownEpisode",
    "ShownShot",
    "ShownClip",
    "EpisodeBuilder",
    "EpisodeBuilderConfig",
    "BenchmarkAbout",
    "Corpus",
    "Download",
    "register_parser",
    "register_verdict",
    "register_report",
    "ReportContext",
    "AudioEvalError",
    "ConfigError",
    "DataError",
    "ModelError",
    "UsageError",
]


def __getattr__(name: str) -> object:
    if name in _PUBLIC:
        from audioeval.api.exports import resolve

        value = resolve(name)
        globals()[name] = value  # once resolved, a plain attribute
        return value
    raise AttributeError(f"module 'audioeval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


_deprecation.install()  # the import paths of release 0.1, for one more release
