"""AudioICL-Bench's own baselines: `dsp-oracle` (task-aware signal processing) and `shortcut` (what the
episodes give away without analysing the signal)."""
