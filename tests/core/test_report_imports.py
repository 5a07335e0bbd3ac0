"""A report's plotting library is imported while the run waits on its endpoint (`imports_ahead`), so the half
second of import does not come after the last answer."""

from __future__ import annotations

import importlib.util
import sys

from audioeval.results.reports import REPORTS, Report, imports_ahead, start_imports


def test_marked_modules_are_imported_on_a_thread_and_a_failing_one_is_left_to_its_report(
    tmp_path, monkeypatch
):
    (tmp_path / "ahead_plotlib.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ahead_plotlib", raising=False)

    @imports_ahead("no_such_plotting_module", "ahead_plotlib")
    def report(ctx):
        return []

    thread = start_imports([Report("x", "task.yaml", report), Report("y", "task.yaml", lambda ctx: [])])
    assert thread is not None and thread.daemon
    thread.join(30)
    assert sys.modules["ahead_plotlib"].LOADED
    assert "no_such_plotting_module" not in sys.modules
    assert start_imports([Report("y", "task.yaml", lambda ctx: [])]) is None


def test_the_benchmark_plots_name_modules_that_exist():
    for name in ("audioicl_bench", "adu_bench"):
        modules = REPORTS.resolve(name, None, "test").imports_ahead
        assert modules and all(importlib.util.find_spec(m) is not None for m in modules), name
