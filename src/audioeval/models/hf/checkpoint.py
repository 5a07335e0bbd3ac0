"""A checkpoint on disk: where it is, what family it is, and a fingerprint of the files that make it.

Shared by the `hf` and `vllm` backends. Nothing here loads weights."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audioeval.errors import ModelError
from audioeval.models.hf.families import FamilyAdapter, family_by_name, family_for

_HASH_FULL_BELOW = 64 << 20  # files smaller than this are hashed whole
_SAMPLE_BLOCKS = 16
_BLOCK = 64 << 10
_HUB_PATTERNS = [
    "*.json",
    "*.jinja",
    "*.safetensors",
    "*.model",
    "*.txt",
    "*.py",
    "*.tiktoken",
    "spk_dict.pt",
]


@dataclass(frozen=True)
class Checkpoint:
    pretrained: str  # the absolute folder, or the Hub id as given ("<Class> in memory" for a loaded model)
    path: Path  # local folder holding config.json (a loaded model's name_or_path, which may not exist)
    config: dict[str, Any]
    family: FamilyAdapter
    in_memory: bool = False  # a model the caller loaded and holds (its weights may change between runs)

    @property
    def model_type(self) -> str | None:
        return self.config.get("model_type")


def resolve_dir(pretrained: str | None, revision: str | None) -> Path:
    """A local folder, or a Hub repository id fetched (or found in the cache) with huggingface_hub."""
    if not pretrained:
        raise ModelError(
            "--model_args pretrained=... is required: a checkpoint folder or a Hugging Face Hub id "
            "(for example pretrained=Qwen/Qwen2-Audio-7B-Instruct)."
        )
    local = Path(str(pretrained)).expanduser()
    if local.exists():
        if not local.is_dir():
            raise ModelError(f"pretrained={pretrained}: expected a checkpoint folder, found a file.")
        return local.resolve()
    if str(pretrained).startswith((".", "/", "~")) or str(pretrained).count("/") != 1:
        raise ModelError(
            f"pretrained={pretrained}: no such folder (and not a Hub id of the form owner/name)."
        )
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(
            str(pretrained),
            revision=revision,
            allow_patterns=_HUB_PATTERNS,
            ignore_patterns=["consolidated*", "original/*"],
        )
    except Exception as err:
        raise ModelError(
            f"pretrained={pretrained}: not a local folder, and fetching it from the Hugging Face Hub failed "
            f"({type(err).__name__}: {err}). Download it first (hf download {pretrained}) and pass "
            "the folder, or check the name and your network/HF_TOKEN."
        ) from err
    return Path(folder)


def open_checkpoint(
    pretrained: str | None, revision: str | None = None, family: str | None = None
) -> Checkpoint:
    path = resolve_dir(pretrained, revision)
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelError(
            f"pretrained={pretrained}: {config_file} is missing; a transformers checkpoint folder needs "
            "config.json (save the model with model.save_pretrained(folder))."
        )
    try:
        config = json.loads(config_file.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ModelError(f"{config_file}: not readable JSON ({err}).") from err
    adapter = family_by_name(family) if family else family_for(config.get("model_type"), str(config_file))
    local = Path(str(pretrained)).expanduser().exists()
    name = str(path) if local else str(pretrained)
    return Checkpoint(pretrained=name, path=path, config=config, family=adapter)


def loaded_checkpoint(model: Any, family: str | None = None) -> Checkpoint:
    """A transformers model already loaded (a training loop's): its config stands for config.json."""
    config = model.config.to_dict()
    where = f"{type(model).__name__} given in memory"
    adapter = family_by_name(family) if family else family_for(config.get("model_type"), where)
    path = Path(str(getattr(model, "name_or_path", "") or type(model).__name__))
    return Checkpoint(pretrained=where, path=path, config=config, family=adapter, in_memory=True)


def check_processor_files(checkpoint: Checkpoint) -> None:
    """A clear error before AutoProcessor would fall back to a bare tokenizer or fail obscurely."""
    path = checkpoint.path
    if checkpoint.family.tokenized_template:
        return  # Voxtral: mistral-common's tekken.json plus preprocessor_config.json
    if not any((path / name).is_file() for name in ("processor_config.json", "preprocessor_config.json")):
        raise ModelError(
            f"{path}: no processor (neither processor_config.json nor preprocessor_config.json). The hf backend "
            "needs the model's AutoProcessor: save it next to the weights with processor.save_pretrained(folder)."
        )
    if not any((path / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json")):
        raise ModelError(
            f"{path}: no tokenizer files (tokenizer.json / tokenizer_config.json). Save the processor, which "
            "includes its tokenizer, with processor.save_pretrained(folder)."
        )


def _hash_file(h: Any, file: Path) -> None:
    size = file.stat().st_size
    h.update(f"{file.name}:{size}:".encode())
    with file.open("rb") as handle:
        if size <= _HASH_FULL_BELOW:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
            return
        # Large files (weights): the first MiB (a safetensors header: names, shapes, dtypes) and evenly spaced
        # blocks of tensor data. Two checkpoints with the same shapes but different weights differ in every
        # block, so sampling tells them apart without reading 15 GB.
        h.update(handle.read(1 << 20))
        for i in range(_SAMPLE_BLOCKS):
            handle.seek((size - _BLOCK) * (i + 1) // _SAMPLE_BLOCKS)
            h.update(handle.read(_BLOCK))


def fingerprint(folder: Path) -> str:
    """SHA-256 over the checkpoint's files (config, processor, tokenizer, template, weights; sampled when
    large), in path order. Any change to what determines the outputs changes it."""
    h = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    for file in files:
        rel = file.relative_to(folder).as_posix()
        if rel.startswith(("original/", "consolidated")) or any(s.startswith(".") for s in rel.split("/")):
            continue
        h.update(rel.encode() + b"\0")
        _hash_file(h, file)
    return h.hexdigest()
