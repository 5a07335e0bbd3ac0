"""`audioeval view RUN_DIR --export DIR`: the viewer as a static site that opens from disk (file://) or from
any web host, with no server.

The page is the same as the server's; each data path is written as a small script (`data/<path>.js`, loaded
through a <script> tag, which works from file:// where fetch() does not), each playable clip as
`audio/<sha256>.wav` (one file per distinct clip) and each report file under `files/<run>/`.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from tqdm.auto import tqdm

from audioeval.errors import UsageError
from audioeval.viewer.run_folder import RunFolder, SampleKey
from audioeval.viewer.server import index_page, static_assets
from audioeval.viewer.site import Site

MARKER = ".audioeval-view"  # marks a folder as an export, so a new export may replace it
_OWN = ("index.html", "static", "data", "audio", "files", "spoken", MARKER)


class ExportLinks:
    def audio(self, run: int, key: SampleKey, sha256: str) -> str:
        return f"audio/{sha256}.wav"

    def file(self, run: int, name: str) -> str:
        return f"files/{run}/{quote(name)}"

    def spoken(self, run: int, sha256: str) -> str:
        return f"spoken/{sha256}.wav"


@dataclass
class ExportSummary:
    folder: Path
    samples: int
    clips: int
    clips_not_regenerated: int
    bytes: int


def prepare_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--export {folder}: exists and is not a folder.")
    if folder.is_dir() and any(folder.iterdir()):
        if not (folder / MARKER).exists():
            raise UsageError(
                f"--export {folder}: the folder is not empty and holds no earlier export. Give a new or empty folder."
            )
        for name in _OWN:
            path = folder / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MARKER).write_text("written by audioeval view --export\n")
    except OSError as err:
        raise UsageError(f"--export {folder}: cannot write there ({err.strerror or err}).") from err


def select(run: RunFolder, tasks: list[str] | None, limit: int | None) -> None:
    """Keep the samples of the given tasks, and of each task the first `limit` episodes."""
    if tasks is not None:
        unknown = [t for t in tasks if t not in run.tasks]
        if unknown:
            raise UsageError(
                f"--tasks {','.join(unknown)}: not in run {run.path} (its tasks: {', '.join(run.tasks)})."
            )
    episodes: dict[str, list[int]] = {}
    for s in run.summaries:
        seen = episodes.setdefault(s["task"], [])
        if s["episode"] not in seen:
            seen.append(s["episode"])
    kept = {t: set(sorted(eps)[:limit] if limit is not None else eps) for t, eps in episodes.items()}
    run.keep(lambda s: (tasks is None or s["task"] in tasks) and s["episode"] in kept[s["task"]])


def write_data(folder: Path, path: str, payload: object) -> int:
    target = folder / "data" / f"{path}.js"
    target.parent.mkdir(parents=True, exist_ok=True)
    text = f"audioevalData({json.dumps(path)}, {json.dumps(payload, ensure_ascii=False, default=str)});\n"
    target.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))


def _copy_spoken(run: RunFolder, detail: dict[str, object], folder: Path) -> int:
    """The sample's spoken answer, copied once per content to spoken/<sha256>.wav; the bytes written."""
    spoken = detail.get("spoken")
    if not isinstance(spoken, dict) or spoken.get("url") is None:
        return 0
    source = run.spoken_file(str(spoken["sha256"]))
    target = folder / "spoken" / f"{spoken['sha256']}.wav"
    if source is None or target.exists():
        return 0
    target.parent.mkdir(exist_ok=True)
    shutil.copyfile(source, target)
    return target.stat().st_size


def export_site(
    runs: list[RunFolder],
    folder: Path,
    tasks: list[str] | None = None,
    limit: int | None = None,
    trust_builder_files: bool = False,
) -> ExportSummary:
    for run in runs:
        select(run, tasks, limit)
    prepare_folder(folder)
    site = Site(runs, ExportLinks(), trust_builder_files)
    size = 0
    (folder / "index.html").write_bytes(index_page("static"))
    (folder / "static").mkdir()
    for name, body in static_assets().items():
        (folder / "static" / name).write_bytes(body)
    size += write_data(folder, "runs", site.get("runs"))
    size += write_data(folder, "compare", site.get("compare"))
    written: set[str] = set()
    missing = samples = 0
    for i, run in enumerate(runs):
        size += write_data(folder, f"run/{i}/overview", site.get(f"run/{i}/overview"))
        size += write_data(folder, f"run/{i}/samples", site.get(f"run/{i}/samples"))
        for path in run.report_files():
            target = folder / "files" / str(i) / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            size += target.stat().st_size
        for summary in tqdm(run.summaries, desc=f"export {run.path.name}", unit="sample", dynamic_ncols=True):
            key = SampleKey(summary["task"], summary["episode"], summary["k"])
            detail = site.sample(i, key)
            if detail is None:
                continue
            samples += 1
            size += write_data(folder, f"run/{i}/sample/{key}", detail)
            size += _copy_spoken(run, detail, folder)
            for part in (p for m in detail["messages"] for p in m["parts"] if p["type"] == "audio"):
                if part["status"] != "ok":
                    missing += 1
                    continue
                if part["sha256"] in written:
                    continue
                wav = site.audio[i].wav(key.task, key.episode, part["sha256"])
                if wav is None:  # pragma: no cover - the detail just found this clip
                    continue
                target = folder / "audio" / f"{part['sha256']}.wav"
                target.parent.mkdir(exist_ok=True)
                target.write_bytes(wav)
                written.add(part["sha256"])
                size += len(wav)
    return ExportSummary(folder, samples, len(written), missing, size)
