"""`audioeval compare RUN_DIR ... [--baseline RUN_DIR]`: runs side by side, their paired differences and the papers\x27 multi-model tables (docs/compare.md)."""
