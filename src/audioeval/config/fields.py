"""Declared fields: one declaration per field (its type, default, bounds and description) from which a value is
checked, a bad one is worded in one line, and help and docs rows are written.

A declaration is a pydantic field, described with `Arg`:

- a keyword argument of a function (a backend's `__init__`: its --model_args):
  `num_concurrent: Annotated[int, Arg("requests in flight", ge=1)] = 8` (`arguments_of(function)` reads them);
- a field of a `Declared` model (the keys of a task or group YAML file);
- a name in a dict of name -> annotation (generation settings, `audioeval build`'s numbers).

`check_values` and `read_model` check values against them and raise `FieldProblem`: what is wrong (`unknown`,
`missing` or `invalid`, in words derived from the declaration) and where (the key, then the keys inside it).
The caller adds the file and line, or the flag. `takes` words what a declaration accepts, `argument_rows` and
`markdown_table` write help and docs tables from the same declarations.

Values come typed (YAML, or `k=v` flags read by `kvargs.coerce_value`), so they are taken as typed: an integer
is not a number with a fraction, `true` is not 1, and a plain string argument also takes a number written on
the command line (`model=4`).
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, is_dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from audioeval.errors import unknown_name_message

_SHOWN_DEFAULT = "shown_default"
_SHOWN_TYPE = "shown_type"


def Arg(  # noqa: N802 - read like pydantic's Field, which it is
    description: str = "",
    *,
    default: Any = PydanticUndefined,
    default_factory: Callable[[], Any] | None = None,
    shown_default: str | None = None,
    shown_type: str | None = None,
    **constraints: Any,
) -> Any:
    """One declared field: what it is (`description`), its default, its bounds (`ge`, `gt`, `le`, `lt`,
    `min_length`, ...) and, where the docs should say more than the value, `shown_default` ("from
    `model_type`") and `shown_type` ("int or list")."""
    extra = {k: v for k, v in ((_SHOWN_DEFAULT, shown_default), (_SHOWN_TYPE, shown_type)) if v is not None}
    kwargs: dict[str, Any] = dict(constraints, description=description or None)
    if extra:
        kwargs["json_schema_extra"] = extra
    if default_factory is not None:
        kwargs["default_factory"] = default_factory
    elif default is not PydanticUndefined:
        kwargs["default"] = default
    return Field(**kwargs)


class Declared(BaseModel):
    """A file's keys, declared as fields (aliases where the key is not the attribute's name). Unknown keys are
    errors; values are taken as YAML typed them (`read_model` reads a file's keys by their key names only)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        validate_by_name=True,
        validate_by_alias=True,
        arbitrary_types_allowed=True,
    )


def _text(value: Any) -> Any:
    return str(value)


def _empty_if_none(value: Any) -> Any:
    return {} if value is None else value


#: a value written as text, whatever YAML made of it (`version: 2` reads as "2")
Text = Annotated[str, BeforeValidator(_text)]
#: a mapping; an empty key (`metadata:`) reads as {}
Mapping = Annotated[dict[Any, Any], BeforeValidator(_empty_if_none)]
#: a whole number >= 0 (a shot count, a seed)
Count = Annotated[int, Field(ge=0)]


class FieldProblem(Exception):
    """A value that does not fit its declaration. `path`: the key, then the keys (or list positions) inside it;
    `kind`: unknown, missing or invalid; `words`: what is wrong, e.g. "must be at least 1, got 0"."""

    def __init__(
        self,
        path: tuple[str | int, ...],
        kind: Literal["unknown", "missing", "invalid"],
        words: str,
        value: Any = None,
        known: tuple[str, ...] = (),
        description: str = "",
        custom: bool = False,
    ) -> None:
        super().__init__(words)
        self.path, self.kind, self.words, self.value = path, kind, words, value
        self.custom = custom  # words written by the declaration's own check: the whole message
        self.known = known  # for an unknown key: the keys allowed there
        self.description = description  # for a missing one: what it is

    @property
    def key(self) -> str:
        return str(self.path[-1]) if self.path else ""

    @property
    def dotted(self) -> str:
        """`parameters.style`, `num_fewshot[1]`."""
        return _dotted(self.path)

    def unknown(self, what: str = "key") -> str:
        """ "unknown <what> 'x'. Did you mean: y?" (or the known keys)."""
        return unknown_name_message(what, self.key, self.known)

    def message(self) -> str:
        """One line naming the field, without the file or flag it came from."""
        if self.kind == "unknown":
            inside = _dotted(self.path[:-1])
            return (f"`{inside}`: " if inside else "") + self.unknown()
        if self.kind == "missing":
            return f"`{self.dotted}` is required" + (f": {self.description}." if self.description else ".")
        if self.custom:  # the check's own words name the key; inside another key, say which
            return f"`{self.dotted}`: {self.words}" if len(self.path) > 1 else self.words
        return f"`{self.dotted}` {self.words}."


def _dotted(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


class Problem(ValueError):
    """Raised by a declaration's own check (a validator) with the whole message: the key it names and what to
    do. `at`: keys inside the field whose line the message should point at (e.g. a parameter's name)."""

    def __init__(self, message: str, at: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.at = at


# ---- checking ------------------------------------------------------------------------------------------------


M = TypeVar("M", bound=BaseModel)


def read_model(model: type[M], data: Any, context: Any = None) -> M:
    """`data` (a file's keys) checked against `model`, by key names only; FieldProblem when it does not fit."""
    try:
        return model.model_validate(data, context=context, by_alias=True, by_name=False)
    except ValidationError as err:
        raise problem_of(err, model) from None


def check_values(
    values: dict[str, Any], declared: dict[str, Any] | Callable[..., Any], skip: tuple[str, ...] = ("self",)
) -> None:
    """`values` (`k=v` flags) checked against a dict of name -> annotation, or against the keyword arguments of
    a function (but `skip`); FieldProblem when they do not fit. The values themselves are not changed."""
    model = _model_of(declared, skip)
    try:
        model.model_validate(values, by_alias=True, by_name=False)
    except ValidationError as err:
        raise problem_of(err, model) from None


@dataclass(frozen=True)
class Argument:
    """A declared keyword argument: its annotation (Annotated with its `Arg`) and default (or `REQUIRED`)."""

    name: str
    annotation: Any
    default: Any

    @property
    def info(self) -> FieldInfo:
        return _info(self.annotation, self.default)


REQUIRED: Any = PydanticUndefined


def arguments_of(function: Callable[..., Any], skip: Iterable[str] = ("self",)) -> dict[str, Argument]:
    """The keyword arguments `function` declares (not *args or **kwargs), with their resolved annotations (an
    annotation that does not resolve, e.g. a name imported only for type checking, takes anything)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    params = {
        n: p for n, p in inspect.signature(function).parameters.items() if p.kind in kinds and n not in skip
    }
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception:  # noqa: BLE001 - a user's annotation we cannot resolve: resolve them one by one
        hints = {}
        namespace = getattr(function, "__globals__", {})
        for name, param in params.items():
            try:
                raw = param.annotation
                hints[name] = eval(raw, namespace) if isinstance(raw, str) else raw  # noqa: S307
            except Exception:  # noqa: BLE001
                hints[name] = Any
    return {
        name: Argument(
            name,
            Any if p.annotation is inspect.Parameter.empty else hints.get(name, Any),
            REQUIRED if p.default is inspect.Parameter.empty else p.default,
        )
        for name, p in params.items()
    }


_models: dict[Any, tuple[object, type[BaseModel]]] = {}


def _model_of(declared: dict[str, Any] | Callable[..., Any], skip: tuple[str, ...]) -> type[BaseModel]:
    """A model checking `k=v` values: one field per declared name (aliased, so any name can be declared). Made
    once per function, or per dict (module-level declarations: the dict is kept, so its id stays its own)."""
    key = (declared, skip) if callable(declared) else (id(declared), skip)
    cached = _models.get(key)
    if cached is not None and cached[0] is declared:
        return cached[1]
    if callable(declared):
        arguments = list(arguments_of(declared, skip).values())
    else:
        arguments = [Argument(n, a, None) for n, a in declared.items()]
    fields: dict[str, Any] = {
        f"a{i}": (_as_typed(a.annotation), Field(a.default, alias=a.name)) for i, a in enumerate(arguments)
    }
    model = create_model(
        "Arguments", __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True), **fields
    )
    _models[key] = (declared, model)
    return model


def _number_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _as_typed(annotation: Any, top: bool = True) -> Any:
    """The annotation with its plain types taken strictly (see the module docstring); a number is taken as text
    only where the whole argument is a string."""
    base, metadata = _split(annotation)
    members = _members(base)
    if top and [m for m in members if m is not type(None)] == [str]:
        typed: Any = Annotated[base, BeforeValidator(_number_as_text)]
    elif len(members) > 1:
        typed = Union[tuple(_as_typed(m, top=False) for m in members)]  # noqa: UP007 - built from a tuple
    elif base in (int, bool, float):
        typed = Annotated[base, Strict()]
    else:
        typed = base
    return Annotated[typed, *metadata] if metadata else typed


# ---- wording -------------------------------------------------------------------------------------------------

_BOUND_ERRORS = {
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "too_short",
    "too_long",
}


def problem_of(err: ValidationError, model: type[BaseModel]) -> FieldProblem:
    """The error to report: an unknown key first (its typo likely explains the rest), then a missing one, then
    the first invalid value; worded from the declaration at that key."""
    rank = {"extra_forbidden": 0, "missing": 1}
    first = min(enumerate(err.errors()), key=lambda e: (rank.get(e[1]["type"], 2), e[0]))[1]
    loc, kind, value = tuple(first["loc"]), first["type"], first.get("input")
    annotation, path = _declared_at(model, loc)
    if kind == "extra_forbidden":
        return FieldProblem(loc, "unknown", "unknown key", value, _keys_at(model, loc[:-1]))
    if kind == "missing":
        info = _info(annotation, PydanticUndefined)
        return FieldProblem(loc, "missing", "is required", description=info.description or "")
    error = (first.get("ctx") or {}).get("error")
    if isinstance(error, Problem):
        return FieldProblem(path + error.at, "invalid", str(error), value, custom=True)
    if kind in ("value_error", "assertion_error"):
        return FieldProblem(path, "invalid", str(error or first["msg"]), value, custom=True)
    base, _ = _split(annotation)
    members = [m for m in _members(base) if m is not type(None)]
    if len(members) == 1 and kind in _BOUND_ERRORS:
        return FieldProblem(path, "invalid", f"must be {bound_words(annotation)}, got {value!r}", value)
    if len(members) == 1 and kind == "literal_error":
        return FieldProblem(path, "invalid", f"must be {type_words(members[0])}; got {value!r}", value)
    return FieldProblem(path, "invalid", f"expects {takes(annotation)}, got {value!r}", value)


def _split(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """(the type, the metadata of its Annotated layers)."""
    if get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        return base, tuple(metadata)
    return annotation, ()


def _members(tp: Any) -> tuple[Any, ...]:
    return get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,)


def _info(annotation: Any, default: Any) -> FieldInfo:
    if isinstance(annotation, FieldInfo):
        return annotation
    return FieldInfo.from_annotated_attribute(annotation, default)


def _model_field(model: type[BaseModel], key: str | int) -> FieldInfo | None:
    for name, info in model.model_fields.items():
        if (info.alias or name) == key:
            return info
    return None


def _keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[str, ...]:
    annotation, _ = _declared_at(model, loc)
    inner = _a_model(_split(annotation)[0])
    return tuple(info.alias or name for name, info in inner.model_fields.items()) if inner else ()


def _a_model(tp: Any) -> type[BaseModel] | None:
    members = [m for m in _members(tp) if m is not type(None)]
    if len(members) == 1 and isinstance(members[0], type) and issubclass(members[0], BaseModel):
        return members[0]
    return None


def _declared_at(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[Any, tuple[str | int, ...]]:
    """The declaration at `loc` inside `model` and the part of `loc` that leads to it (a union is worded
    whole, so the path stops there)."""
    annotation: Any = model
    path: list[str | int] = []
    for part in loc:
        base, _ = _split(annotation)
        inner = _a_model(base)
        members = [m for m in _members(base) if m is not type(None)]
        origin = get_origin(members[0]) if len(members) == 1 else None
        if inner is not None:
            info = _model_field(inner, part)
            if info is None:
                break
            annotation = _field_annotation(info)
        elif origin is dict:
            annotation = get_args(members[0])[1] if get_args(members[0]) else Any
        elif origin in (list, tuple):
            annotation = get_args(members[0])[0] if get_args(members[0]) else Any
        else:
            break
        path.append(part)
    return annotation, tuple(path)


def _field_annotation(info: FieldInfo) -> Any:
    return Annotated[info.annotation, info] if info.metadata or info.description else info.annotation


def _constraints(annotation: Any) -> dict[str, Any]:
    """The bounds declared on a type (its Annotated metadata, pydantic Fields included)."""
    _, metadata = _split(annotation)
    found: dict[str, Any] = {}
    pending = list(metadata)
    while pending:
        item = pending.pop(0)
        if isinstance(item, FieldInfo):
            pending.extend(item.metadata)
            continue
        for attr in ("ge", "gt", "le", "lt", "min_length", "max_length"):
            value = getattr(item, attr, None)
            if value is not None:
                found[attr] = value
    return found


def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and abs(value) >= 10_000 else str(value)


def bound_words(annotation: Any) -> str:
    """ "from 80 to 450", "at least 1", "greater than 0", "non-empty"; "" when unbounded."""
    c = _constraints(annotation)
    low = ("at least", c["ge"]) if "ge" in c else ("greater than", c["gt"]) if "gt" in c else None
    high = ("at most", c["le"]) if "le" in c else ("less than", c["lt"]) if "lt" in c else None
    if low and high and low[0] == "at least" and high[0] == "at most":
        words = [f"from {_number(low[1])} to {_number(high[1])}"]
    else:
        words = [f"{bound[0]} {_number(bound[1])}" for bound in (low, high) if bound]
    if c.get("min_length") == 1:
        words.append("non-empty")
    elif "min_length" in c:
        words.append(f"at least {c['min_length']} long")
    if "max_length" in c:
        words.append(f"at most {c['max_length']} long")
    return " and ".join(words)


_NOUNS = {
    int: ("an integer", "integers"),
    float: ("a number", "numbers"),
    bool: ("true or false", "true or false"),
    str: ("a string", "strings"),
    Path: ("a path", "paths"),
}


def type_words(annotation: Any) -> str:
    """What a type takes, in words: "an integer", "a list of strings", "one of: audio, text", "... or none"."""
    base, _ = _split(annotation)
    members = _members(base)
    if len(members) > 1:
        words = [
            " or ".join(_shown(v) for v in get_args(m)) if get_origin(m) is Literal else takes(m)
            for m in members
            if m is not type(None)
        ]
        if type(None) in members:
            words.append("none")
        return ", ".join(words[:-1]) + " or " + words[-1]
    origin, args = get_origin(base), get_args(base)
    if origin is Literal:
        return "one of: " + ", ".join(_shown(a) for a in args)
    if origin in (list, tuple):
        item, _ = _split(args[0]) if args else (Any, ())
        return f"a list of {_NOUNS[item][1]}" if item in _NOUNS else "a list"
    if origin is dict or base is dict:
        return "a mapping"
    if isinstance(base, type) and issubclass(base, BaseModel):
        return "a mapping of " + ", ".join(i.alias or n for n, i in base.model_fields.items())
    if base in _NOUNS:
        return _NOUNS[base][0]
    return "anything" if base is Any else getattr(base, "__name__", str(base))


def description(annotation: Any) -> str:
    """The description a declaration gives (its `Arg`)."""
    return _info(annotation, PydanticUndefined).description or ""


def takes(annotation: Any) -> str:
    """What a declaration accepts: its type words, then its bounds: "an integer (from 80 to 450)"."""
    bounds = bound_words(annotation)
    return type_words(annotation) + (f" ({bounds})" if bounds else "")


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# ---- help and docs -------------------------------------------------------------------------------------------


def _extra(info: FieldInfo, key: str) -> str | None:
    extra = info.json_schema_extra
    return extra.get(key) if isinstance(extra, dict) else None  # type: ignore[return-value]


def shown_default(info: FieldInfo, default: Any = PydanticUndefined) -> str:
    """The default as the docs show it: "required", "—" (none), `auto`, 8, false, or the declared words."""
    declared = _extra(info, _SHOWN_DEFAULT)
    if declared is not None:
        return declared
    if default is PydanticUndefined:
        default = info.get_default(call_default_factory=True) if not info.is_required() else PydanticUndefined
    if default is PydanticUndefined:
        return "required"
    if default is None:
        return "—"
    if isinstance(default, str):
        return f"`{default}`" if default else '`""`'
    if isinstance(default, bool | int | float):
        return _shown(default)
    return f"`{json.dumps(default)}`"


_SHORT = {int: "int", float: "float", bool: "bool", str: "str", Path: "path"}


def _short(tp: Any) -> str:
    base, _ = _split(tp)
    members = [m for m in _members(base) if m is not type(None)]
    if len(members) > 1:
        return " or ".join(_short(m) for m in members)
    base = members[0] if members else base
    origin, args = get_origin(base), get_args(base)
    if origin is Literal:
        shown = [f"`{_shown(a)}`" for a in args]
        return ", ".join(shown[:-1]) + " or " + shown[-1] if len(shown) > 1 else shown[0]
    if origin in (list, tuple):
        item, _ = _split(args[0]) if args else (Any, ())
        return f"list of {_SHORT[item]}" if item in _SHORT else "list"
    if (
        origin is dict
        or base is dict
        or is_dataclass(base)
        or (isinstance(base, type) and issubclass(base, BaseModel))
    ):
        return "mapping"
    text: str = _SHORT.get(base) or ("any" if base is Any else str(getattr(base, "__name__", base)))
    c = _constraints(tp)
    if "ge" in c and "le" in c:
        return f"{text} from {_number(c['ge'])} to {_number(c['le'])}"
    for key, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
        if key in c:
            text += f" {sign} {_number(c[key])}"
    return ("non-empty " + text) if c.get("min_length") == 1 else text


def shown_type(annotation: Any) -> str:
    """The type as a table shows it: the declared words, else compact: "int ≥ 1", "`audio` or `text`"."""
    info = _info(annotation, PydanticUndefined)
    return _extra(info, _SHOWN_TYPE) or _short(annotation)


def argument_rows(arguments: dict[str, Argument]) -> list[tuple[str, str, str, str]]:
    """(name, takes, default, description) per declared argument, for `--model_args list` and the docs."""
    return [
        (
            name,
            shown_type(a.annotation),
            shown_default(a.info, a.default),
            a.info.description or "",
        )
        for name, a in arguments.items()
    ]


def model_rows(model: type[BaseModel]) -> list[tuple[str, str, str, str]]:
    """(key, type, default, description) per field of a declared model."""
    return [
        (info.alias or name, shown_type(_field_annotation(info)), shown_default(info), info.description or "")
        for name, info in model.model_fields.items()
    ]


def markdown_table(headers: tuple[str, ...], rows: Iterable[tuple[str, ...]], code_first: bool = True) -> str:
    """A markdown table; the first column as code."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        cells = [c.replace("|", "\\|") for c in row]
        if code_first:
            cells[0] = f"`{cells[0]}`"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def text_table(rows: Iterable[tuple[str, ...]], indent: str = "  ") -> str:
    """Rows as aligned columns for the terminal (the last column runs on)."""
    rows = list(rows)
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        indent + "  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
        for r in rows
    )
