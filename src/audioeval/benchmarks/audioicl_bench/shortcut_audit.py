"""How much of AudioICL-Bench a model can score without analysing the signal, on the default (paper-faithful)
episodes and on `shortcut_free=true` builds, measured on the episodes themselves:

- AudioRemap: how often the query MIX is byte-identical to one of the k demo MIX clips (a twin), and the
  expected accuracy of copying the twin's label, else guessing among the patterns of the build's pool that no
  demo shows (the strategy knows the pool: six patterns by default, eight with shortcut_free);
- AudioCount, AudioCountHard: the expected accuracy of guessing among the counts 1-8 that no demo shows;
- AudioLengthHard: the accuracy of always answering "1" (the most frequent label of upstream's generator);
- AudioOperatorHard: the share of episodes whose k demos cannot tell the usual precedence from left to right
  (and of those where the query's answer depends on it);
- MorseLetter: how often the query clip is byte-identical to its bank clip;
- every task above: the accuracy of the `shortcut` baseline model (clip identity, elimination, label statistics).

    python -m audioeval.benchmarks.audioicl_bench.shortcut_audit [--n_episodes 300] [--seed 0] [--json out.json]

About 4 minutes on a 2-core machine at the default 300 episodes. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audioeval.results.scoring import SampleToScore

if TYPE_CHECKING:
    from audioeval.models.base import Model
    from audioeval.run.prepared import PreparedTask

SHOTS = (1, 3, 5)
TASKS = (
    "audioicl_audio_remap",
    "audioicl_audio_count",
    "audioicl_audio_count_hard",
    "audioicl_audio_length_hard",
    "audioicl_audio_operator_hard",
    "audioicl_morse_letter",
)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def episode_measures(config: str, episode: dict[str, Any], pool_size: int) -> dict[str, dict[int, float]]:
    """Measure -> k -> value for one episode (values are averaged over episodes)."""
    from audioeval.benchmarks.audioicl_bench.operator import tells_precedence

    query, demos = episode["query"], episode["demos"]
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for k in SHOTS:
        shown = demos[:k]
        if config == "audio_remap":
            twin = query["clips"][-1]["audio"].sha256 in {d["clips"][-1]["audio"].sha256 for d in shown}
            unseen = query["pattern"] not in {d["pattern"] for d in shown}
            out["twin rate"][k] = float(twin)
            out["copy the twin, else guess an unshown pattern"][k] = 1.0 if twin else unseen / (pool_size - k)
        elif config in ("audio_count", "audio_count_hard"):
            unseen = query["label"] not in {d["label"] for d in shown}
            out["guess a count no demo shows"][k] = unseen / (8 - k)
        elif config == "audio_operator_hard":
            blind = not any(tells_precedence(d["operands"], d["operators"]) for d in shown)
            out["demos cannot tell precedence"][k] = float(blind)
            out["... and the query's answer depends on it"][k] = float(
                blind and tells_precedence(query["operands"], query["operators"])
            )
    if config == "morse_letter":
        bank = {c["label"]: c["audio"].sha256 for c in episode["context"]}
        out["query = its bank clip"][0] = float(query["clips"][-1]["audio"].sha256 == bank[query["label"]])
    return out


def shortcut_accuracy(model: Model, task: PreparedTask, episode: dict[str, Any]) -> dict[int, float]:
    """k -> the model's accuracy on this episode's request at k (0 for an answer it gave up on)."""
    pairs = task.requests_for(episode)
    responses = model.generate([request.for_backend() for request, _ in pairs])  # what a backend may see
    samples = [
        SampleToScore(response.text or "", target, request.info["sample_info"])
        for (request, target), response in zip(pairs, responses, strict=True)
    ]
    scored = task.scorer.score(samples)
    return {
        request.rid.shots: float(result["scores"].get("accuracy") or 0.0) if response.ok else 0.0
        for (request, _), response, result in zip(pairs, responses, scored, strict=True)
    }


def audit(n_episodes: int, seed: int, shortcut_free: bool) -> dict[str, dict[str, dict[int, float]]]:
    import audioeval.benchmarks.audioicl_bench.remap as remap
    from audioeval.benchmarks.audioicl_bench.baselines.shortcut import ShortcutModel
    from audioeval.config.registry import TaskRegistry
    from audioeval.run.prepared import prepare_tasks

    registry = TaskRegistry.discover()
    tasks = prepare_tasks(
        registry,
        list(TASKS),
        num_fewshot=[0, *SHOTS],
        task_args={"n_episodes": n_episodes, "max_shots": max(SHOTS), "shortcut_free": shortcut_free},
        limit=None,
        seed=seed,
        gen_kwargs={},
    )
    model = ShortcutModel(seed=seed)
    model.prepare(tasks)
    results: dict[str, dict[str, dict[int, float]]] = {}
    for task in tasks:
        config = str(task.config.builder_config)
        pool = len(remap.patterns(task.builder.settings))
        sums: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        labels: Counter = Counter()
        for index in task.indices:
            episode = task.episode(index)
            labels[episode["query"]["label"]] += 1
            for name, per_k in episode_measures(config, episode, pool).items():
                for k, value in per_k.items():
                    sums[name][k].append(value)
            for k, accuracy in shortcut_accuracy(model, task, episode).items():
                sums["`shortcut` model"][k].append(accuracy)
        if config == "audio_length_hard":
            sums['always "1"'][0] = [labels["1"] / len(task.indices)]
        results[task.name] = {
            name: {k: _mean(v) for k, v in sorted(per.items())} for name, per in sums.items()
        }
    return results


def table(before: dict[str, Any], after: dict[str, Any]) -> str:
    lines = ["| task | measure | k | default | shortcut_free |", "|---|---|---|---|---|"]
    for task, measures in before.items():
        for name, per_k in measures.items():
            for k, value in per_k.items():
                free = after.get(task, {}).get(name, {}).get(k)
                shown = "—" if free is None else f"{100 * free:.1f}"
                lines.append(f"| {task} | {name} | {k} | {100 * value:.1f} | {shown} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n_episodes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    before = audit(args.n_episodes, args.seed, shortcut_free=False)
    after = audit(args.n_episodes, args.seed, shortcut_free=True)
    print(f"N = {args.n_episodes} episodes per task, seed {args.seed}; figures in %.\n")
    print(table(before, after))
    if args.json:
        args.json.write_text(json.dumps({"default": before, "shortcut_free": after}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
