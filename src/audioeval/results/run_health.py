"""What a run says about itself besides its numbers: requests that failed, judges that failed, tasks that will
get no judged scores, a damaged cache, and how much of the run came from the response cache. Nothing is
silently scored as zero, and nothing that went wrong goes unmentioned."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from audioeval.results.reports import ReportTask
from audioeval.results.score_rows import ScoreRow


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def failure_warnings(
    rows_by_task: dict[str, list[ScoreRow]], judges: dict[str, Any] | None, cache_damage: str | None
) -> tuple[list[str], list[str]]:
    """(warnings, tasks that got no answer at all). A failed request is excluded from the scores and retried by
    the next run (failures are never cached)."""
    warnings: list[str] = []
    unscored: list[str] = []
    for task, rows in rows_by_task.items():
        failed = sorted((r for r in rows if r.error), key=lambda r: (r.episode, r.k))
        if not failed:
            continue
        first = _short(failed[0].error_message or "the backend returned no text")
        if len(failed) == len(rows):
            unscored.append(task)
            warnings.append(
                f"{task}: all {len(rows):,} requests failed ({first}); nothing was scored. Fix the cause and rerun."
            )
        else:
            warnings.append(
                f"{task}: {len(failed):,}/{len(rows):,} requests failed ({first}); their samples are left out of "
                "the scores. Rerun the same command to retry them (the answers received are cached)."
            )
    for judge_id, info in (judges or {}).items():
        if info.get("endpoint_down"):
            warnings.append(f"judge {judge_id}: {info['endpoint_down']}")
        failed_verdicts = int(info.get("failed_verdicts") or 0)
        if failed_verdicts:
            warnings.append(
                f"judge {judge_id}: {failed_verdicts:,} verdicts failed (of {info.get('requests_sent', 0):,} "
                f"judge requests sent): {_why_verdicts_failed(info, failed_verdicts)}. The scores that need them "
                "are missing for those samples, not zero."
            )
    if cache_damage:
        warnings.append(cache_damage)
    return warnings, unscored


def _why_verdicts_failed(info: dict[str, Any], failed: int) -> str:
    """Which failed verdicts a rerun asks again (failed requests are never cached) and which it reads again from
    the cache (replies that arrived but held no verdict the task reads, or one outside its scale)."""
    unreadable = min(failed, int(info.get("unreadable_verdicts") or 0))
    out_of_range = int(info.get("out_of_range_verdicts") or 0)
    parts = []
    if failed - unreadable:
        parts.append(f"{failed - unreadable:,} for a judge request that failed (a rerun asks again)")
    if unreadable:
        scale = f", {out_of_range:,} of them a number outside the scale asked for" if out_of_range else ""
        parts.append(
            f"{unreadable:,} for a reply without a verdict the task reads{scale} (those replies are cached, so a "
            "rerun reads the same verdicts: change the judge model, its sampling or the role's template)"
        )
    return "; ".join(parts)


def unjudged_warning(tasks: Sequence[ReportTask]) -> str | None:
    """Tasks that score with an LLM judge, when no --judge is given."""
    judged = [t for t in tasks if t.config.judge]
    if not judged:
        return None
    roles = sorted({r for t in judged if t.config.judge for r in t.config.judge.roles})
    names = ", ".join(t.name for t in judged[:6]) + (
        f" and {len(judged) - 6} more" if len(judged) > 6 else ""
    )
    return (
        f"no --judge given: {len(judged)} selected task(s) score with an LLM judge ({names}); without one, "
        f"their judged scores ({', '.join(roles)} verdicts, e.g. format and accuracy of chain-of-thought answers) "
        "will be missing, not zero. Add e.g. --judge openai --judge_args model=gpt-4o-mini."
    )


def resume_note(cached: int, total: int) -> str | None:
    if not cached:
        return None
    return (
        f"{cached:,} of {total:,} responses came from the response cache (a previous run of the same requests); "
        f"{total - cached:,} were computed now."
    )
