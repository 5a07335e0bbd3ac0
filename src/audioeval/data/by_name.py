"""`datasets.load_dataset("<benchmark>", "<config>")` by name, offline, once `audioeval` is imported.

    import audioeval, datasets
    ds = datasets.load_dataset("<benchmark>", "<config>", split="test", n_episodes=50, seed=1)

`datasets` >= 4 runs no loading scripts, and a bare name it does not know is looked up on the Hub. audioeval
therefore answers for the names of its own builders (the folders of datasets_builders/) inside
`datasets.load.dataset_module_factory`, the function `load_dataset`, `load_dataset_builder` and
`get_dataset_config_names` ask which builder a name means: it returns the builder module, so episodes are
generated on the fly by the same code `audioeval build` and the harness run; builder keyword arguments pass
through as config fields; `streaming=True` yields episodes lazily. Every other name goes to `datasets` as
before, and so does one of our names when a folder of that name exists (a folder the user built keeps its
meaning).

Why not just `datasets.packaged_modules._PACKAGED_DATASETS_MODULES`: `datasets` resolves a packaged name by
first scanning the current folder (or `data_dir`) for data files, and fails with EmptyDatasetError in a folder
without any (and hands the files it finds to the builder otherwise).

`datasets` offers no public hook for this (5.2 has no registry of builders by name and no entry point for
one), so this one small module is the only place that touches its internals. pyproject.toml pins the range it
is tested on (datasets>=5.2,<5.3), TESTED_DATASETS lists every release in that range, and
tests/core/test_load_by_name.py runs the by-name loading against the installed release and fails when the
installed `datasets` is not one of them or the wrapped function changed its shape: widen the pin only after
adding the new release here and seeing those tests pass on it. `import audioeval` itself stays light: it imports neither `datasets` nor any
builder; the factory is wrapped when `datasets.load` is imported (or at once if it already was), and a builder
module is imported only when its name is loaded.
"""

from __future__ import annotations

import os
import sys

# no `typing` and no `functools` here: `import audioeval` must stay a few milliseconds (so the finder below
# is typed loosely, and the type checker is told where that departs from importlib's protocols)
#: the releases of the pinned range (pyproject.toml) the by-name hook was tested on
TESTED_DATASETS = ("5.2.0",)
_TARGET = "datasets.load"
_MARK = "_audioeval_by_name"
_HASHES: dict[str, str] = {}


def install() -> None:
    """Wrap `datasets.load.dataset_module_factory` now, or as soon as `datasets.load` is imported."""
    loaded = sys.modules.get(_TARGET)
    if loaded is not None and getattr(loaded, "__spec__", None) is not None:
        if not getattr(loaded.__spec__, "_initializing", False):
            _wrap(loaded)
            return
    if not any(isinstance(f, _ImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _ImportHook())  # type: ignore[arg-type]


class _ImportHook:
    """A meta path finder that only watches for `datasets.load`: it lets the other finders locate the module,
    then wraps the factory right after the module body has run."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname != _TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)  # type: ignore[arg-type]
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                loader = spec.loader

                def exec_module(module: object, run: object = loader.exec_module) -> None:
                    run(module)  # type: ignore[operator]
                    _wrap(module)
                    if self in sys.meta_path:
                        sys.meta_path.remove(self)  # type: ignore[arg-type]

                loader.exec_module = exec_module  # type: ignore[method-assign]  # serves this one import only
                return spec
        return None


def _wrap(load_module: object) -> None:
    original = getattr(load_module, "dataset_module_factory", None)
    if original is None or getattr(original, _MARK, False):
        return

    def dataset_module_factory(path: object, *args: object, **kwargs: object) -> object:
        module = benchmark_module(path)
        return module if module is not None else original(path, *args, **kwargs)

    setattr(dataset_module_factory, _MARK, True)
    dataset_module_factory.__wrapped__ = original  # type: ignore[attr-defined]
    dataset_module_factory.__doc__ = original.__doc__
    load_module.dataset_module_factory = dataset_module_factory  # type: ignore[attr-defined]


def benchmark_module(path: object) -> object:
    """The DatasetModule for one of audioeval's builder names, or None for any other path."""
    if not isinstance(path, str) or "/" in path or os.sep in path or os.path.isdir(path):
        return None
    from audioeval.resources import builders_dir

    if not (builders_dir() / path / f"{path}.py").is_file():
        return None
    from datasets.load import DatasetModule

    from audioeval.data.builders import load_builder_class

    cls = load_builder_class(path)
    return DatasetModule(cls.__module__, _code_hash(path), {"dataset_name": path})


def _code_hash(name: str) -> str:
    """A digest of everything the builder's episodes depend on (its folder and the audioeval package), so
    `datasets`' cache of generated rows is never reused after the code changed."""
    if name in _HASHES:
        return _HASHES[name]
    import hashlib
    from pathlib import Path

    from audioeval.resources import builders_dir

    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]  # the whole audioeval package
    for root in (builders_dir() / name, package):
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    _HASHES[name] = digest.hexdigest()
    return _HASHES[name]
