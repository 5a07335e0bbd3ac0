"""What `audioeval` exports: the public contract, by name.

Everything a user's script, training loop, task folder or backend needs is importable from `audioeval` itself
(`from audioeval import evaluate, Model, Response`); every other module path is private and free to move. The
names are resolved on first use, so `import audioeval` stays light (no torch, no datasets).
"""

from __future__ import annotations

#: public name -> "module:attribute"
PUBLIC: dict[str, str] = {
    # running evaluations
    "evaluate": "audioeval.api.evaluate:evaluate",
    "EvaluationResult": "audioeval.api.result:EvaluationResult",
    # a benchmark's episodes as a Hugging Face dataset, by name (datasets' own load_dataset reads built folders)
    "load_dataset": "audioeval.data.by_name:load_dataset",
    # what a run wrote, read back as the types it was written from (results.json, samples_<task>.jsonl)
    "read_run": "audioeval.results.run_files:read_run",
    "RunRecord": "audioeval.results.record:RunRecord",
    "ShotBlock": "audioeval.results.blocks:ShotBlock",
    "MetricStats": "audioeval.results.blocks:MetricStats",
    "SampleRecord": "audioeval.results.sample_record:SampleRecord",
    # the model contract: what a backend is and what it is handed
    "Model": "audioeval.models.base:Model",
    "StreamingModel": "audioeval.models.base:StreamingModel",
    "ModelTask": "audioeval.models.base:ModelTask",
    "Backend": "audioeval.models.registry:Backend",
    "Request": "audioeval.types:Request",
    "RequestId": "audioeval.types:RequestId",
    "Response": "audioeval.types:Response",
    "Failure": "audioeval.types:Failure",
    "SpokenAnswer": "audioeval.types:SpokenAnswer",
    "Message": "audioeval.types:Message",
    "TextPart": "audioeval.types:TextPart",
    "AudioPart": "audioeval.types:AudioPart",
    "AudioClip": "audioeval.types:AudioClip",
    "ShownEpisode": "audioeval.types:ShownEpisode",
    "ShownShot": "audioeval.types:ShownShot",
    "ShownClip": "audioeval.types:ShownClip",
    # the episode contract: what a task folder's builder derives from
    "EpisodeBuilder": "audioeval.data.builders:EpisodeBuilder",
    "EpisodeBuilderConfig": "audioeval.data.builders:EpisodeBuilderConfig",
    "BenchmarkAbout": "audioeval.data.about:BenchmarkAbout",
    "Corpus": "audioeval.data.about:Corpus",
    "Download": "audioeval.data.about:Download",
    # hooks a task folder registers by name (parser:, verdict:, report:)
    "register_parser": "audioeval.config.parsers:register",
    "register_verdict": "audioeval.config.verdicts:register",
    "register_report": "audioeval.results.reports:register",
    "ReportContext": "audioeval.results.reports:ReportContext",
    # the exception family
    "AudioEvalError": "audioeval.errors:AudioEvalError",
    "ConfigError": "audioeval.errors:ConfigError",
    "DataError": "audioeval.errors:DataError",
    "ModelError": "audioeval.errors:ModelError",
    "UsageError": "audioeval.errors:UsageError",
}


def resolve(name: str) -> object:
    """The object a public name stands for (imports its module on first use)."""
    import importlib

    module, _, attribute = PUBLIC[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
