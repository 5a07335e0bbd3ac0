"""Layer 5, from responses to numbers and files: scoring (`scoring`, `score_rows`), statistics (`stats`),
aggregation into results.json (`aggregate`), the run folder and its files (`outputs`), what a run says about
its own health (`run_health`), the robustness table and plot (`robustness`, `robustness_plot`) and the
report contract (`reports`)."""
