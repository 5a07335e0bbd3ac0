"""Discovery of tasks and groups: every *.yaml under tasks/ and the --include_path folders.

Files whose name starts with `_` are bases for `include:` and are not tasks themselves. A file that cannot be
read (bad YAML, an invalid key, a missing template) is set aside with its error: every other task stays
usable, a warning names the file, and selecting a name that file might define shows its error.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from audioeval.config.fields import text_table
from audioeval.config.judge_roles import JudgeRole, load_roles
from audioeval.config.task import (
    ConfigError,
    GroupConfig,
    TaskConfig,
    is_group_file,
    load_group_config,
    load_task_config,
    parameter_rows,
    read_yaml,
)
from audioeval.errors import AudioEvalError, UsageError, unknown_name_message
from audioeval.resources import tasks_dir

log = logging.getLogger("audioeval")


def _stamp(roots: list[Path]) -> tuple[tuple[str, int, int], ...]:
    """What every file under the folders is now (path, modification time, size): a change to any YAML, template
    or hook file means reading the tasks again."""
    files = sorted(
        p for root in roots for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    return tuple((str(p), (st := p.stat()).st_mtime_ns, st.st_size) for p in files)


#: folders -> (their files' stamp, the registry read from them)
_DISCOVERED: dict[tuple[str, ...], tuple[tuple[tuple[str, int, int], ...], TaskRegistry]] = {}


@dataclass
class TaskRegistry:
    tasks: dict[str, TaskConfig] = field(default_factory=dict)
    groups: dict[str, GroupConfig] = field(default_factory=dict)
    broken: dict[str, str] = field(default_factory=dict)  # file (or group) -> why it is unusable
    #: task -> its judge roles, made ready once when the task is discovered (the run's panel uses these)
    judge_roles: dict[str, list[JudgeRole]] = field(default_factory=dict)

    @classmethod
    def discover(cls, include_paths: Sequence[str | Path] | None = None) -> TaskRegistry:
        """Every task and group under tasks/ and the include paths. Read once per process while no file under
        those folders changes (a training loop that evaluates every N steps reads and compiles them once)."""
        roots = [tasks_dir()] + [Path(p) for p in include_paths or []]
        for root in roots:
            if not root.is_dir():
                raise UsageError(f"--include_path {root}: not a folder of task YAML files.")
        key, stamp = tuple(str(r.resolve()) for r in roots), _stamp(roots)
        known = _DISCOVERED.get(key)
        registry = known[1] if known is not None and known[0] == stamp else cls._read(roots)
        _DISCOVERED[key] = (stamp, registry)
        for problem in registry.broken.values():
            log.warning("skipped, its tasks are unavailable: %s", problem)
        return registry

    @classmethod
    def _read(cls, roots: list[Path]) -> TaskRegistry:
        registry = cls()
        for root in roots:
            for path in sorted(root.rglob("*.yaml")) + sorted(root.rglob("*.yml")):
                if path.name.startswith("_"):
                    continue
                try:
                    entry, roles = registry._load_file(path)
                except ConfigError as err:
                    registry.broken[str(path)] = str(err)
                    continue
                registry._add(entry)
                if roles:
                    registry.judge_roles[entry.name] = roles
        registry._add_implicit_groups()
        registry._check_groups()
        return registry

    @staticmethod
    def _load_file(path: Path) -> tuple[TaskConfig | GroupConfig, list[JudgeRole]]:
        data, _ = read_yaml(path)
        if is_group_file(data):
            return load_group_config(path), []
        config = load_task_config(path)
        # a judge role that cannot run makes the task unusable, with or without --judge
        return config, load_roles(config)

    def _add(self, entry: TaskConfig | GroupConfig) -> None:
        """A name defined twice is an error: which definition runs must never depend on discovery order."""
        if isinstance(entry, GroupConfig):
            if entry.name in self.groups and self.groups[entry.name].path != entry.path:
                raise ConfigError(
                    f"{entry.path}: group {entry.name!r} is also defined in {self.groups[entry.name].path}."
                )
            self.groups[entry.name] = entry
            return
        if entry.name in self.tasks:
            raise ConfigError(
                f"{entry.path}: task {entry.name!r} is also defined in {self.tasks[entry.name].path}."
            )
        self.tasks[entry.name] = entry

    def _add_implicit_groups(self) -> None:
        declared: dict[str, list[str]] = defaultdict(list)
        for task in self.tasks.values():
            for g in task.groups:
                declared[g].append(task.name)
        for gname, members in declared.items():
            group = self.groups.setdefault(gname, GroupConfig(name=gname, path=None, members=[]))
            for m in members:
                if m not in group.members:
                    group.members.append(m)

    def _check_groups(self) -> None:
        """Groups with an unknown member (e.g. one defined in a file that could not be read) or a cycle are set
        aside like unreadable files."""
        for group in list(self.groups.values()):
            try:
                for m in group.members:
                    if m not in self.tasks and m not in self.groups:
                        where = group.path or "a task's `group:` key"
                        raise ConfigError(
                            f"{where}: group {group.name!r} lists {unknown_name_message('member', m, self.names())}"
                        )
                self.leaf_tasks(group.name)  # raises on cycles
            except AudioEvalError as err:
                self.broken[f"group {group.name}"] = str(err)
        for key in self.broken:
            if key.startswith("group "):
                self.groups.pop(key[len("group ") :], None)

    def names(self) -> list[str]:
        return sorted(set(self.tasks) | set(self.groups))

    def leaf_tasks(self, name: str, _stack: tuple[str, ...] = ()) -> list[str]:
        """The tasks a name expands to, in definition order, without duplicates."""
        if name in self.tasks:
            return [name]
        if name not in self.groups:
            same_name = [err for where, err in self.broken.items() if Path(where).stem == name]
            if same_name:
                raise ConfigError(f"task or group {name!r} is unavailable: {same_name[0]}")
            message = unknown_name_message("task or group", name, self.names(), "Run --tasks list.")
            if self.broken:
                message = (
                    f"{len(self.broken)} task file(s) could not be read and may define {name!r}: "
                    + "; ".join(self.broken.values())
                    + " Otherwise: "
                    + message
                )
            raise UsageError(message)
        if name in _stack:
            raise ConfigError(f"group cycle: {' -> '.join(_stack + (name,))}.")
        out: list[str] = []
        for m in self.groups[name].members:
            for leaf in self.leaf_tasks(m, _stack + (name,)):
                if leaf not in out:
                    out.append(leaf)
        return out

    def select(self, spec: str) -> tuple[list[str], list[str]]:
        """Expand a comma list of tasks/groups into (leaf tasks, groups named or implied)."""
        names = [s.strip() for s in spec.split(",") if s.strip()]
        if not names:
            raise UsageError("--tasks: give at least one task or group (see --tasks list).")
        tasks: list[str] = []
        groups: list[str] = []
        for name in names:
            for leaf in self.leaf_tasks(name):
                if leaf not in tasks:
                    tasks.append(leaf)
            if name in self.groups:
                for g in self._subgroups(name):
                    if g not in groups:
                        groups.append(g)
        return tasks, groups

    def _subgroups(self, name: str) -> list[str]:
        out = [name]
        for m in self.groups[name].members:
            if m in self.groups:
                out.extend(g for g in self._subgroups(m) if g not in out)
        return out

    def parameter_listing(self, spec: str) -> str:
        """`--tasks NAMES --task_args list`: the parameters each selected task takes (tasks that take the same
        ones are listed together)."""
        names, _groups = self.select(spec)
        by_rows: dict[tuple[tuple[str, ...], ...], list[str]] = {}
        for name in names:
            by_rows.setdefault(tuple(parameter_rows(self.tasks[name])), []).append(name)
        header = ("parameter", "type", "default", "meaning")
        return "\n\n".join(
            f"{', '.join(tasks)}:\n{text_table([header, *rows])}" for rows, tasks in by_rows.items()
        )

    def listing(self) -> str:
        lines = []
        top = [g for g in sorted(self.groups) if not any(g in o.members for o in self.groups.values())]
        shown: set[str] = set()

        def show(name: str, depth: int) -> None:
            pad = "  " * depth
            if name in self.groups:
                group = self.groups[name]
                desc = f"  — {group.description}" if group.description else ""
                lines.append(f"{pad}{name} (group){desc}")
                for m in group.members:
                    show(m, depth + 1)
            else:
                shown.add(name)
                task = self.tasks[name]
                desc = f"  — {task.description}" if task.description else ""
                lines.append(f"{pad}{name}{desc}")

        for g in top:
            show(g, 0)
        ungrouped = [t for t in sorted(self.tasks) if t not in shown]
        if ungrouped:
            lines.append("(tasks in no group)")
            lines.extend(f"  {t}" for t in ungrouped)
        return "\n".join(lines)
