"""Tiny random-weight checkpoints, built once per test session (a few seconds) into a temporary folder."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    from tests.support.tiny import build_tiny_models

    return build_tiny_models(tmp_path_factory.mktemp("tiny_models"))


@pytest.fixture(scope="session")
def hf_models(tiny_models):
    """One loaded `hf` backend per family, shared by the tests (loading is the slow part)."""
    from audioeval.models.registry import create_model

    cache = {}

    def get(family: str, batch_size: int = 4):
        if family not in cache:
            cache[family] = create_model("hf", {"pretrained": str(tiny_models[family])}, batch_size, 0)
        model = cache[family]
        model.batch_size = batch_size
        return model

    yield get
    for model in cache.values():
        model.close()
