"""The layers of src/audioeval, as docs/architecture.md draws them: each imports only from the layers below it,
no module imports itself back through others, the core imports no benchmark, and no function runs over 80
lines."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "audioeval"

# bottom to top; a module may import from its own layer and the layers below
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "foundation",
        (
            "errors",
            "types",
            "resources",
            "seeds",
            "kvargs",
            "redact",
            "hooks",
            "version",
            "deprecation",
            "audio",
        ),
    ),
    ("config", ("config",)),
    ("augment", ("augment",)),
    ("data", ("data",)),
    ("models", ("models",)),
    ("results", ("results",)),
    ("run", ("run",)),
    ("apps", ("cli", "__main__", "__init__", "api", "viewer", "testing")),
]
WINGS = "benchmarks"  # beside the core: may import every layer but apps; the core never imports a wing
MAX_FLAT_MODULES = 12


def module_name(path: Path) -> str:
    parts = list(path.with_suffix("").relative_to(SRC).parts)
    if parts[-1] == "__init__" and len(parts) > 2:
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The audioeval modules `name` imports (at any depth of the file: late imports count too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for target in targets:
            while target not in known and "." in target:
                target = target.rpartition(".")[0]
            if target in known and target != name and target.startswith("audioeval"):
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def top_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(module: str) -> int:
    top = top_of(module)
    if top == WINGS:
        return len(LAYERS) - 1  # just below apps
    for i, (_name, members) in enumerate(LAYERS):
        if top in members:
            return i
    raise AssertionError(f"{module}: {top!r} belongs to no layer; add it to LAYERS and docs/architecture.md")


def test_every_core_folder_and_module_sits_on_a_layer():
    for module in modules():
        layer_of(module)


def test_at_most_a_dozen_modules_sit_flat_in_the_package():
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= MAX_FLAT_MODULES, flat


def test_imports_only_run_down_the_layers():
    upward = []
    for module, deps in graph().items():
        for dep in deps:
            wing_import = top_of(dep) == WINGS and top_of(module) != WINGS
            if wing_import or (top_of(dep) != WINGS and layer_of(dep) > layer_of(module)):
                upward.append(f"{module} -> {dep}")
            if top_of(module) == WINGS and layer_of(dep) == len(LAYERS) - 1 and top_of(dep) != WINGS:
                upward.append(f"{module} -> {dep} (a wing imports an application)")
    assert not upward, "\n".join(sorted(upward))


def test_no_module_imports_itself_back():
    edges = graph()
    circles = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in edges[node]:
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    assert not circles, circles


MAX_FUNCTION_LINES = 80


def test_no_function_runs_over_eighty_lines():
    """A function that does not fit on a screen holds several stages: name them as functions of their own."""
    long = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{module}.{node.name} (line {node.lineno}): {lines} lines")
    assert not long, "\n".join(long)


def test_the_module_table_of_the_architecture_notes_names_every_core_module():
    """docs/architecture.md's module table stays true: every core module is named there, itself or by its
    folder (`audio/`, `models/hf/`)."""
    import re

    doc = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = doc[
        doc.index("| layer | module | one concept |") : doc.index("The benchmarks sit beside the core")
    ]
    named = set(re.findall(r"`([A-Za-z_/.]+)`", table))
    unnamed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        parts = rel.split("/")
        if parts[0] == WINGS or path.name in ("__init__.py", "__main__.py"):
            continue
        if rel not in named and not any("/".join(parts[:i]) + "/" in named for i in range(1, len(parts))):
            unnamed.append(rel)
    assert not unnamed, f"add these to the module table of docs/architecture.md: {unnamed}"
