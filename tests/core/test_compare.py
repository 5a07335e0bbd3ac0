"""`audioeval compare` on real logged runs of two baselines on the toy tasks: its differences are those of the
sample files, its CIs those of an independent paired bootstrap, its McNemar p-values scipy's; runs that saw
other episodes are refused for pairing (and compared unpaired when asked), runs without samples are compared
from results.json; every output format parses; bad input is one line naming the file."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from tests.conftest import TOY, latest_run, run_cli

EPISODES = 100


def _run(out: Path, model: str, *extra: str) -> Path:
    args = ["--include_path", str(TOY), "--tasks", "toy", "--model", model, "--output_path", str(out)]
    args += ["--task_args", f"n_episodes={EPISODES}", "--bootstrap_iters", "500", *extra]
    code, _, err = run_cli(args)
    assert code == 0, err
    return latest_run(out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare")
    return {
        "chance": _run(root / "a", "chance", "--log_samples"),
        "majority": _run(root / "b", "demo-majority", "--log_samples"),
        "other_seed": _run(root / "c", "chance", "--log_samples", "--seed", "1"),
        "no_samples": _run(root / "d", "demo-majority"),
    }


def _compare(*args: str) -> tuple[int, str, str]:
    return run_cli(["compare", *args])


def _json(runs: dict[str, Path], *extra: str) -> dict:
    code, out, err = _compare(str(runs["chance"]), str(runs["majority"]), "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)


def _accuracy(run: Path, task: str) -> dict[tuple[int, int], float]:
    lines = (run / f"samples_{task}.jsonl").read_text().splitlines()
    return {(r["episode"], r["shots"]): r["scores"]["accuracy"] for r in map(json.loads, lines)}


def test_differences_are_those_of_the_sample_files(runs):
    result = _json(runs)
    assert result["paired"] and result["baseline"] == "chance"
    tasks = {}
    for row in result["rows"]:
        if row["kind"] != "task":
            continue
        base, other = _accuracy(runs["chance"], row["name"]), _accuracy(runs["majority"], row["name"])
        k = int(row["setting"].split("-")[0])
        pairs = [(base[key], other[key]) for key in base if key[1] == k and key in other]
        expected = np.mean([o for _, o in pairs]) - np.mean([b for b, _ in pairs])
        diff = row["differences"][1]
        assert diff["value"] == pytest.approx(expected)
        assert diff["pairs"] == len(pairs) == EPISODES and diff["failed_pairs"] == 0
        assert row["values"][0]["value"] == pytest.approx(np.mean([b for b, _ in pairs]))  # the run's own
        tasks[(row["name"], k)] = expected
    groups = [row for row in result["rows"] if row["kind"] == "group"]
    assert groups, "the toy group is compared"
    for row in groups:  # the group's own rule: the unweighted mean of its tasks' values
        k = int(row["setting"].split("-")[0])
        members = [value for (task, kk), value in tasks.items() if kk == k]
        assert row["differences"][1]["value"] == pytest.approx(np.mean(members))


def test_cis_agree_with_an_independent_paired_bootstrap_and_p_values_with_mcnemar(runs):
    result = _json(runs, "--bootstrap_iters", "10000")
    rng = np.random.default_rng(12345)  # not compare's seed: an independent bootstrap
    for row in (r for r in result["rows"] if r["kind"] == "task"):
        base, other = _accuracy(runs["chance"], row["name"]), _accuracy(runs["majority"], row["name"])
        k = int(row["setting"].split("-")[0])
        keys = sorted(key for key in base if key[1] == k and key in other)
        b = np.array([base[key] for key in keys])
        o = np.array([other[key] for key in keys])
        idx = rng.integers(0, len(keys), size=(10_000, len(keys)))
        low, high = np.percentile(o[idx].mean(axis=1) - b[idx].mean(axis=1), [2.5, 97.5])
        diff = row["differences"][1]
        assert diff["ci95"] == pytest.approx([low, high], abs=0.01)
        base_only, other_only = int(np.sum((b == 1) & (o == 0))), int(np.sum((b == 0) & (o == 1)))
        expected = (
            1.0 if base_only + other_only == 0 else binomtest(other_only, base_only + other_only).pvalue
        )
        assert diff["test"] == "mcnemar" and diff["p"] == pytest.approx(expected)
    found = [d for row in result["rows"] for d in row["differences"] if d and d["p"] is not None]
    ordered = sorted(found, key=lambda d: d["p"])
    assert all(d["p_holm"] >= d["p"] for d in found)  # Holm over the whole table
    assert ordered[0]["p_holm"] == pytest.approx(min(1.0, len(found) * ordered[0]["p"]))


def test_runs_with_another_seed_are_refused_for_pairing_and_compared_unpaired_on_request(runs):
    code, out, err = _compare(str(runs["chance"]), str(runs["other_seed"]))
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert (
        "different --seed (1 vs 0)" in err and "--unpaired" in err
    )  # the run named first, then the baseline
    code, out, err = _compare(str(runs["chance"]), str(runs["other_seed"]), "--unpaired", "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert not result["paired"] and any("unpaired (--unpaired)" in note for note in result["notes"])
    diff = result["rows"][0]["differences"][1]
    assert diff["test"] == "normal" and diff["pairs"] is None


def test_runs_without_samples_are_compared_from_results_json(runs):
    code, out, err = _compare(str(runs["chance"]), str(runs["no_samples"]))
    assert code == 0, err
    assert "pairing needs --log_samples" in out and "normal" in out


def test_the_latex_table_has_one_row_per_model(runs):
    code, out, err = _compare(str(runs["chance"]), str(runs["majority"]), "--format", "latex")
    assert code == 0, err
    body = out[out.index(r"\midrule") : out.index(r"\bottomrule")]
    rows = [line for line in body.splitlines() if line.endswith(r"\\")]
    assert (
        len(rows) == 2 and rows[0].startswith("chance (baseline) &") and rows[1].startswith("demo-majority &")
    )
    assert r"\toprule" in out and r"\textbf{" in out  # booktabs, the best per column in bold


def test_csv_markdown_and_terminal_output_parse(runs, tmp_path):
    base = [str(runs["chance"]), str(runs["majority"])]
    code, out, _ = _compare(*base, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and rows and {r["run"] for r in rows} == {"chance", "demo-majority"}
    assert all(r["difference"] for r in rows if r["baseline"] == "False")
    code, out, _ = _compare(*base, "--format", "markdown")
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert code == 0 and len({line.count("|") for line in table}) == 1 and len(table) == len(rows) + 2
    # one unit with the run's own tables: an accuracy in %, its difference in percentage points; csv: fractions
    first = next(r for r in rows if r["baseline"] == "False" and r["metric"] == "accuracy")
    shown = f"{100 * float(first['value']):.1f}%"
    line = next(line for line in table if f"| {first['run']} |" in line and shown in line)
    assert f"{100 * float(first['difference']):+.1f} [" in line and "] pp" in line
    assert "in %, their differences in percentage points" in out
    plot = tmp_path / "scaling.png"
    code, out, _ = _compare(*base, "--plot", str(plot), "--output", str(tmp_path / "table.txt"))
    assert code == 0 and out == "" and plot.read_bytes()[:4] == b"\x89PNG"
    assert "Δ vs baseline" in (tmp_path / "table.txt").read_text()


def test_the_baseline_is_chosen_by_flag(runs):
    code, out, err = _compare(str(runs["majority"]), "--baseline", str(runs["chance"]), "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["baseline"] == "chance" and result["labels"] == ["chance", "demo-majority"]


# --- bad input ----------------------------------------------------------------------------------------------
def test_a_folder_that_is_not_a_run_is_one_line(runs, tmp_path):
    code, _, err = _compare(str(tmp_path), str(runs["chance"]))
    assert code == 2 and "not a run folder (no results.json)" in err and "Traceback" not in err
    code, _, err = _compare(str(runs["chance"]))
    assert code == 2 and "at least two run folders" in err
    code, _, err = _compare(str(runs["chance"]), str(runs["majority"]), "--format", "pdf")
    assert code == 2 and "--format" in err and len(err.strip().splitlines()) == 1


def test_a_damaged_sample_line_is_named_with_file_and_line(runs, tmp_path):
    import shutil

    damaged = tmp_path / "run"
    shutil.copytree(runs["majority"], damaged)
    path = damaged / "samples_toy_tones.jsonl"
    lines = path.read_text().splitlines()
    lines[4] = lines[4][: len(lines[4]) // 2]
    path.write_text("\n".join(lines) + "\n")
    code, _, err = _compare(str(runs["chance"]), str(damaged))
    assert code == 2 and f"{path}:5: not a JSON line" in err and "Traceback" not in err


def test_runs_of_partly_different_tasks_compare_the_common_ones(runs, tmp_path):
    only = _run(tmp_path / "one", "demo-majority", "--log_samples", "--tasks", "toy_tones")
    code, out, err = _compare(str(runs["chance"]), str(only))
    assert code == 0, err
    assert re.search(r"left out \(not in every run\): .*toy_tones_chat.* of chance", out)
    code, _, err = _compare(str(only), str(_disjoint(tmp_path)))
    assert code == 2 and "no task in common" in err


def _disjoint(tmp_path: Path) -> Path:
    args = ["--include_path", str(TOY), "--tasks", "toy_bench_tones", "--model", "chance", "--limit", "2"]
    code, _, err = run_cli([*args, "--output_path", str(tmp_path / "other"), "--log_samples"])
    assert code == 0, err
    return latest_run(tmp_path / "other")


@pytest.mark.slow
def test_the_papers_table_iii_has_one_row_per_model_and_its_averages(tmp_path):
    runs = []
    for model in ("chance", "demo-majority"):
        args = ["--tasks", "audioicl_a3", "--model", model, "--limit", "6", "--num_fewshot", "0,1"]
        code, _, err = run_cli(
            [*args, "--log_samples", "--output_path", str(tmp_path / model), "--bootstrap_iters", "200"]
        )
        assert code == 0, err
        runs.append(str(latest_run(tmp_path / model)))
    code, out, err = _compare(*runs, "--table", "paper", "--format", "latex", "--bootstrap_iters", "500")
    assert code == 0, err
    tables = out.split(r"\begin{table}")[1:]
    assert len(tables) == 2 and "$k=0$" in tables[0] and "$k=1$" in tables[1]  # one table per k
    for table in tables:
        header = next(line for line in table.splitlines() if line.startswith("Model &"))
        assert header == r"Model & AL & ALH & MC & A3 \\"
        body = table[table.index(r"\midrule") : table.index(r"\bottomrule")]
        assert [line.split(" & ")[0] for line in body.splitlines()[1:]] == [
            "chance (baseline)",
            "demo-majority",
        ]
    code, out, err = _compare(*runs, "--table", "paper", "--format", "json", "--bootstrap_iters", "500")
    table = json.loads(out)["tables"][0]
    assert [c["label"] for c in table["columns"]] == ["AL", "ALH", "MC", "A3"]
    assert all(len(row["cells"]) == 4 for row in table["rows"])


def test_latex_escapes_each_special_character_once():
    from audioeval.results.compare.paper import latex_escape

    assert latex_escape(r"a\b_c {x} 50% #1 & ~^") == (
        r"a\textbackslash{}b\_c \{x\} 50\% \#1 \& \textasciitilde{}\^{}"
    )
