"""Robustness sweeps: any task's clips degraded by seeded transforms (`--augment`, `--augment_target`).

plan.py parses the flags into conditions (arguments.py declares them); catalogue.py holds the transforms
(audiomentations, and the harness's own noise and filters); seeding.py derives every draw from the clip's
identity; episode.py applies a condition to an episode; build.py writes degraded copies of a dataset. The
run's side lives in the layers above: conditions as tasks (run/conditions.py), the robustness table and
plot (results/robustness.py, results/robustness_plot.py). See docs/robustness.md.
"""
