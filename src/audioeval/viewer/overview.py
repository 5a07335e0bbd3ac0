"""The overview page of a run: the tables and plots its reports wrote, the results with their CIs, failures,
settings, timing and versions. Rendered on the server side into an HTML fragment (Jinja, autoescaped)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from audioeval.results.blocks import PerK, shot_count
from audioeval.results.record import RunRecord
from audioeval.results.units import is_proportion, score_values
from audioeval.version import __version__
from audioeval.viewer.run_folder import RunFolder

FileLink = Callable[[str], str]  # report file name -> the URL the page uses for it
_AGGREGATE_SUFFIXES = ("_stderr", "_ci95", "_missing")
_FIGURE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg")


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("audioeval.viewer", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = format_number
    return env


def format_number(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def render_markdown(text: str, file_link: FileLink) -> Markup:
    """A report's markdown as HTML: raw HTML in it is escaped, images point at the served report files."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    for token in tokens:
        for child in token.children or []:
            if child.type == "image":
                src = str(child.attrGet("src") or "")
                if src and "/" not in src and ":" not in src:
                    child.attrSet("src", file_link(src))
    html = md.renderer.render(tokens, md.options, {})
    html = html.replace("<table>", '<div class="table-wrap"><table>').replace("</table>", "</table></div>")
    return Markup(html)


def _stem(name: str) -> str:
    return re.split(r"[_.\-]", name, maxsplit=1)[0]


def report_sections(run: RunFolder, file_link: FileLink) -> list[dict[str, Any]]:
    """One section per markdown report, holding the other files written under the same name prefix (its
    figures and data); files that belong to no markdown report get a section of their own."""
    files = run.report_files()
    sections: list[dict[str, Any]] = []
    claimed: set[Path] = set()
    for md in (f for f in files if f.suffix == ".md"):
        text = md.read_text(encoding="utf-8", errors="replace")
        title = next((ln.lstrip("# ").strip() for ln in text.splitlines() if ln.startswith("# ")), md.stem)
        body = "\n".join(ln for ln in text.splitlines() if ln.strip() != f"# {title}")
        inline = set(re.findall(r"!\[[^\]]*\]\(([^)\s]+)", text))
        related = [f for f in files if f != md and _stem(f.name) == _stem(md.name)]
        claimed.update([md, *related])
        sections.append(_section(title, render_markdown(body, file_link), md, related, inline, file_link))
    rest = [f for f in files if f not in claimed]
    if rest:
        sections.append(_section("Other report files", None, None, rest, set(), file_link))
    return sections


def _section(
    title: str, html: Markup | None, md: Path | None, related: list[Path], inline: set[str], link: FileLink
) -> dict[str, Any]:
    figures = [f for f in related if f.suffix.lower() in _FIGURE_SUFFIXES and f.name not in inline]
    downloads = ([md] if md else []) + [f for f in related if f.suffix.lower() not in _FIGURE_SUFFIXES]
    return {
        "title": title,
        "html": html,
        "figures": [{"name": f.name, "url": link(f.name)} for f in figures],
        "downloads": [{"name": f.name, "url": link(f.name)} for f in downloads],
    }


def metric_names(per_k: PerK) -> list[str]:
    """The metrics of a task's or group's blocks, in the order they are reported."""
    return list(dict.fromkeys(name for block in per_k.values() for name in block.metrics))


def shot_of(key: str) -> int:
    k = shot_count(key)
    return -1 if k is None else k


def results_rows(record: RunRecord | None) -> list[dict[str, Any]]:
    """The results with their standard errors and 95% CIs, one row per (task or group, k, metric); a
    proportion's in percent (`percent`: value, stderr and CI times 100), as every table shows it."""
    rows: list[dict[str, Any]] = []
    if record is None:
        return rows
    for kind, section in (("task", record.sections.results), ("group", record.sections.groups)):
        for name, per_k in section.items():
            first = True
            for key in sorted(per_k, key=shot_of):
                block = per_k[key]
                for metric, stats in block.metrics.items():
                    percent = is_proportion(score_values(per_k.values(), metric))
                    scale = _percent if percent else _same
                    rows.append(
                        {
                            "kind": kind,
                            "name": name,
                            "first": first,
                            "k": shot_of(key),
                            "metric": metric,
                            "percent": percent,
                            "value": scale(stats.value),
                            "stderr": scale(stats.stderr),
                            "ci": [scale(v) for v in stats.ci95] if stats.ci95 else [None, None],
                            "n": block.scored(metric),
                        }
                    )
                    first = False
    return rows


def _percent(value: Any) -> Any:
    return 100 * value if isinstance(value, int | float) and not isinstance(value, bool) else value


def _same(value: Any) -> Any:
    return value


def failures(run: RunFolder) -> dict[str, Any]:
    """Model errors, parse failures and judge failures per task, with the messages the samples logged.
    Error counts come from results.json's timing block, so they are there for runs without sample logs."""
    counted: dict[str, dict[str, Any]] = {
        task: {"task": task, "samples": 0, "errors": 0, "parse_failures": 0, "judged": 0, "judge_failures": 0}
        for task in run.tasks
    }
    messages: dict[tuple[str, str], dict[str, Any]] = {}
    judge_failures: list[dict[str, Any]] = []
    for s in run.summaries:
        row = counted[s["task"]]
        row["samples"] += 1
        row["errors"] += int(s["error"])
        row["parse_failures"] += int(s["parse_failure"])
        row["judged"] += int(s["judged"])
        row["judge_failures"] += int(s["judge_failure"])
        if s["error"]:
            text = s["error_message"] or "no response"
            entry = messages.setdefault(
                (s["task"], text), {"task": s["task"], "message": text, "count": 0, "first": s["id"]}
            )
            entry["count"] += 1
        judge_failures.extend({"id": s["id"], "message": error} for error in s["judge_errors"])
    timing = (run.record.timing if run.record else {}).get("tasks") or {}
    for task, row in counted.items():
        if not run.has_samples:
            row.update(samples=None, parse_failures=None, judged=None, judge_failures=None)
            row["errors"] = (timing.get(task) or {}).get("errors")
    judges = {
        k: v for k, v in ((run.record.judges if run.record else None) or {}).items() if isinstance(v, dict)
    }
    return {
        "per_task": list(counted.values()),
        "messages": list(messages.values()),
        "judge_failures": judge_failures,
        "judges": judges,
    }


def settings(run: RunFolder) -> dict[str, Any]:
    """Each task's settings, and the builder parameters and generation settings every task shares (with two
    tasks or more), shown once above the table instead of on every row."""
    tasks = []
    for task, block in run.configs.items():
        config = block.config
        tasks.append(
            {
                "task": task,
                "version": block.version,
                "hash": block.hash[:12],
                "shots": block.shots,
                "n_episodes": block.n_episodes,
                "builder": config.get("builder"),
                "builder_config": config.get("builder_config"),
                "parameters": dict(config.get("parameters") or {}),
                "generation_kwargs": dict(config.get("generation_kwargs") or {}),
                "templates": sorted((config.get("template_texts") or {}).keys()),
            }
        )
    shared = {field: _shared(tasks, field) for field in ("parameters", "generation_kwargs")}
    for row in tasks:
        for field, common in shared.items():
            row[field] = {k: v for k, v in row[field].items() if k not in common}
    return {"tasks": tasks, "shared": shared}


def _shared(tasks: list[dict[str, Any]], field: str) -> dict[str, Any]:
    """The key=value pairs of `field` that every task has, the same; none with fewer than two tasks."""
    if len(tasks) < 2:
        return {}
    first, *others = [t[field] for t in tasks]
    return {k: v for k, v in first.items() if all(k in o and o[k] == v for o in others)}


def version_notes(run: RunFolder) -> list[str]:
    made_with = run.record.versions.get("audioeval") if run.record else None
    notes = []
    if made_with and made_with != __version__:
        notes.append(
            f"This run was made with audioeval {made_with}; this viewer is audioeval {__version__}. Clips whose "
            "builder changed since are marked “cannot be regenerated (sha256 differs)”."
        )
    return notes


def render(run: RunFolder, run_index: int, file_link: FileLink) -> str:
    record = run.record
    context = {
        "run": run,
        "run_index": run_index,
        "results": record or {},
        "model": record.model if record else {},
        "sections": report_sections(run, file_link),
        "rows": results_rows(record),
        "failures": failures(run),
        "settings": settings(run),
        "timing": record.timing if record else {},
        "versions": record.versions if record else {},
        "version_notes": version_notes(run),
        "viewer_version": __version__,
    }
    return environment().get_template("overview.html").render(**context)
