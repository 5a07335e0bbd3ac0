"""The public Python API: `audioeval.evaluate` with the command line's options as keyword arguments, a model
written as a Python object, the typed result, what `audioeval` exports, and the import paths of release 0.1."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import audioeval
from audioeval import AudioEvalError, Model, Response, UsageError
from tests.conftest import TOY, latest_run, load_results, run_cli

TOY_RUN = dict(tasks=["toy_tones"], include_path=str(TOY), limit=4, no_progress=True, bootstrap_iters=200)


class PitchModel(Model):
    """A model written as a Python object: answers by the query tone's dominant frequency."""

    name = "pitch"

    def generate(self, requests):
        answers = []
        for request in requests:
            clip = request.shown.query.clips[-1].audio
            spectrum = np.abs(np.fft.rfft(clip.samples))
            freq = float(np.argmax(spectrum)) * clip.sampling_rate / len(clip.samples)
            answers.append(Response(text="high" if freq > 1000 else "low"))
        return answers


class Constant(Model):
    """A model of one's own with arguments of its own, written as docs/python_api.md shows (no batch_size)."""

    def __init__(self, answer: str = "low") -> None:
        super().__init__()
        self.answer = answer

    def generate(self, requests):
        return [Response(text=self.answer) for _ in requests]


class NotAModel:
    def generate(self, requests):
        return []


class NoGenerate(Model):
    pass


class TooManyAnswers(Model):
    def generate(self, requests):
        return [Response(text="low")] * (len(requests) + 1)


class NotResponses(Model):
    def generate(self, requests):
        return ["low" for _ in requests]


def test_evaluate_a_model_object_gives_the_cli_results_and_to_dict_is_results_json(tmp_path):
    result = audioeval.evaluate(model=PitchModel(), output_path=tmp_path / "api", log_samples=True, **TOY_RUN)
    assert result.results["toy_tones"]["1-shot"]["accuracy"].value == 1.0
    assert result.to_dict() == load_results(result.run_dir)
    assert [len(v) for v in result.samples.values()] == [12]  # 4 episodes x 3 k
    code, _, err = run_cli(
        ["--tasks", "toy_tones", "--include_path", str(TOY), "--limit", "4", "--bootstrap_iters", "200"]
        + ["--model", "tests.core.test_python_api:PitchModel", "--output_path", str(tmp_path / "cli")]
        + ["--no_progress", "--no_cache"]
    )
    assert code == 0, err
    assert load_results(latest_run(tmp_path / "cli"))["results"] == result.to_dict()["results"]


def test_samples_without_an_output_path_stay_in_the_result_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = audioeval.evaluate(model="chance", log_samples=True, **TOY_RUN)
    assert result.run_dir is None and list(tmp_path.iterdir()) == []
    rows = result.samples["toy_tones"]
    assert [(r.episode, r.shots) for r in rows] == sorted((e, k) for e in range(4) for k in (0, 1, 3))


def _open_descriptors() -> set[tuple[str, str]]:
    """Each open descriptor with what it points at."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add((fd, os.readlink(f"/proc/self/fd/{fd}")))
        except OSError:  # closed while listing (the listing's own descriptor)
            pass
    return found


def test_repeated_calls_give_identical_results_and_leave_nothing_behind():
    before = set(threading.enumerate())
    first = audioeval.evaluate(model=PitchModel(), **TOY_RUN)  # warms up what stays for the process
    assert {t.name for t in set(threading.enumerate()) - before} == set()  # no thread even after the first
    threads, descriptors = set(threading.enumerate()), _open_descriptors()
    for _ in range(5):
        again = audioeval.evaluate(model=PitchModel(), **TOY_RUN)
        assert again.to_dict()["results"] == first.to_dict()["results"]
    assert set(threading.enumerate()) - threads == set()  # (threads of earlier tests may end meanwhile)
    assert _open_descriptors() - descriptors == set()
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    # the harness's own helpers stay for the process: the eSpeak NG zygote, the synthesis workers' server (and
    # multiprocessing's resource tracker); they are reused by the next call, not started again
    helpers = ("espeak_zygote", "multiprocessing.forkserver", "multiprocessing.resource_tracker")
    assert children.read_text().split() == [] or all(
        any(h in Path(f"/proc/{pid}/cmdline").read_text() for h in helpers)
        for pid in children.read_text().split()
    )


def test_a_model_objects_answers_are_never_cached_but_its_episodes_are(tmp_path):
    """Weights change between calls: a model object's answers are not read back from the response cache; the
    episodes, which do not depend on the model, are kept for the next call."""
    run = dict(
        tasks=["audioicl_audio_count"], limit=2, num_fewshot=[0, 1], cache_dir=tmp_path, no_progress=True
    )
    first = audioeval.evaluate(model=PitchModel(), bootstrap_iters=0, **run)
    again = audioeval.evaluate(model=PitchModel(), bootstrap_iters=0, **run)
    assert again.record.timing["cached_responses"] == 0
    assert (
        first.record.timing["episodes_synthesized"] > 0 and again.record.timing["episodes_synthesized"] == 0
    )


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (TooManyAnswers(batch_size=2), "returned 3 responses for 2 requests"),
        (NotResponses(), "returned a str ('low') among the responses"),
    ],
)
def test_a_model_breaking_the_contract_is_one_line_naming_it(model, expected):
    with pytest.raises(AudioEvalError) as caught:
        audioeval.evaluate(model=model, **TOY_RUN)
    message = str(caught.value)
    assert (
        "broke the model contract: Model.generate(requests) returns a list with one audioeval.Response"
        in message
    )
    assert expected in message and "\n" not in message


def test_a_model_class_of_ones_own_takes_its_own_arguments_on_the_command_line(tmp_path):
    cli = ["--tasks", "toy_tones", "--include_path", str(TOY), "--limit", "4", "--no_progress"]
    cli += ["--cache_dir", str(tmp_path / "cache"), "--bootstrap_iters", "0", "--batch_size", "2"]
    scores = {}
    for answer in ("low", "high"):
        out = tmp_path / answer
        code, _, err = run_cli(
            [*cli, "--model", "tests.core.test_python_api:Constant", "--model_args", f"answer={answer}"]
            + ["--output_path", str(out)]
        )
        assert code == 0, err
        results = load_results(latest_run(out))
        assert results["model"]["batch_size"] == 2
        scores[answer] = results["results"]["toy_tones"]["0-shot"]["accuracy"]
    # the arguments are part of the model's identity: the second run's answers did not come from the first's
    assert scores["low"] + scores["high"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("tests.core.test_python_api:NotAModel", "'NotAModel' is not a subclass of audioeval.Model"),
        ("tests.core.test_python_api:NoGenerate", "NoGenerate does not implement generate (Model.generate"),
        ("no_such_module_here:Thing", "no module 'no_such_module_here' (is its folder on PYTHONPATH?"),
    ],
)
def test_a_backend_class_that_breaks_the_contract_is_one_line_on_the_command_line(target, expected):
    code, _, err = run_cli(["--tasks", "toy_tones", "--include_path", str(TOY), "--model", target])
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err


def test_a_model_object_takes_the_runs_batch_size_and_records_it():
    model = PitchModel()
    seen = []
    original = model.generate
    model.generate = lambda requests: seen.append(len(requests)) or original(requests)
    result = audioeval.evaluate(model=model, batch_size=4, **TOY_RUN)
    assert max(seen) == 4 and result.to_dict()["model"]["batch_size"] == 4


def test_what_is_not_a_model_is_refused_naming_the_contract():
    class Lookalike:
        def generate(self, requests):
            return []

    with pytest.raises(UsageError, match="must be an instance of a subclass of audioeval.Model"):
        audioeval.evaluate(model=Lookalike(), **TOY_RUN)
    with pytest.raises(UsageError, match=r"got the class PitchModel; pass a model object, an instance of it"):
        audioeval.evaluate(model=PitchModel, **TOY_RUN)
    with pytest.raises(UsageError, match="a model given as an object is built already"):
        audioeval.evaluate(model=PitchModel(), model_args={"x": 1}, **TOY_RUN)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(num_fewshot="1,x"), "--num_fewshot: expected a comma list of integers"),
        (dict(num_fewshot=[-1]), "--num_fewshot: expected non-negative integers"),
        (dict(seed=-1), "--seed must be an integer from 0"),
        (dict(batch_size=0), "--batch_size must be at least 1"),
        (dict(model_args=7), "--model_args: expected a dict or a 'key=value,...' string"),
        (dict(augment_target="demos"), "--augment_target given without --augment"),
        (dict(asr_args={"model": "x"}), "--asr_args given without --asr"),
        (dict(judge_args="model=x"), "--judge_args given without --judge"),
    ],
)
def test_bad_options_are_one_line_naming_the_flag(options, message):
    with pytest.raises(UsageError, match=message):
        audioeval.evaluate(**{**TOY_RUN, "model": "chance", **options})


def test_the_keyword_arguments_are_the_command_lines_flags():
    from audioeval.cli import CLI_ONLY_FLAGS, run_parser

    flags = {a.dest for a in run_parser()._actions if a.dest != "help"} - set(CLI_ONLY_FLAGS)
    assert set(inspect.signature(audioeval.evaluate).parameters) == flags


def test_evaluates_defaults_are_the_harness_defaults():
    from audioeval.api.evaluate import DEFAULT_RESAMPLES
    from audioeval.results import stats

    assert DEFAULT_RESAMPLES == stats.DEFAULT_RESAMPLES
    assert inspect.signature(audioeval.evaluate).parameters["bootstrap_iters"].default == DEFAULT_RESAMPLES


def test_audioeval_exports_its_public_names():
    from audioeval.api.exports import PUBLIC

    assert set(audioeval.__all__) == {"__version__", *PUBLIC}
    for name in PUBLIC:
        assert getattr(audioeval, name) is not None
    assert audioeval.Model is audioeval.models.base.Model


@pytest.mark.slow
def test_import_audioeval_stays_light():
    code = (
        "import sys, audioeval; print(sorted(m for m in ('torch', 'datasets', 'numpy') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_the_toy_task_folder_imports_only_from_audioeval():
    for path in TOY.rglob("*.py"):
        for line in path.read_text().splitlines():
            if line.startswith(("from audioeval", "import audioeval")):
                assert line.startswith("from audioeval import "), f"{path.name}: {line}"


def test_release_0_1_import_paths_work_for_one_more_release_with_a_warning():
    from audioeval.data.builders import EpisodeBuilder
    from audioeval.run.conductor import run_evaluation
    from audioeval.run.settings import RunConfig

    for old in [m for m in list(sys.modules) if m in ("audioeval.builders", "audioeval.reports")]:
        del sys.modules[old]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import audioeval.builders as old_builders
        from audioeval.reports import register

        from audioeval.run import RunConfig as OldRunConfig
        from audioeval.run import run_evaluation as old_run_evaluation
    assert old_builders.EpisodeBuilder is EpisodeBuilder and register is audioeval.register_report
    assert OldRunConfig is RunConfig and old_run_evaluation is run_evaluation
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert any(m.startswith("audioeval.builders is deprecated") for m in messages)
    assert any(m.startswith("audioeval.run.RunConfig is deprecated") for m in messages)
    assert all(w.filename == __file__ for w in caught)  # the warning points at the importing line


def test_every_moved_module_of_release_0_1_still_imports():
    from audioeval.deprecation import MOVED_MODULES, MOVED_NAMES

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for old, new in MOVED_MODULES.items():
            assert __import__(old, fromlist=["_"]) is sys.modules[new]
        for package, names in MOVED_NAMES.items():
            module = __import__(package, fromlist=["_"])
            for name in names:
                assert getattr(module, name) is not None


def test_the_result_of_a_run_reads_like_its_table(tmp_path):
    result = audioeval.evaluate(model="chance", output_path=tmp_path, **TOY_RUN)
    assert str(result) == result.compact_table and "toy_tones" in result.table
    written = json.loads((result.run_dir / "results.json").read_text())
    assert written == result.to_dict()


def test_tasks_are_read_once_per_process_until_one_of_their_files_changes(tmp_path):
    import shutil

    from audioeval.config.registry import TaskRegistry

    folder = tmp_path / "toy"
    shutil.copytree(TOY, folder)
    first = TaskRegistry.discover([folder])
    assert TaskRegistry.discover([folder]) is first
    yaml_file = folder / "toy_tones.yaml"
    yaml_file.write_text(yaml_file.read_text().replace("tone height", "tone pitch"))
    changed = TaskRegistry.discover([folder])
    assert changed is not first and changed.tasks["toy_tones"].description.startswith("tone pitch")


def test_the_harness_cpu_per_sample_is_measured_for_the_run():
    timing = audioeval.evaluate(model="chance", **TOY_RUN).record.timing
    assert timing["harness_overhead_ms_per_sample"] > 0  # CPU outside generate() and synthesis, per sample
    assert timing["tasks"]["toy_tones"]["harness_overhead_ms_per_sample"] is None  # tasks overlap: run only
