"""A sample record as the browser shows it: the summary the list and filters use, and the full detail.

Nothing here knows a benchmark: facets are whatever scalar facts the episode metadata carries, and fields a
record gains later are shown as they are."""

from __future__ import annotations

import math
import re
from typing import Any

# Record fields the detail view lays out itself; any other field is listed under "other fields".
KNOWN_FIELDS = frozenset(
    {
        "task",
        "episode",
        "episode_id",
        "shots",
        "metadata",
        "request_key",
        "messages",
        "gen_kwargs",
        "response",
        "error",
        "prediction",
        "target",
        "parse_failure",
        "scores",
        "audio_seconds",
        "latency_s",
        "cached",
        "response_info",
        "judgments",
        "spoken",
    }
)
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


def verdicts(record: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (judge role, judge): the verdict value (None = judge failure), the value of each order
    for position-swapped judging, the judge's raw replies and the error."""
    rows = []
    for role, by_judge in (record.get("judgments") or {}).items():
        for judge, verdict in (by_judge or {}).items():
            verdict = verdict if isinstance(verdict, dict) else {"value": verdict}
            raw = verdict.get("raw")
            rows.append(
                {
                    "role": role,
                    "judge": judge,
                    "value": verdict.get("value"),
                    "values": verdict.get("values"),
                    "raw": raw if isinstance(raw, list) else ([] if raw is None else [raw]),
                    "error": verdict.get("error"),
                    "failed": verdict.get("value") is None,
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


# The fields whose shape the pages rely on, and what each must be when present.
_RECORD_SHAPE: dict[str, tuple[type, ...]] = {
    "task": (str,),
    "messages": (list,),
    "scores": (dict,),
    "judgments": (dict,),
    "gen_kwargs": (dict,),
}


def json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if isinstance(value, bool):
        return "true/false"
    kinds = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), f"a {type(value).__name__}")


def record_problem(record: Any) -> str | None:
    """What is wrong with the shape of a sample record, or None: a record is shown only when every field the
    pages lay out has the shape audioeval writes (a damaged line is named, never a crash)."""
    if not isinstance(record, dict):
        return f"a sample record is a JSON object, not {json_kind(record)}"
    for key, kinds in _RECORD_SHAPE.items():
        value = record.get(key)
        if value is not None and not isinstance(value, kinds):
            return f"`{key}` is {json_kind(value)}, not {json_kind(kinds[0]())}"
    for i, message in enumerate(record.get("messages") or []):
        if not isinstance(message, dict):
            return f"`messages[{i}]` is {json_kind(message)}, not an object"
        content = message.get("content")
        if content is not None and not isinstance(content, list):
            return f"`messages[{i}].content` is {json_kind(content)}, not a list"
        for j, part in enumerate(content or []):
            if not isinstance(part, dict):
                return f"`messages[{i}].content[{j}]` is {json_kind(part)}, not an object"
    for role, by_judge in (record.get("judgments") or {}).items():
        if by_judge is not None and not isinstance(by_judge, dict):
            return f"`judgments.{role}` is {json_kind(by_judge)}, not an object"
    return None


def summarise(record: dict[str, Any]) -> dict[str, Any]:
    """What the sample list shows and filters on."""
    rows = verdicts(record)
    return {
        "id": f"{record['task']}/{record['episode']}/{record['shots']}",
        "task": record["task"],
        "episode": int(record["episode"]),
        "k": int(record["shots"]),
        "episode_id": record.get("episode_id"),
        "response": _short(record.get("response")),
        "prediction": _short(record.get("prediction")),
        "target": _short(record.get("target")),
        "scores": numeric_scores(record.get("scores")),
        "parse_failure": bool(record.get("parse_failure")),
        "error": record.get("error") is not None or record.get("response") is None,
        "error_message": _short(record.get("error")),
        "judged": bool(rows),
        "judge_failure": any(r["failed"] for r in rows),
        "judge_errors": [
            f"{r['judge']} ({r['role']}): {_short(r['error']) or 'no verdict in the reply'}"
            for r in rows
            if r["failed"]
        ],
        "cached": bool(record.get("cached")),
        "latency_s": record.get("latency_s"),
        "facts": flat_facts(record.get("metadata")),
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


def spoken_answer(record: dict[str, Any], url: str | None) -> dict[str, Any] | None:
    """A spoken answer as the detail view shows it: where its audio plays from (None: the file is not in
    the run folder), both texts, which was scored and by which ASR, and the timings."""
    block = record.get("spoken")
    if not isinstance(block, dict):
        return None
    audio = block.get("audio")
    audio = audio if isinstance(audio, dict) else {}
    return {
        "url": url,
        "sha256": audio.get("sha256"),
        "seconds": audio.get("seconds"),
        "sampling_rate": audio.get("sampling_rate"),
        "transcript": block.get("transcript"),
        "asr_text": block.get("asr_text"),
        "asr_error": block.get("asr_error"),
        "asr": block.get("asr"),
        "scored": block.get("scored"),
        "time_to_first_audio_s": block.get("time_to_first_audio_s"),
        "generation_s": block.get("generation_s"),
        "real_time_factor": block.get("real_time_factor"),
    }


def extra_fields(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in KNOWN_FIELDS}
