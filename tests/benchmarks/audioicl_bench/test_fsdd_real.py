"""AudioOperator and AudioOperatorHard on the real Free Spoken Digit Dataset (../shared/corpora/fsdd): labels
and clip provenance of every spoken digit, through `audioeval build` and back from its rows."""

from __future__ import annotations

import ast
import operator as op_module
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from audioeval.benchmarks.audioicl_bench import operator as operator_task
from audioeval.benchmarks.audioicl_bench.sounds.corpora import load_audio
from audioeval.data.builders import row_to_episode
from tests.conftest import run_cli
from tests.shared_corpora import needs_corpus, shared_corpus

FSDD = shared_corpus("fsdd")
pytestmark = needs_corpus("fsdd", "Free Spoken Digit Dataset")
_BINARY = {ast.Add: op_module.add, ast.Sub: op_module.sub, ast.Mult: op_module.mul}


def _python_value(expression: str) -> int:
    """The expression evaluated by Python's own parser (usual precedence), not by the generator's code."""

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](walk(node.left), walk(node.right))
        assert isinstance(node, ast.Constant)
        return int(node.value)

    return walk(ast.parse(expression, mode="eval").body)


@pytest.fixture(scope="module")
def episodes(tmp_path_factory):
    out = tmp_path_factory.mktemp("fsdd") / "hub"
    code, _, err = run_cli(
        [
            "build",
            "audioicl_bench",
            "--output_dir",
            str(out),
            "--configs",
            "audio_operator,audio_operator_hard",
            "--n_episodes",
            "6",
            "--max_shots",
            "3",
            "--seed",
            "11",
            "--builder_args",
            f"fsdd_dir={FSDD}",
        ]
    )
    assert code == 0, err
    return {
        config: [
            row_to_episode(r)
            for f in sorted((out / config).glob("*.parquet"))
            for r in pq.read_table(f).to_pylist()
        ]
        for config in ("audio_operator", "audio_operator_hard")
    }, out


@pytest.mark.parametrize("config, n_operands", [("audio_operator", 2), ("audio_operator_hard", 3)])
def test_labels_follow_the_spoken_digits_and_the_operators(episodes, config, n_operands):
    rows = episodes[0][config]
    assert len(rows) == 6
    for episode in rows:
        assert episode["metadata"]["voice"] == {"source": "fsdd", "speaker": "jackson"}
        for shot in [episode["query"], *episode["demos"]]:
            assert len(shot["operands"]) == n_operands
            assert shot["label"] == str(_python_value(shot["expression"].replace("x", "*")))
            assert shot["expression"] == "".join(
                f"{a}{o}" for a, o in zip(shot["operands"], shot["operators"], strict=False)
            ) + str(shot["operands"][-1])
            assert shot["label"] in shot["candidates"]
            for spoken in shot["spoken"]:
                match = re.fullmatch(r"(\d)_jackson_(\d+)\.wav", spoken["file"])
                assert spoken["source"] == "fsdd" and match and int(match.group(1)) == spoken["digit"]
                assert (FSDD / "recordings" / spoken["file"]).is_file()
        # each demo's label is shown with its clip; the query's is not
        assert all(d["clips"][0]["label"] == d["label"] for d in episode["demos"])
        assert episode["query"]["clips"][0]["label"] is None


def test_each_clip_starts_with_the_recording_it_names(episodes):
    rows, _ = episodes
    checked = 0
    for episode in rows["audio_operator"] + rows["audio_operator_hard"]:
        for shot in [episode["query"], *episode["demos"]]:
            clip = shot["clips"][0]["audio"]
            first = operator_task._part(
                load_audio(FSDD / "recordings" / shot["spoken"][0]["file"], 16000), 16000
            )
            head = clip.samples[: len(first)].astype(np.float64)
            corr = np.corrcoef(head, first)[0, 1]
            assert corr > 0.999, (episode["id"], shot["spoken"][0]["file"], corr)
            checked += 1
    assert checked == 2 * 6 * 4


def test_the_card_of_an_fsdd_build_carries_its_licence(episodes):
    from huggingface_hub import DatasetCard

    _, out = episodes
    meta = DatasetCard.load(out / "README.md").data.to_dict()
    assert "cc-by-sa-4.0" in meta["license"]
    assert meta["audioeval"]["sources"] == {"fsdd_dir": "Free Spoken Digit Dataset (a local copy)"}
    assert str(FSDD) not in (out / "README.md").read_text()
