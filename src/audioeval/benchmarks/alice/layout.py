"""Reading a local copy of the Speech-IFEval / ALICE data, validating every row.

Expected layout under `data_dir` (the ALICE code base; each path can also be given on its own):

    data/eval_data/closed_ended_questions_corrected_filtered.jsonl   CEQ items (or closed_ended_questions.jsonl)
    data/eval_data/chain-of-thought_corrected_filtered.jsonl         CoT items (or chain-of-thought.jsonl)
    data/audios/<Task_folder>/<file>                                  test audio, relative to `audio_filepath`
    in-context-examples/ICL_examples.json                             the demonstration pool
    in-context-examples/audios/                                       pool audio, relative to `audio_path`
    in-context-examples/mmau-id2task.json, mmau-mini-id2task.json     MMAU id -> category, sub-category

Problems are collected and reported together, each with its file and line (JSONL) or JSON path (pool):
unreadable JSON, missing fields, unknown dataset or instruction id, kwargs that do not fit the id, missing
audio, audio that fails to decode, MMAU items absent from the sub-category maps, missing demo lists.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.audiofile import audio_problem, load_audio
from audioeval.benchmarks.alice.items import AudioRef, PoolEntry, PoolKey, TestItem
from audioeval.errors import DataError

DATASET_TASK = {
    "Automatic_speech_recognition": "asr",
    "Speech_emotion_recognition": "ser",
    "Gender_recognition": "gr",
    "MMAU": "mmau",
}
POOL_TASK = {"asr": "ASR", "ser": "SER", "gr": "GR", "mmau": "MMAU"}
RESPONSE_TASK = {"ceq": "closed_ended_questions", "cot": "chain-of-thought"}
EMOTIONS = ("neutral", "happy", "sad", "angry")

CANDIDATES = {
    "ceq_file": (
        "data/eval_data/closed_ended_questions_corrected_filtered.jsonl",
        "data/eval_data/closed_ended_questions.jsonl",
        "closed_ended_questions_corrected_filtered.jsonl",
        "closed_ended_questions.jsonl",
    ),
    "cot_file": (
        "data/eval_data/chain-of-thought_corrected_filtered.jsonl",
        "data/eval_data/chain-of-thought.jsonl",
        "chain-of-thought_corrected_filtered.jsonl",
        "chain-of-thought.jsonl",
    ),
    "test_audio_dir": ("data/audios", "audios"),
    "pool_file": ("in-context-examples/ICL_examples.json", "ICL_examples.json"),
    "pool_audio_dir": ("in-context-examples/audios", "icl_audios"),
}
MMAU_MAP_CANDIDATES = (
    "in-context-examples/mmau-id2task.json",
    "in-context-examples/mmau-mini-id2task.json",
    "mmau-id2task.json",
    "mmau-mini-id2task.json",
)
MAX_REPORTED = 25
_TEXTUAL = re.compile(
    r"\]\s*(?P<text>.*?)\s*\(Gender:\s*(?P<gender>[^,]+?)\s*,\s*Emotion:\s*(?P<emotion>[^)]+?)\s*\)"
)
_QUOTED = re.compile(r'"([^"]+)"')


@dataclass
class LayoutPaths:
    ceq_file: Path
    cot_file: Path
    test_audio_dir: Path
    pool_file: Path
    pool_audio_dir: Path
    mmau_maps: list[Path]


def resolve_paths(data_dir: str | Path | None, overrides: dict[str, Any]) -> LayoutPaths:
    """Where each part of the layout is; an explicit path wins over the usual places under data_dir."""
    root = Path(data_dir).expanduser() if data_dir else None
    if root is not None and not root.is_dir():
        raise DataError(f"data_dir {root}: not a folder. Point it at your Speech-IFEval / ALICE copy.")
    found: dict[str, Path] = {}
    for name, options in CANDIDATES.items():
        given = overrides.get(name)
        if given:
            path = Path(given).expanduser()
            if root is not None and not path.is_absolute():
                path = root / path
            found[name] = path
            continue
        tried = [root / o for o in options] if root is not None else []
        hit = next((p for p in tried if p.exists()), None)
        found[name] = hit if hit is not None else (tried[0] if tried else Path(options[0]))
    maps_given = overrides.get("mmau_map_files")
    if maps_given:
        names = [m.strip() for m in str(maps_given).split(",") if m.strip()]
        maps = [(root / m if root is not None and not Path(m).is_absolute() else Path(m)) for m in names]
    else:
        maps = [root / m for m in MMAU_MAP_CANDIDATES if root is not None and (root / m).is_file()]
    return LayoutPaths(mmau_maps=maps, **found)


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")

    def raise_if_any(self, what: str) -> None:
        if not self.items:
            return
        shown = self.items[:MAX_REPORTED]
        more = len(self.items) - len(shown)
        tail = f"\n  ... and {more} more" if more > 0 else ""
        raise DataError(
            f"{what}: {len(self.items)} problem(s); fix these rows (or remove them) and run again:\n  "
            + "\n  ".join(shown)
            + tail
        )


def derive_label(textual_audio: Any, task: str) -> str | None:
    """Upstream's label for CoT rows that lack one: from `[..] transcript(Gender: X, Emotion: y)`."""
    if not isinstance(textual_audio, str):
        return None
    match = _TEXTUAL.search(textual_audio)
    if not match:
        return None
    if task == "asr":
        return match.group("text") or None
    if task == "ser":
        return match.group("emotion").strip().lower()
    if task == "gr":
        return match.group("gender").strip()
    return None


def split_instruction(instruction: str) -> tuple[str, str]:
    """(task question, constraint text): the first line, and everything after it (stage 2 keeps line 1)."""
    head, _, rest = instruction.partition("\n")
    return head.strip(), rest.strip()


def _choices(task: str, task_text: str, label: str) -> list[str]:
    if task == "ser":
        options = list(EMOTIONS)
    elif task in ("gr", "mmau"):
        options = _QUOTED.findall(task_text)
    else:
        options = []
    if label not in options:
        options.append(label)
    return options


class SpeechIFEvalData:
    """The evaluation items and demonstration pool of a local Speech-IFEval / ALICE copy."""

    def __init__(self, paths: LayoutPaths, check_audio: bool = True) -> None:
        self.paths = paths
        self.check_audio = check_audio
        self._items: dict[str, list[TestItem]] = {}
        self._mmau_map: dict[str, dict[str, Any]] | None = None
        self._pool_json: Any = None
        self._pool: dict[PoolKey, list[PoolEntry]] = {}

    # --- files ---------------------------------------------------------------------------------------------
    def _mmau_lookup(self) -> dict[str, dict[str, Any]]:
        if self._mmau_map is None:
            merged: dict[str, dict[str, Any]] = {}
            for path in self.paths.mmau_maps:
                data = _read_json(path, "MMAU id -> sub-category map")
                if not isinstance(data, dict):
                    raise DataError(f"{path}: expected a JSON object mapping MMAU ids to their categories.")
                merged.update({str(k): v for k, v in data.items() if isinstance(v, dict)})
            self._mmau_map = merged
        return self._mmau_map

    def _pool_data(self) -> Any:
        if self._pool_json is None:
            if not self.paths.pool_file.is_file():
                raise DataError(
                    f"demonstration pool {self.paths.pool_file} not found. ALICE keeps it at "
                    "in-context-examples/ICL_examples.json; pass pool_file=... if yours is elsewhere."
                )
            self._pool_json = _read_json(self.paths.pool_file, "demonstration pool")
            if not isinstance(self._pool_json, dict):
                raise DataError(
                    f"{self.paths.pool_file}: expected a JSON object keyed by task (ASR, SER, GR, MMAU)."
                )
        return self._pool_json

    # --- evaluation items -----------------------------------------------------------------------------------
    def items(self, category: str) -> list[TestItem]:
        """Every item of the category's file (all tasks), validated."""
        if category not in self._items:
            self._items[category] = self._read_items(category)
        return self._items[category]

    def _read_items(self, category: str) -> list[TestItem]:
        path = self.paths.ceq_file if category == "ceq" else self.paths.cot_file
        if not path.is_file():
            raise DataError(
                f"{category.upper()} file {path} not found. Give data_dir=<your ALICE / Speech-IFEval copy> or "
                f"{'ceq_file' if category == 'ceq' else 'cot_file'}=<path to the JSONL file>."
            )
        if not self.paths.test_audio_dir.is_dir():
            raise DataError(
                f"test audio folder {self.paths.test_audio_dir} not found (audio_filepath values are relative to "
                "it). Download Speech-IFEval's audios.tar into data/audios, or pass test_audio_dir=..."
            )
        problems = _Problems()
        items: list[TestItem] = []
        ranks: dict[tuple[str, str], int] = {}
        text = path.read_text(encoding="utf-8", errors="replace")
        for line_no, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                problems.add(where, f"not valid JSON ({err.msg} at column {err.colno})")
                continue
            if not isinstance(row, dict):
                problems.add(where, "expected a JSON object")
                continue
            item = self._parse_row(row, category, where, line_no, problems)
            if item is None:
                continue
            rank_key = (item.task, item.instruction_id)
            item.rank = ranks.get(rank_key, 0)
            ranks[rank_key] = item.rank + 1
            items.append(item)
        problems.raise_if_any(str(path))
        _attach_asr_choices(items)
        return items

    def _parse_row(
        self, row: dict[str, Any], category: str, where: str, line_no: int, problems: _Problems
    ) -> TestItem | None:
        before = len(problems.items)
        dataset = row.get("dataset")
        task = DATASET_TASK.get(dataset) if isinstance(dataset, str) else None
        if task is None:
            problems.add(where, f"field 'dataset' is {dataset!r}; expected one of {sorted(DATASET_TASK)}")
        instruction = row.get("instruction")
        if not isinstance(instruction, str) or not instruction.strip():
            problems.add(where, "field 'instruction' must be a non-empty string")
            instruction = ""
        elif "\n" not in instruction.strip():
            problems.add(
                where, "'instruction' must hold the task question and the constraint on separate lines"
            )
        audio_rel = row.get("audio_filepath")
        audio_path = self._row_audio(audio_rel, where, problems)
        instruction_id, kwargs = (
            self._row_constraint(row, where, problems) if category == "ceq" else (C.CHAIN_OF_THOUGHT, {})
        )
        label = row.get("label")
        if label is None and category == "cot" and task is not None:
            label = derive_label(row.get("textual_audio"), task)
        if not isinstance(label, str) or not label.strip():
            problems.add(
                where, "field 'label' is missing or empty (and cannot be derived from 'textual_audio')"
            )
        mmau_category = sub_category = None
        if task == "mmau" and audio_rel:
            mmau_category, sub_category = self._row_mmau(Path(str(audio_rel)).stem, where, problems)
        if len(problems.items) > before or task is None or audio_path is None:
            return None
        assert isinstance(instruction, str) and isinstance(
            label, str
        )  # checked above, else a problem was added
        task_text, constraint_text = split_instruction(instruction)
        label = label.strip()
        source = {
            "corpus": "speech-ifeval",
            "file": Path(where.rsplit(":", 1)[0]).name,  # the file's name: no local path reaches a Hub row
            "line": line_no,
            "audio_filepath": audio_rel,
            "id": row.get("id"),
            "textual_audio": row.get("textual_audio"),
        }
        sampling_path = audio_path
        return TestItem(
            uid=f"{category}-{row['id']}" if "id" in row else f"{category}-line{line_no}",
            task=task,
            category=category,
            instruction_id=instruction_id,
            kwargs=kwargs,
            task_text=task_text,
            constraint_text=constraint_text,
            label=label,
            choices=_choices(task, task_text, label),
            audio=AudioRef(str(audio_path), partial(load_audio, sampling_path)),
            rank=0,
            mmau_category=mmau_category,
            sub_category=sub_category,
            source=source,
        )

    def _row_audio(self, audio_rel: Any, where: str, problems: _Problems) -> Path | None:
        """The row's audio file when it names one that exists (and decodes, with check_audio)."""
        if not isinstance(audio_rel, str) or not audio_rel.strip():
            problems.add(where, "field 'audio_filepath' must be a non-empty string")
            return None
        audio_path = self.paths.test_audio_dir / audio_rel
        if not audio_path.is_file():
            problems.add(where, f"audio file {audio_path} not found")
            return None
        if self.check_audio:
            issue = audio_problem(audio_path)
            if issue:
                problems.add(where, issue)
        return audio_path

    @staticmethod
    def _row_constraint(row: dict[str, Any], where: str, problems: _Problems) -> tuple[str, dict[str, Any]]:
        """A CEQ row's constraint id and its cleaned kwargs (chain-of-thought's when they are unusable)."""
        ids = row.get("instruction_id_list")
        if not isinstance(ids, list) or len(ids) != 1 or not isinstance(ids[0], str):
            problems.add(where, f"'instruction_id_list' must be a list with exactly one id, got {ids!r}")
            return C.CHAIN_OF_THOUGHT, {}
        if ids[0] not in C.CEQ_IDS:
            hint = (
                " (a creative-writing constraint; ALICE uses closed-ended ones)" if ids[0] in C.CW_IDS else ""
            )
            problems.add(
                where, f"unknown instruction id {ids[0]!r}{hint}; expected one of {', '.join(C.CEQ_IDS)}"
            )
            return C.CHAIN_OF_THOUGHT, {}
        raw_kwargs = row.get("kwargs", [{}])
        if isinstance(raw_kwargs, list) and len(raw_kwargs) == 1:
            raw_kwargs = raw_kwargs[0]
        problem = C.kwargs_problem(ids[0], raw_kwargs)
        if problem:
            problems.add(where, f"kwargs {row.get('kwargs')!r} do not fit the id: {problem}")
            return ids[0], {}
        return ids[0], C.clean_kwargs(raw_kwargs)

    def _row_mmau(self, uid: str, where: str, problems: _Problems) -> tuple[Any, Any]:
        """An MMAU item's category and sub-category, from the id -> sub-category maps."""
        entry = self._mmau_lookup().get(uid)
        if entry is None:
            maps = ", ".join(str(p) for p in self.paths.mmau_maps) or "(no map files found)"
            problems.add(
                where,
                f"MMAU item {uid} is in none of the id -> sub-category maps ({maps}); demonstrations are "
                "chosen by sub-category",
            )
            return None, None
        mmau_category = entry.get("category")
        sub_category = entry.get("sub-category") or entry.get("sub_category")
        if not mmau_category or not sub_category:
            problems.add(where, f"MMAU map entry for {uid} lacks 'category' or 'sub-category'")
        return mmau_category, sub_category

    # --- demonstration pool -------------------------------------------------------------------------------------
    def pool_list(self, key: PoolKey, needed_by: str = "") -> list[PoolEntry]:
        if key not in self._pool:
            self._pool[key] = self._read_pool_list(key, needed_by)
        return self._pool[key]

    def _pool_path(self, key: PoolKey) -> list[str]:
        task, category, instruction_id, mmau_category, sub_category = key
        top, response_task = POOL_TASK[task], RESPONSE_TASK[category]
        if task != "mmau":
            return [top, response_task] + ([instruction_id] if category == "ceq" else [])
        return [top, response_task, "speech", str(mmau_category), str(sub_category), instruction_id]

    def _read_pool_list(self, key: PoolKey, needed_by: str) -> list[PoolEntry]:
        data = self._pool_data()
        path = self._pool_path(key)
        node: Any = data
        for depth, part in enumerate(path):
            if not isinstance(node, dict) or part not in node:
                at = "".join(f"[{p!r}]" for p in path[: depth + 1])
                known = sorted(node)[:12] if isinstance(node, dict) else []
                who = f" (needed by {needed_by})" if needed_by else ""
                raise DataError(
                    f"{self.paths.pool_file}: no demonstration list at {at}{who}; keys there: {known}. "
                    "Each task, constraint (and MMAU sub-category) needs its own list."
                )
            node = node[part]
        at = "".join(f"[{p!r}]" for p in path)
        if not isinstance(node, list) or not node:
            raise DataError(f"{self.paths.pool_file}: {at} must be a non-empty list of demonstrations.")
        problems = _Problems()
        entries = []
        for i, raw in enumerate(node):
            where = f"{self.paths.pool_file}: {at}[{i}]"
            entry = self._parse_pool_entry(raw, key, where, problems)
            if entry is not None:
                entry.pool_id = f"{'/'.join(path)}/{i}"
                entries.append(entry)
        problems.raise_if_any(f"{self.paths.pool_file}")
        return entries

    def _parse_pool_entry(self, raw: Any, key: PoolKey, where: str, problems: _Problems) -> PoolEntry | None:
        if not isinstance(raw, dict):
            problems.add(where, "expected an object with audio_path, instruction and ans")
            return None
        before = len(problems.items)
        audio_rel, instruction, answer = raw.get("audio_path"), raw.get("instruction"), raw.get("ans")
        audio_path = None
        if not isinstance(audio_rel, str) or not audio_rel.strip():
            problems.add(where, "'audio_path' must be a non-empty string")
        else:
            audio_path = self.paths.pool_audio_dir / audio_rel
            if not audio_path.is_file():
                problems.add(where, f"audio file {audio_path} not found")
            elif self.check_audio:
                issue = audio_problem(audio_path)
                if issue:
                    problems.add(where, issue)
        if not isinstance(instruction, str) or not instruction.strip():
            problems.add(where, "'instruction' must be a non-empty string")
        if isinstance(answer, dict) and key[2] == C.JSON_FORMAT:
            answer = json.dumps(answer, ensure_ascii=False)
        if not isinstance(answer, str) or not answer.strip():
            kind = (
                "a string (or an object for json_format)" if key[2] == C.JSON_FORMAT else "a non-empty string"
            )
            problems.add(where, f"'ans' must be {kind}, got {type(raw.get('ans')).__name__}")
        if len(problems.items) > before or audio_path is None:
            return None
        assert isinstance(instruction, str) and isinstance(
            answer, str
        )  # checked above, else a problem was added
        task_text, constraint_text = split_instruction(instruction)
        return PoolEntry(
            pool_id="",
            key=key,
            task_text=task_text,
            constraint_text=constraint_text,
            answer=answer,
            answer_plain=None,
            audio=AudioRef(str(audio_path), partial(load_audio, audio_path)),
            source={"corpus": "speech-ifeval", "audio_path": audio_rel},
        )


def _attach_asr_choices(items: list[TestItem]) -> None:
    """ASR has no options; the label space for `chance` is the item's transcript and three others."""
    asr = [i for i in items if i.task == "asr"]
    for n, item in enumerate(asr):
        others = [asr[(n + d) % len(asr)].label for d in (1, 2, 3) if len(asr) > d]
        item.choices = [item.label] + [o for o in others if o != item.label]


def _read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise DataError(f"{what} {path} not found.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: the {what} is not valid JSON ({err.msg}).") from err
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: the {what} is not UTF-8 text ({err}).") from err
