"""The data behind the pages, addressed by path, shared by the server (answers /api/<path>) and the static
export (writes each path as a data file):

    runs                              the runs on show
    run/<i>/overview                  the overview page of run i (HTML)
    run/<i>/samples                   sample summaries, facets and score names for the filters
    run/<i>/sample/<task>/<ep>/<k>    one sample in full, its clips checked against the logged sha256
    compare                           per task and group, every run's metrics at each k (shot scaling)

Where audio and report files are fetched from differs (the server rebuilds audio per request, the export
writes files), so URLs come from a `Links` object.
"""

from __future__ import annotations

import re
from typing import Any, Protocol
from urllib.parse import quote

from audioeval.results.sample_record import LoggedAudio, LoggedText, SampleRecord
from audioeval.viewer import overview
from audioeval.viewer.differences import paired_differences
from audioeval.viewer.regenerate import SHA_DIFFERS, EpisodeClips, RebuiltClip, RunAudio
from audioeval.viewer.run_folder import RunFolder, SampleKey
from audioeval.viewer.samples import facets, spoken_answer, verdicts

# Per-sample scores that count failures, or are parts of a ratio, rather than measure the answer: never the
# default outcome score or plotted metric.
_FAILURE_SCORE = re.compile(r"(_rate\b|fail|_missing$|_errors$|_words$)")
_SAMPLE_PATH = re.compile(r"^run/(\d+)/sample/([A-Za-z0-9_.\-]+)/(\d+)/(\d+)$")


class Links(Protocol):
    def audio(self, run: int, key: SampleKey, sha256: str) -> str: ...

    def file(self, run: int, name: str) -> str: ...

    def spoken(self, run: int, sha256: str) -> str: ...


class ServerLinks:
    def audio(self, run: int, key: SampleKey, sha256: str) -> str:
        return f"audio/{run}/{quote(key.task)}/{key.episode}/{sha256}.wav"

    def spoken(self, run: int, sha256: str) -> str:
        return f"spoken/{run}/{sha256}.wav"

    def file(self, run: int, name: str) -> str:
        return f"files/{run}/{quote(name)}"


def is_failure_score(name: str) -> bool:
    return bool(_FAILURE_SCORE.search(name))


class Site:
    def __init__(self, runs: list[RunFolder], links: Links, trust_builder_files: bool = False) -> None:
        self.runs = runs
        self.links = links
        self.audio = [RunAudio(run.configs, trust_builder_files) for run in runs]
        self._differences: dict[str, Any] | None = None  # made on the Compare page's first visit

    def get(self, path: str) -> Any | None:
        """The payload at `path`, or None when there is none."""
        path = path.strip("/")
        if path == "runs":
            return self.run_list()
        if path == "compare":
            return self.compare()
        match = re.fullmatch(r"run/(\d+)/(overview|samples)", path)
        if match and int(match[1]) < len(self.runs):
            i = int(match[1])
            return {"html": self.overview(i)} if match[2] == "overview" else self.samples(i)
        match = _SAMPLE_PATH.fullmatch(path)
        if match and int(match[1]) < len(self.runs):
            return self.sample(int(match[1]), SampleKey(match[2], int(match[3]), int(match[4])))
        return None

    # --- payloads ---------------------------------------------------------------------------------------
    def run_list(self) -> list[dict[str, Any]]:
        return [
            {
                "id": i,
                "label": run.label,
                "model": run.model,
                "folder": run.path.name,
                "path": str(run.path),
                "tasks": run.tasks,
                "has_samples": run.has_samples,
                "samples": len(run.summaries),
                "incomplete": run.incomplete is not None,
            }
            for i, run in enumerate(self.runs)
        ]

    def overview(self, i: int) -> str:
        return overview.render(self.runs[i], i, lambda name: self.links.file(i, name))

    def samples(self, i: int) -> dict[str, Any]:
        run = self.runs[i]
        found = facets(run.summaries)
        rows = [{**s, "facts": {k: v for k, v in s["facts"].items() if k in found}} for s in run.summaries]
        note = None
        if not run.has_samples:
            note = (
                "This run was made without --log_samples, so it has no per-sample records; the overview shows "
                "its aggregate results. Run the same command again with --log_samples (answers come from the "
                "response cache) to browse every sample."
            )
        return {
            "run": i,
            "has_samples": run.has_samples,
            "note": note,
            "tasks": [t for t in run.tasks if any(s["task"] == t for s in run.summaries)],
            "shots": sorted({s["k"] for s in run.summaries}),
            "facets": found,
            "scores": {t: self.outcome_scores(run, t) for t in run.tasks},
            "higher_is_better": {
                t: (config.config.get("higher_is_better") if (config := run.task_config(t)) else None) or {}
                for t in run.tasks
            },
            "samples": rows,
        }

    @staticmethod
    def outcome_scores(run: RunFolder, task: str) -> list[str]:
        """The task's per-sample scores, the one that best says right/wrong first: in the order the results
        list their metrics, failure counters last."""
        logged: list[str] = []
        for s in run.summaries:
            if s["task"] == task:
                logged.extend(n for n in s["scores"] if n not in logged)
        reported = overview.metric_names(run.record.sections.results.get(task) or {}) if run.record else []
        ordered = [n for n in reported if n in logged] + [n for n in logged if n not in reported]
        return sorted(ordered, key=is_failure_score)  # stable: keeps the order within each kind

    def sample(self, i: int, key: SampleKey) -> dict[str, Any] | None:
        run = self.runs[i]
        record = run.sample(key)
        if record is None:
            return None
        logged_audio = any(p["type"] == "audio" for m in record.messages or [] for p in m["content"])
        rebuilt = self.audio[i].episode(key.task, key.episode) if logged_audio else None
        placed = rebuilt.placed(key.k) if rebuilt is not None else {}
        messages: list[dict[str, Any]] = [
            {"role": m["role"], "parts": [self._part(i, key, p, rebuilt, placed) for p in m["content"]]}
            for m in record.messages or []
        ]
        clips = [p for m in messages for p in m["parts"] if p["type"] == "audio"]
        metadata = record.metadata
        return {
            "run": i,
            "id": str(key),
            "task": key.task,
            "episode": key.episode,
            "k": key.k,
            "episode_id": record.episode_id,
            "messages": messages,
            "audio": {
                "clips": len(clips),
                "playable": sum(p["status"] == "ok" for p in clips),
                "problem": rebuilt.problem if rebuilt is not None else None,
            },
            "response": record.response,
            "spoken": self._spoken(i, run, record),
            "error": record.error,
            "failure": None if record.failure is None else record.to_json()["failure"],
            "prediction": record.prediction,
            "target": record.target,
            "parse_failure": record.parse_failure,
            "scores": record.scores,
            "verdicts": verdicts(record),
            "latency_s": record.latency_s,
            "cached": record.cached,
            "audio_seconds": record.audio_seconds,
            "gen_kwargs": record.gen_kwargs,
            "request_key": record.request_key,
            "response_info": record.response_info,
            "metadata": metadata if metadata is not None else (rebuilt.metadata if rebuilt else None),
            "metadata_source": "sample log" if metadata is not None else "rebuilt episode",
            "other": record.extra,
        }

    def _spoken(self, i: int, run: RunFolder, record: SampleRecord) -> dict[str, Any] | None:
        sha = record.spoken["audio"]["sha256"] if record.spoken else ""
        url = self.links.spoken(i, sha) if sha and run.spoken_file(sha) is not None else None
        return spoken_answer(record, url)

    def _part(
        self,
        i: int,
        key: SampleKey,
        part: LoggedText | LoggedAudio,
        rebuilt: EpisodeClips | None,
        placed: dict[str, list[RebuiltClip]],
    ) -> dict[str, Any]:
        if part["type"] == "text":
            return {"type": "text", "text": part["text"]}
        sha = part["sha256"]
        out: dict[str, Any] = {
            "type": "audio",
            "sha256": sha,
            "seconds": part["seconds"],
            "sampling_rate": part["sampling_rate"],
            "url": None,
        }
        candidates = placed.get(sha) or []
        # the next unclaimed place of this audio; identical audio in more places than expected keeps the last
        hit = candidates.pop(0) if len(candidates) > 1 else (candidates[0] if candidates else None)
        if hit is None and rebuilt is not None:
            hit = rebuilt.find(
                sha
            )  # placed where the episode does not say (a custom template): still this audio
        if hit is not None:
            out.update(
                status="ok",
                url=self.links.audio(i, key, sha),
                place=hit.place,
                role=hit.role,
                label=hit.label,
            )
        else:
            problem = rebuilt.problem if rebuilt is not None and rebuilt.problem else SHA_DIFFERS
            out.update(status="unavailable" if problem != SHA_DIFFERS else "differs", note=problem)
        return out

    def compare(self) -> dict[str, Any]:
        """Each task's and group's metrics per k for every run: the data of the shot-scaling plots."""
        series: dict[tuple[str, str], dict[str, Any]] = {}
        for i, run in enumerate(self.runs):
            if run.record is None:
                continue
            for kind, section in (
                ("task", run.record.sections.results),
                ("group", run.record.sections.groups),
            ):
                for name, per_k in section.items():
                    entry = series.setdefault(
                        (kind, name), {"name": name, "kind": kind, "metrics": [], "points": {}}
                    )
                    for metric in overview.metric_names(per_k):
                        if metric not in entry["metrics"]:
                            entry["metrics"].append(metric)
                        points = entry["points"].setdefault(metric, {}).setdefault(str(i), [])
                        for shot_key in sorted(per_k, key=overview.shot_of):
                            block = per_k[shot_key]
                            value = block.value(metric)
                            if value is None:
                                continue
                            low, high = block.metrics[metric].ci95 or (None, None)
                            points.append([overview.shot_of(shot_key), value, low, high, block.n])
        out = []
        for entry in series.values():
            entry["metrics"].sort(key=is_failure_score)
            entry["runs"] = sorted({int(r) for pts in entry["points"].values() for r in pts})
            out.append(entry)
        out.sort(key=lambda e: (e["kind"] == "group", -len(e["runs"])))
        if self._differences is None:
            self._differences = {"value": paired_differences(self.runs)}
        return {"runs": self.run_list(), "series": out, "differences": self._differences["value"]}
