"""`audioeval build` estimates its size and time from the first rows of each config, then writes those very
rows: every episode is made once, and the folder holds each row once, in order."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq

from audioeval.data import hub
from tests.conftest import run_cli


def test_the_rows_made_for_the_estimate_are_written_not_made_again(tmp_path, monkeypatch):
    made: Counter[tuple[str, int]] = Counter()
    make_builder = hub.make_builder

    def counting(*args, **kwargs):
        builder = make_builder(*args, **kwargs)
        episode = builder.episode

        def counted(index: int) -> dict:
            made[(builder.config.name, index)] += 1
            return episode(index)

        builder.episode = counted
        return builder

    monkeypatch.setattr(hub, "make_builder", counting)
    out = tmp_path / "built"
    code, _, err = run_cli(["build", "audioicl_bench", "--configs", "audio_count,audio_length", "--n_episodes", "7",
                            "--output_dir", str(out)])  # fmt: skip
    assert code == 0, err
    configs = ("audio_count", "audio_length")
    assert made == {(c, i): 1 for c in configs for i in range(7)}
    for config in configs:
        (shard,) = (out / config).glob("*.parquet")
        ids = pq.read_table(shard).column("id").to_pylist()
        assert len(ids) == 7 and len(set(ids)) == 7
        fresh = [
            hub.make_builder("audioicl_bench", config, {"n_episodes": 7}).episode(i)["id"] for i in range(7)
        ]
        assert ids == fresh
