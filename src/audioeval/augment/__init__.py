"""Robustness sweeps: any task's clips degraded by seeded transforms (`--augment`, `--augment_target`).

plan.py parses the flags into conditions; catalogue.py holds the transforms (audiomentations, and the
harness's own noise and filters); seeding.py derives every draw from the clip's identity; episode.py applies
a condition to an episode; sweep.py, robustness.py and plot.py are the run's side (conditions as tasks,
the robustness table, the score-vs-level plot). See docs/robustness.md.
"""
