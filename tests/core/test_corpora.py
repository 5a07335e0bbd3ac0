"""`audioeval corpora`: the listing, downloads checked by checksum and layout before they are declared ready, and
nothing half-written left behind. The network boundary (audioeval.data.corpora.remote) is replaced by local folders
laid out like the remote."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from audioeval.data.corpora import remote
from audioeval.errors import DataError
from tests.alice_testutil import isolated_cache, tone_wav, write_layout  # noqa: F401
from tests.conftest import run_cli
from tests.shared_corpora import needs_corpus, shared_corpus

FSDD = shared_corpus("fsdd")


def _zip(folder: Path, archive: Path, top: str) -> Path:
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, f"{top}/{path.relative_to(folder).as_posix()}")
    return archive


class FakeWeb:
    """URL -> local file; a download of an unknown URL fails like a 404."""

    def __init__(self) -> None:
        self.files: dict[str, Path] = {}
        self.fail_after: int | None = None  # bytes written before a simulated dropped connection

    def http_get(self, url: str, dest: Path) -> None:
        if url not in self.files:
            raise DataError(f"download of {url} failed: HTTP Error 404")
        data = self.files[url].read_bytes()
        if self.fail_after is not None:
            dest.write_bytes(data[: self.fail_after])
            raise DataError(f"download of {url} failed: connection reset")
        dest.write_bytes(data)


@pytest.fixture
def web(monkeypatch) -> FakeWeb:
    fake = FakeWeb()
    monkeypatch.setattr(remote, "http_get", fake.http_get)
    return fake


def _nothing_left(destination: Path) -> None:
    assert not destination.exists()
    assert not [p for p in destination.parent.iterdir() if p.name.startswith(f".{destination.name}.")]


def test_listing_names_every_corpus_with_source_licence_layout_and_download():
    code, out, err = run_cli(["corpora"])
    assert code == 0, err
    for bench in ("audioicl_bench:", "alice:", "adu_bench:"):
        assert bench in out
    for name, licence in (
        ("fsdd", "cc-by-sa-4.0"),
        ("esc50", "cc-by-nc-3.0"),
        ("osps", "other"),
        ("dcase", "unknown"),
        ("alice", "unknown"),
        ("adu-bench", "unknown"),
    ):
        block = out.split(f"  {name}  ", 1)[1].split("\n  ", 7)
        assert f"licence:  {licence}" in "\n".join(block)
    assert "fsdd_dir=DIR" in out and "ROOT/recordings/<digit>_<speaker>_<take>.wav" in out
    assert "huggingface.co/datasets/KuofengGao/ADU-Bench" in out and "zenodo.org/record/3665275" in out
    assert "download: not automated" in out.split("  dcase  ", 1)[1]
    code, out, _ = run_cli(["corpora", "--benchmark", "adu_bench"])
    assert "adu-bench" in out and "fsdd" not in out
    code, _, err = run_cli(["corpora", "--benchmark", "adu_benc"])
    assert code == 2 and "Did you mean: adu_bench" in err
    code, _, err = run_cli(["corpora", "download", "fsd", "--to", "x"])
    assert code == 2 and "unknown corpus 'fsd'" in err and "fsdd" in err
    code, _, err = run_cli(["corpora", "download", "dcase", "--to", "x"])
    assert code == 2 and "no automatic download" in err


@pytest.mark.slow
@needs_corpus("fsdd", "Free Spoken Digit Dataset")
def test_fsdd_download_is_checked_against_the_pinned_digest(web, tmp_path):
    ref = "26eb9aaf76e81b692f806f9140c2d2777410d7a1"
    url = remote.github_archive_url("Jakobovski/free-spoken-digit-dataset", ref)
    web.files[url] = _zip(FSDD, tmp_path / "fsdd.zip", f"free-spoken-digit-dataset-{ref}")
    target = tmp_path / "corpora" / "fsdd"
    code, out, err = run_cli(["corpora", "download", "fsdd", "--to", str(target)])
    assert code == 0, err
    assert len(list(target.glob("*.wav"))) == 3000 and f"fsdd_dir={target}" in out
    assert [p.name for p in target.parent.iterdir()] == ["fsdd"]  # no temporary folder left
    assert run_cli(["corpora", "check", "fsdd", str(target)])[0] == 0

    # the same archive with a recording missing: the digest fails and nothing is installed
    partial = tmp_path / "partial"
    shutil.copytree(FSDD, partial)
    (partial / "recordings" / "3_jackson_7.wav").unlink()
    web.files[url] = _zip(partial, tmp_path / "partial.zip", f"free-spoken-digit-dataset-{ref}")
    code, _, err = run_cli(["corpora", "download", "fsdd", "--to", str(tmp_path / "again")])
    assert code == 2 and "do not match the pinned content digest" in err and "(2999)" in err
    _nothing_left(tmp_path / "again")


def test_a_download_that_fails_midway_leaves_nothing(web, tmp_path):
    url = remote.github_archive_url("karolpiczak/ESC-50", "master")
    remote_tree = tmp_path / "remote"
    tone_wav(remote_tree / "audio" / "1-100-A-0.wav")
    web.files[url] = _zip(remote_tree, tmp_path / "esc.zip", "ESC-50-master")
    web.fail_after = 100
    destination = tmp_path / "esc50"
    code, _, err = run_cli(["corpora", "download", "esc50", "--to", str(destination)])
    assert code == 2 and "connection reset" in err
    _nothing_left(destination)


def test_a_corpus_with_the_wrong_layout_is_refused_naming_what_is_missing(web, tmp_path):
    url = remote.github_archive_url("karolpiczak/ESC-50", "master")
    remote_tree = tmp_path / "remote"
    tone_wav(remote_tree / "audio" / "1-100-A-0.wav")  # but no meta/esc50.csv
    web.files[url] = _zip(remote_tree, tmp_path / "esc.zip", "ESC-50-master")
    destination = tmp_path / "esc50"
    code, _, err = run_cli(["corpora", "download", "esc50", "--to", str(destination)])
    assert code == 2 and "no meta/esc50.csv" in err
    _nothing_left(destination)

    (remote_tree / "meta").mkdir()
    (remote_tree / "meta" / "esc50.csv").write_text(
        "filename,fold,target\n1-100-A-0.wav,1,0\n1-101-A-3.wav,1,3\n"
    )
    web.files[url] = _zip(remote_tree, tmp_path / "esc2.zip", "ESC-50-master")
    code, _, err = run_cli(["corpora", "download", "esc50", "--to", str(destination)])
    assert code == 2 and "missing from audio/: 1-101-A-3.wav" in err
    _nothing_left(destination)

    tone_wav(remote_tree / "audio" / "1-101-A-3.wav")
    web.files[url] = _zip(remote_tree, tmp_path / "esc3.zip", "ESC-50-master")
    assert run_cli(["corpora", "download", "esc50", "--to", str(destination)])[0] == 0
    assert (destination / "meta" / "esc50.csv").is_file()

    wrong = tmp_path / "digits"
    tone_wav(wrong / "recordings" / "1_theo_0.wav")
    code, _, err = run_cli(["corpora", "check", "fsdd", str(wrong)])
    assert code == 2 and "<digit>_jackson_<take>.wav" in err and "Speakers found: theo" in err


def test_zenodo_files_are_checked_against_the_record_md5(web, monkeypatch, tmp_path):
    sounds = tmp_path / "osps_src"
    for group in range(1, 6):
        tone_wav(sounds / "one_shot_percussive_sounds" / str(group) / f"{group}00.wav", 100.0 * group, 0.1)
    archive = tmp_path / "osps.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(sounds.rglob("*.wav")):
            zf.write(path, path.relative_to(sounds).as_posix())
    url = "https://zenodo.org/api/records/3665275/files/osps.zip/content"
    web.files[url] = archive
    md5 = hashlib.md5(archive.read_bytes()).hexdigest()
    record = [{"name": "osps.zip", "url": url, "md5": md5}]
    monkeypatch.setattr(remote, "zenodo_files", lambda ref: record if ref == "3665275" else [])
    destination = tmp_path / "osps"
    assert run_cli(["corpora", "download", "osps", "--to", str(destination)])[0] == 0
    assert sorted(p.name for p in destination.iterdir()) == ["1", "2", "3", "4", "5"]

    record[0]["md5"] = "0" * 32
    code, _, err = run_cli(["corpora", "download", "osps", "--to", str(tmp_path / "osps2")])
    assert code == 2 and "has MD5" in err and "the record says 000" in err
    _nothing_left(tmp_path / "osps2")


class FakeHub:
    """Hugging Face dataset repositories as local folders; checksums as the Hub lists them."""

    def __init__(self) -> None:
        self.repos: dict[tuple[str, str], Path] = {}
        self.tampered: dict[str, str] = {}

    def snapshot(self, repo: str, revision: str, dest: Path, allow_patterns) -> None:
        import fnmatch

        source = self.repos[(repo, revision)]
        for path in source.rglob("*"):
            rel = path.relative_to(source).as_posix()
            if path.is_file() and (
                not allow_patterns or any(fnmatch.fnmatch(rel, p) for p in allow_patterns)
            ):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, dest / rel)

    def checksums(self, repo: str, revision: str) -> dict[str, tuple[str, str]]:
        out = {}
        for path in self.repos[(repo, revision)].rglob("*"):
            if not path.is_file():
                continue
            rel, data = path.relative_to(self.repos[(repo, revision)]).as_posix(), path.read_bytes()
            if path.suffix in (".wav", ".tar"):  # LFS files: SHA-256
                out[rel] = ("sha256", self.tampered.get(rel, hashlib.sha256(data).hexdigest()))
            else:  # plain git objects
                out[rel] = ("git-sha1", hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest())
        return out


@pytest.fixture
def hub(monkeypatch) -> FakeHub:
    fake = FakeHub()
    monkeypatch.setattr(remote, "hub_snapshot", fake.snapshot)
    monkeypatch.setattr(remote, "hub_checksums", fake.checksums)
    return fake


def _adu_release(root: Path) -> Path:
    for dataset, subset, domain in (
        ("General", "helpful_question", "helpful_question"),
        ("Skill", "math", "math"),
        ("Multilingual", "chinese", "chinese"),
        ("Ambiguity", "homophones", "homophones"),
    ):
        audio = f"ADU-{dataset}/{domain}/0001_en_AndrewMultilingualNeural.wav"
        tone_wav(root / audio)
        row = {
            "question": "What is two plus two?",
            "answer": "Four.",
            "audio": audio,
            "source": "x",
            "category": "",
        }
        path = root / "input" / f"ADU-{dataset}" / f"{subset}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(row) + "\n")
    (root / "README.md").write_text("ADU-Bench\n")
    return root


def test_hub_datasets_are_checked_against_the_hub_checksums(hub, tmp_path):
    revision = "1dca4a374d5872808d5e879b6d1362e39ac17b0f"
    hub.repos[("KuofengGao/ADU-Bench", revision)] = _adu_release(tmp_path / "remote")
    destination = tmp_path / "adu"
    code, out, err = run_cli(["corpora", "download", "adu-bench", "--to", str(destination)])
    assert code == 0, err
    assert (destination / "input" / "ADU-Skill" / "math.jsonl").is_file() and f"data_dir={destination}" in out

    hub.tampered["ADU-Skill/math/0001_en_AndrewMultilingualNeural.wav"] = "f" * 64
    code, _, err = run_cli(["corpora", "download", "adu-bench", "--to", str(tmp_path / "adu2")])
    assert code == 2 and "ADU-Skill/math/0001_en_AndrewMultilingualNeural.wav has sha256" in err
    _nothing_left(tmp_path / "adu2")


def test_alice_download_joins_the_code_repository_and_the_hub_audio(web, hub, tmp_path):
    copy = write_layout(tmp_path / "layout")
    audio = copy / "data" / "audios"
    hub_repo = tmp_path / "speech_ifeval"
    hub_repo.mkdir()
    with tarfile.open(hub_repo / "audios.tar", "w") as tf:
        tf.add(audio, arcname="audios")
    (hub_repo / "README.md").write_text("Speech-IFEval\n")
    shutil.rmtree(audio)  # the code repository does not hold the test audio
    web.files[remote.github_archive_url("yenting-biao/MAI-2025-Fall-Final-Project-Group-3", "main")] = _zip(
        copy, tmp_path / "mai.zip", "MAI-2025-Fall-Final-Project-Group-3-main"
    )
    hub.repos[("kehanlu/Speech-IFEval", "main")] = hub_repo
    destination = tmp_path / "alice"
    code, _, err = run_cli(["corpora", "download", "alice", "--to", str(destination)])
    assert code == 0, err
    assert (destination / "data" / "audios" / "Speech_emotion_recognition" / "ser0.wav").is_file()
    assert not (destination / "data" / "audios.tar").exists()
    assert run_cli(["corpora", "check", "alice", str(destination)])[0] == 0
