"""The `eval.yaml` of a benchmark dataset: the file at a Hub dataset's root that makes it a benchmark, whose
leaderboards collect the `.eval_results/` entries of model repositories naming it (`dataset.id`) and one of its
tasks (`dataset.task_id`).

Its fields, as the Hub's documentation specifies them (https://huggingface.co/docs/hub/eval-results,
"Eval.yaml specification"; hub-docs docs/hub/eval-results.md): `name` and `description` of the benchmark,
`evaluation_framework` (one identifier from the list the Hub keeps in huggingface.js
packages/tasks/src/eval.ts) and `tasks`, each with a required `id` (one leaderboard; the `task_id` results
give) and an optional `config` and `split` of the dataset it is measured on. The format has no name or
description per task.

audioeval declares one task per number `audioeval push-results` publishes for the benchmark: which ones the
build finds by a probe run (`LeaderboardProbe`), so the ids come from the code that names the published ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

EVAL_YAML = "eval.yaml"
#: the `evaluation_framework` written; not (yet) in the Hub's list of identifiers (docs/hub_results.md)
EVALUATION_FRAMEWORK = "audioeval"


@dataclass(frozen=True)
class LeaderboardTask:
    id: str  # the `task_id` of the `.eval_results/` entries it collects
    config: str | None = None  # the builder config a task's numbers are measured on; None for a group's


#: (built folder, the benchmark as `audioeval build` was given it, the configs built, --include_path folders) ->
#: the leaderboard tasks a run of the benchmark's tasks on that folder reports; raises an AudioEvalError when no
#: run can be made there
LeaderboardProbe = Callable[[Path, str, list[str], list[str]], list[LeaderboardTask]]

IDS_NOTE = (
    "Leaderboards: one per number audioeval publishes with `audioeval push-results` (each group's aggregates "
    "per metric and k, its pooled cells, each task's main metric per k), named "
    "<group or task>-<metric>-<k>-shot (pooled cells: <group>-<metric>-<setting>)."
)


def eval_yaml_text(name: str, description: str, tasks: list[LeaderboardTask], splits: dict[str, str]) -> str:
    """The file's text; `splits` gives the split of each built config."""
    entries = []
    for task in tasks:
        entry = {"id": task.id}
        if task.config is not None and task.config in splits:
            entry |= {"config": task.config, "split": splits[task.config]}
        entries.append(entry)
    data = {
        "name": name,
        "description": f"{description.strip()} {IDS_NOTE}".strip(),
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": entries,
    }
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
