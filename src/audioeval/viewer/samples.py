"""A sample record as the browser shows it: the summary the list and filters use, and the full detail.

Nothing here knows a benchmark: facets are whatever scalar facts the episode metadata carries, and fields a
record gains later are shown as they are."""

from __future__ import annotations

import math
import re
from typing import Any

from audioeval.results.sample_record import SampleRecord

SHORT_TEXT = 160  # characters of response/prediction/target kept in the list
FACET_TEXT = 80  # longer metadata strings are prose, not facets


def _short(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= SHORT_TEXT else text[: SHORT_TEXT - 1] + "…"


def numeric_scores(scores: Any) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, value in (scores or {}).items():
        if isinstance(value, bool):
            out[name] = float(value)
        elif isinstance(value, int | float):
            out[name] = None if isinstance(value, float) and math.isnan(value) else float(value)
        elif value is None:
            out[name] = None
    return out


def verdicts(record: SampleRecord) -> list[dict[str, Any]]:
    """One row per (judge role, judge): the verdict value (None = judge failure), the value of each order
    for position-swapped judging, the judge's raw replies and the error."""
    rows = []
    for role, by_judge in (record.judgments or {}).items():
        for judge, verdict in by_judge.items():
            rows.append(
                {
                    "role": role,
                    "judge": judge,
                    "value": verdict["value"],
                    "values": verdict["values"],
                    "raw": verdict["raw"],
                    "error": verdict["error"],
                    "failed": verdict["value"] is None,
                }
            )
    return rows


def flat_facts(metadata: Any, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Scalar facts of episode metadata under dotted keys (`variation.speaker`), two levels deep."""
    out: dict[str, Any] = {}
    if not isinstance(metadata, dict):
        return out
    for key, value in metadata.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and depth < 1:
            out.update(flat_facts(value, name + ".", depth + 1))
        elif isinstance(value, bool | int | float | str) or value is None:
            if isinstance(value, str) and len(value) > FACET_TEXT:
                continue
            out[name] = value
    return out


def summarise(record: SampleRecord) -> dict[str, Any]:
    """What the sample list shows and filters on."""
    rows = verdicts(record)
    return {
        "id": f"{record.task}/{record.episode}/{record.shots}",
        "task": record.task,
        "episode": record.episode,
        "k": record.shots,
        "episode_id": record.episode_id,
        "response": _short(record.response),
        "prediction": _short(record.prediction),
        "target": _short(record.target),
        "scores": numeric_scores(record.scores),
        "parse_failure": record.parse_failure,
        "error": record.failed,
        "error_message": _short(record.error),
        "judged": bool(rows),
        "judge_failure": any(r["failed"] for r in rows),
        "judge_errors": [
            f"{r['judge']} ({r['role']}): {_short(r['error']) or 'no verdict in the reply'}"
            for r in rows
            if r["failed"]
        ],
        "cached": record.cached,
        "latency_s": record.latency_s,
        "facts": flat_facts(record.metadata),
    }


_CODE = re.compile(r"^[^\s\d]{1,40}$")  # a short code such as a constraint id: no spaces, no digits


def facets(summaries: list[dict[str, Any]], max_values: int = 40) -> dict[str, list[list[Any]]]:
    """Metadata keys worth filtering on, with [value, samples] pairs: keys that take 2..max_values values,
    vary within some task (a key constant within each task repeats the task filter) and group episodes (some
    value is shared by two or more episodes of a task). A key unique to each episode is a facet only when its
    values are short codes (a constraint id in a run too short to repeat one); ids, numbers and questions are
    not."""
    per_task: dict[str, dict[str, dict[int, Any]]] = {}  # key -> task -> episode -> value
    samples_by_value: dict[str, dict[Any, int]] = {}
    for s in summaries:
        for key, value in s["facts"].items():
            per_task.setdefault(key, {}).setdefault(s["task"], {})[s["episode"]] = value
            counts = samples_by_value.setdefault(key, {})
            counts[value] = counts.get(value, 0) + 1
    out = {}
    for key, tasks in per_task.items():
        values = samples_by_value[key]
        if len(values) > max_values:
            continue
        varies = [
            list(by_episode.values()) for by_episode in tasks.values() if len(set(by_episode.values())) > 1
        ]
        groups = any(len(set(v)) < len(v) for v in varies)
        codes = all(isinstance(v, str) and _CODE.match(v) for v in values)
        if varies and (groups or codes):
            ordered = sorted(values, key=lambda v: (v is None, str(v)))
            out[key] = [[v, values[v]] for v in ordered]
    return out


def spoken_answer(record: SampleRecord, url: str | None) -> dict[str, Any] | None:
    """A spoken answer as the detail view shows it: where its audio plays from (None: the file is not in
    the run folder), both texts, which was scored and by which ASR, and the timings."""
    block = record.spoken
    if block is None:
        return None
    audio = block["audio"]
    return {
        "url": url,
        "sha256": audio["sha256"],
        "seconds": audio["seconds"],
        "sampling_rate": audio["sampling_rate"],
        "transcript": block["transcript"],
        "asr_text": block["asr_text"],
        "asr_error": block["asr_error"],
        "asr": block["asr"],
        "scored": block["scored"],
        "time_to_first_audio_s": block["time_to_first_audio_s"],
        "generation_s": block["generation_s"],
        "real_time_factor": block["real_time_factor"],
    }
