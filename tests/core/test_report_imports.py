"""A report's plotting library is imported while the run's last answers come (`imports_ahead`), so the half
second of import does not come after them."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

from audioeval.results.reports import REPORTS, Report, ReportImports, imports_ahead
from audioeval.run.feed import RunFeed


def test_marked_modules_are_imported_on_a_thread_and_a_failing_one_is_left_to_its_report(
    tmp_path, monkeypatch
):
    (tmp_path / "ahead_plotlib.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ahead_plotlib", raising=False)

    @imports_ahead("no_such_plotting_module", "ahead_plotlib")
    def report(ctx):
        return []

    imports = ReportImports([Report("x", "task.yaml", report), Report("y", "task.yaml", lambda ctx: [])])
    assert (
        imports.modules == ["no_such_plotting_module", "ahead_plotlib"] and "ahead_plotlib" not in sys.modules
    )
    imports.import_now()
    assert sys.modules["ahead_plotlib"].LOADED
    assert "no_such_plotting_module" not in sys.modules
    assert ReportImports([Report("y", "task.yaml", lambda ctx: [])]).modules == []


def test_once_closed_for_the_reports_nothing_more_is_imported(tmp_path, monkeypatch):
    """The reports import on the main thread after `close`: the feed thread must not import at the same time."""
    (tmp_path / "late_plotlib.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "late_plotlib", raising=False)

    @imports_ahead("late_plotlib")
    def report(ctx):
        return []

    imports = ReportImports([Report("x", "task.yaml", report)])
    imports.close()
    imports.import_now()
    assert "late_plotlib" not in sys.modules


def test_the_benchmark_plots_name_modules_that_exist():
    for name in ("audioicl_bench", "adu_bench"):
        modules = REPORTS.resolve(name, None, "test").imports_ahead
        assert modules and all(importlib.util.find_spec(m) is not None for m in modules), name


class Source:
    def __init__(self, fail_at: int | None = None) -> None:
        self.fail_at = fail_at

    def episodes(self, task, indices):
        for index in indices:
            if index == self.fail_at:
                raise RuntimeError("synthesis failed")
            yield index, {"index": index}, None


class Task:
    name = "toy"

    def __init__(self) -> None:
        self.rendered: list[int] = []

    def requests_for(self, episode):
        self.rendered.append(episode["index"])
        return []


def _feed(source: Source) -> tuple[Task, list[list[int]]]:
    task, calls = Task(), []
    feed = RunFeed([(task, [0, 1, 2])], source, ahead=1, when_fed=lambda: calls.append(list(task.rendered)))

    async def consume() -> None:
        async for _item in feed:
            pass

    try:
        asyncio.run(consume())
    except RuntimeError:
        pass
    assert feed._thread is not None
    feed._thread.join(30)
    return task, calls


def test_the_feed_runs_when_fed_once_every_episode_is_handed_over_and_not_after_a_failure():
    task, calls = _feed(Source())
    assert calls == [[0, 1, 2]]
    task, calls = _feed(Source(fail_at=1))
    assert task.rendered == [0] and calls == []
