"""Bounded template rendering: a Jinja sandbox in which no template can exhaust memory or time.

Jinja's sandbox stops attribute escapes but not `{{ 'x' * 1000000000 }}`. Here every operation that can make a
value much larger than its inputs (`*`, `%`, `**`, `+`, `~`, the growing string methods and filters, `range`)
first predicts the size of what it would make and refuses past a bound, so nothing large is ever allocated:

- a string (and each prompt's output) holds at most MAX_TEXT characters, a list MAX_ITEMS items, an integer
  MAX_INT_BITS bits;
- one render makes at most MAX_CREATED characters + items in all, takes at most MAX_STEPS loop iterations and
  calls, and runs for at most TIME_LIMIT_S seconds.

The time limit is checked at every loop iteration, call, attribute access and intercepted operator rather than
by a signal alarm, so it works in any thread (judging renders off the main thread); between two checks a
template can only run one operation whose size the other bounds already cap.

A template that passes a bound raises TemplateBoundError, which says what the template tried; the renderers
turn it into a ConfigError naming the template file and line."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
import string
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import Any, cast

import jinja2
from jinja2 import filters as jf
from jinja2 import nodes
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEscapeFormatter, SandboxedFormatter
from jinja2.utils import Namespace
from jinja2.visitor import NodeTransformer
from markupsafe import Markup

MAX_TEXT = 1_000_000
MAX_ITEMS = 100_000
MAX_INT_BITS = 65_536
MAX_CREATED = 20_000_000
MAX_STEPS = 1_000_000
TIME_LIMIT_S = 5.0

_DOCS = "see docs/architecture.md, Template bounds"


class TemplateBoundError(Exception):
    """A template tried to make something past a rendering bound. Not a TypeError or ValueError on purpose:
    no Jinja code path swallows it."""


def _n(value: int) -> str:
    return f"{value:,}"


def _short(value: Any) -> str:
    """A few characters of an operand, for the message."""
    if isinstance(value, str):
        return repr(value[:12] + "...") if len(value) > 12 else repr(value)
    if isinstance(value, list | tuple):
        return f"a {type(value).__name__} of {_n(len(value))} items"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value) if value.bit_length() < 64 else f"an integer of {_n(value.bit_length())} bits"
    return type(value).__name__


class RenderBudget:
    """What one render may still spend: created size, steps, time."""

    def __init__(self, time_limit_s: float | None = None) -> None:
        limit = TIME_LIMIT_S if time_limit_s is None else time_limit_s
        self.limit_s = limit
        self.deadline = time.monotonic() + limit
        self.created = 0
        self.steps = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise TemplateBoundError(
                f"the template ran more than {_n(MAX_STEPS)} loop iterations and calls in one render "
                f"(the limit; {_DOCS})."
            )
        self.check_time()

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateBoundError(
                f"rendering took longer than {self.limit_s:g} s (the render time limit; {_DOCS})."
            )

    def charge(self, size: int) -> None:
        self.created += size
        if self.created > MAX_CREATED:
            raise TemplateBoundError(
                f"the template made more than {_n(MAX_CREATED)} characters and list items in all in one render "
                f"(the limit; {_DOCS})."
            )


_budget: contextvars.ContextVar[RenderBudget | None] = contextvars.ContextVar("template_budget", default=None)


@contextlib.contextmanager
def render_scope(time_limit_s: float | None = None) -> Iterator[RenderBudget]:
    """The budget of one render, for the current thread or task (outside a scope only per-value bounds hold)."""
    budget = RenderBudget(time_limit_s)
    token = _budget.set(budget)
    try:
        yield budget
    finally:
        _budget.reset(token)


def _tick() -> None:
    budget = _budget.get()
    if budget is not None:
        budget.tick()


def _check_time() -> None:
    budget = _budget.get()
    if budget is not None:
        budget.check_time()


def _charge(size: int) -> None:
    budget = _budget.get()
    if budget is not None:
        budget.charge(size)


def allow_text(size: int, what: str) -> None:
    """Refuse to make a string of `size` characters past MAX_TEXT; else count it against the render."""
    if size > MAX_TEXT:
        raise TemplateBoundError(
            f"{what} would make a string of {_n(size)} characters; a template may make strings of at most "
            f"{_n(MAX_TEXT)} ({_DOCS})."
        )
    _charge(size)


def allow_items(size: int, what: str, charge: bool = True) -> None:
    if size > MAX_ITEMS:
        raise TemplateBoundError(
            f"{what} would make a list of {_n(size)} items; a template may make lists of at most {_n(MAX_ITEMS)} "
            f"({_DOCS})."
        )
    if charge:
        _charge(size)


def allow_int_bits(bits: int, what: str) -> None:
    if bits > MAX_INT_BITS:
        raise TemplateBoundError(
            f"{what} would make an integer of about {_n(bits)} bits; a template may make integers of at most "
            f"{_n(MAX_INT_BITS)} bits ({_DOCS})."
        )


def text_size(value: Any, limit: int = MAX_TEXT) -> int:
    """About how many characters str(value) has, without building it; stops counting once past `limit`, so a
    list of 100,000 references to one long string costs two looks, not 100,000 copies."""
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item) + 3
        elif isinstance(item, bool) or item is None:
            total += 5
        elif isinstance(item, int):
            total += item.bit_length() * 30103 // 100000 + 2
        elif isinstance(item, float):
            total += 24
        elif isinstance(item, Mapping):
            total += 2 + 4 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, Namespace):
            total += 13
            stack.append(object.__getattribute__(item, "_Namespace__attrs"))
        elif isinstance(item, list | tuple | set | frozenset | type({}.keys()) | type({}.values())):
            total += 2 + 2 * len(item)
            stack.extend(item)
        elif isinstance(item, type({}.items())):
            total += 2 + 6 * len(item)
            stack.extend(v for pair in item for v in pair)  # type: ignore[var-annotated]
        else:  # handles, functions, loops, ranges, generators: short reprs
            total += 200
    return total


# --- operators ---------------------------------------------------------------------------------------------

_SEQUENCES = (str, bytes, list, tuple)


def _is_int(value: Any) -> bool:
    return isinstance(value, int)


def _check_repeat(seq: Any, times: int, what: str) -> None:
    size = len(seq) * max(times, 0)
    if isinstance(seq, str | bytes):
        allow_text(size, what)
    else:
        allow_items(size, what)


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse `left <operator> right` when its result would pass a bound."""
    what = f"`{_short(left)} {operator} {_short(right)}`"
    if operator == "*":
        if isinstance(left, _SEQUENCES) and _is_int(right):
            _check_repeat(left, right, what)
        elif isinstance(right, _SEQUENCES) and _is_int(left):
            _check_repeat(right, left, what)
        elif _is_int(left) and _is_int(right):
            allow_int_bits(left.bit_length() + right.bit_length(), what)
    elif operator == "+":
        if isinstance(left, str | bytes) and isinstance(right, str | bytes):
            allow_text(len(left) + len(right), what)
        elif isinstance(left, list | tuple) and isinstance(right, list | tuple):
            allow_items(len(left) + len(right), what)
        elif _is_int(left) and _is_int(right):
            allow_int_bits(max(left.bit_length(), right.bit_length()) + 1, what)
    elif operator == "**":
        if _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1:
            allow_int_bits(left.bit_length() * right if right < 2**62 else 2**62, what)
    elif operator == "%" and isinstance(left, str):
        allow_text(percent_size(left, right), what)


# printf-style conversions: %[(key)][flags][width][.precision][length]type
_PERCENT = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?[hlL]?(?P<type>.)"
)


def percent_size(fmt: str, args: Any) -> int:
    """An upper bound on len(fmt % args), without formatting. Mismatched arguments are left for Python's own
    error."""
    mapping = args if isinstance(args, Mapping) else None
    positional = list(args) if isinstance(args, tuple) else [args]
    index = 0

    def take() -> Any:
        nonlocal index
        value = positional[index] if index < len(positional) else ""
        index += 1
        return value

    total = len(fmt)
    for match in _PERCENT.finditer(fmt):
        if match["type"] == "%":
            continue
        width = take() if match["width"] == "*" else int(match["width"] or 0)
        prec = take() if match["prec"] == "*" else int(match["prec"] or 0)
        if match["key"] is not None and mapping is not None:
            value = mapping.get(match["key"], "")
        else:
            value = take()
        width = width if isinstance(width, int) else 0
        prec = prec if isinstance(prec, int) else 0
        base = text_size(value) + abs(prec) + (330 if isinstance(value, float) else 0)
        total += max(abs(width), base)
        if total > MAX_TEXT:
            break
    return total


# --- str.format ----------------------------------------------------------------------------------------------

_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d+)?[,_]?(?:\.(?P<prec>\d+))?[a-zA-Z%]?")


class _BoundingFormatter(string.Formatter):
    """str.format / format_map whose every field, and whose whole result, is bounded before it is made."""

    made = 0

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion in ("r", "a", "s"):
            allow_text(text_size(value), f"`!{conversion}` of {_short(value)} in str.format")
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        match = _SPEC.fullmatch(format_spec)
        width = int(match["width"] or 0) if match else 0
        prec = int(match["prec"] or 0) if match else 0
        size = max(width, text_size(value) + prec + (330 if isinstance(value, float) else 0))
        self.made += size
        allow_text(self.made, f"str.format with the field spec {format_spec[:20]!r}")
        return super().format_field(value, format_spec)


class BoundedFormatter(_BoundingFormatter, SandboxedFormatter):
    pass


class BoundedEscapeFormatter(_BoundingFormatter, SandboxedEscapeFormatter):
    pass


# --- string methods ------------------------------------------------------------------------------------------


def _width_size(s: str, width: Any, *_: Any) -> int:
    return max(len(s), width if isinstance(width, int) else 0)


def _replace_size(s: str, old: Any, new: Any, count: Any = -1) -> int:
    if not isinstance(old, str) or not isinstance(new, str):
        return len(s)
    n = s.count(old) if old else len(s) + 1
    if isinstance(count, int) and count >= 0:
        n = min(n, count)
    return len(s) + n * max(len(new) - len(old), 0)


def _expandtabs_size(s: str, tabsize: Any = 8) -> int:
    return len(s) + s.count("\t") * max(tabsize if isinstance(tabsize, int) else 8, 0)


def _join_size(sep: str, items: list[Any]) -> int:
    return sum(text_size(i) for i in items) + len(sep) * max(len(items) - 1, 0)


def _translate_size(s: str, table: Any) -> int:
    longest = 1
    if isinstance(table, Mapping):
        longest = max([1, *(len(v) for v in table.values() if isinstance(v, str))])
    return len(s) * longest


_STR_GROWERS: dict[str, Callable[..., int]] = {
    "center": _width_size,
    "ljust": _width_size,
    "rjust": _width_size,
    "zfill": _width_size,
    "replace": _replace_size,
    "expandtabs": _expandtabs_size,
    "translate": _translate_size,
}


def _bounded_str_call(method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call a str method, predicting the size first where it can grow the string."""
    s, name = method.__self__, method.__name__
    what = f"str.{name}() on {_short(s)}"
    if name == "join" and args:
        items = bounded_list(args[0], what)
        allow_text(_join_size(s, items), what)
        return method(items)
    grower = _STR_GROWERS.get(name)
    if grower is not None:
        try:
            size = grower(s, *args, **kwargs)
        except TypeError:  # wrong arguments: let the method say so
            size = 0
        allow_text(size, what)
        return method(*args, **kwargs)
    result = method(*args, **kwargs)
    _charge_result(result)
    return result


def _charge_result(result: Any) -> None:
    if isinstance(result, str | bytes | list | tuple | dict):
        _charge(len(result))


# --- iteration and concatenation -----------------------------------------------------------------------------


def bounded_list(iterable: Any, what: str) -> list[Any]:
    """list(iterable), refusing past MAX_ITEMS items without reading further."""
    if isinstance(iterable, list | tuple | str | range | dict):
        allow_items(len(iterable), what)
        return list(iterable)
    out: list[Any] = []
    for item in iterable:
        out.append(item)
        if len(out) > MAX_ITEMS:
            allow_items(len(out), what)
        if len(out) % 4096 == 0:
            _check_time()
    _charge(len(out))
    return out


class _Steps:
    """A for-loop's iterable that counts each iteration against the render (loop.length still works)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __iter__(self) -> Iterator[Any]:
        for item in self.inner:
            _tick()
            yield item


class _SizedSteps(_Steps):
    def __len__(self) -> int:
        return len(self.inner)


def bounded_range(*args: int) -> range:
    rng = range(*args)
    what = f"range({', '.join(str(a) for a in args)})"
    allow_items(len(rng), what, charge=False)  # a range holds no items: only its length is bounded
    return rng


# --- filters -------------------------------------------------------------------------------------------------


def _keep_pass_arg(original: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a filter, keeping Jinja's pass_context/pass_eval_context/pass_environment marker."""

    def decorate(wrapper: Callable[..., Any]) -> Callable[..., Any]:
        marker = getattr(original, "jinja_pass_arg", None)
        if marker is not None:
            wrapper.jinja_pass_arg = marker  # type: ignore[attr-defined]
        return wrapper

    return decorate


@jinja2.pass_eval_context
def _join(eval_ctx: Any, value: Any, d: str = "", attribute: Any = None) -> str:
    if attribute is not None:
        value = map(jf.make_attrgetter(eval_ctx.environment, attribute), value)
    items = bounded_list(value, "the join filter")
    allow_text(_join_size(str(d), items), f"join with {_short(str(d))} of {_n(len(items))} items")
    return jf.sync_do_join(eval_ctx, items, d)


def _center(value: Any, width: int = 80) -> str:
    allow_text(max(text_size(value), width if isinstance(width, int) else 0), f"center({width!r})")
    return jf.do_center(value, width)


def _indent(s: str, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    pad = width if isinstance(width, str) else 0 if not isinstance(width, int) else width
    pad_len = len(pad) if isinstance(pad, str) else max(pad, 0)
    text = str(s)
    allow_text(len(text) + (text.count("\n") + 1) * pad_len, f"indent({width!r}) of {_short(text)}")
    return jf.do_indent(s, width, first, blank)


@jinja2.pass_environment
def _wordwrap(
    environment: Any,
    s: str,
    width: int = 79,
    break_long_words: bool = True,
    wrapstring: str | None = None,
    break_on_hyphens: bool = True,
) -> str:
    text = str(s)
    wrap = environment.newline_sequence if wrapstring is None else str(wrapstring)
    allow_text(len(text) + (len(text) + 1) * len(wrap), f"wordwrap({width!r}) of {_short(text)}")
    return jf.do_wordwrap(environment, s, width, break_long_words, wrapstring, break_on_hyphens)


@jinja2.pass_eval_context
def _replace(eval_ctx: Any, s: str, old: str, new: str, count: int | None = None) -> str:
    text = str(s)
    allow_text(_replace_size(text, str(old), str(new), -1 if count is None else count), "the replace filter")
    return jf.do_replace(eval_ctx, s, old, new, count)


def _format(value: str, *args: Any, **kwargs: Any) -> str:
    allow_text(percent_size(str(value), kwargs or args), f"the format filter on {_short(str(value))}")
    return jf.do_format(value, *args, **kwargs)


def _batch(value: Any, linecount: int, fill_with: Any = None) -> Iterator[list[Any]]:
    if isinstance(linecount, int):
        allow_items(linecount, f"batch({linecount})")
    for chunk in jf.do_batch(value, linecount, fill_with):
        _tick()
        yield chunk


def _slice(value: Any, slices: int, fill_with: Any = None) -> Iterator[list[Any]]:
    if isinstance(slices, int):
        allow_items(slices, f"slice({slices})")
    return jf.sync_do_slice(value, slices, fill_with)


@jinja2.pass_environment
def _sum(environment: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
    if attribute is not None:
        iterable = map(jf.make_attrgetter(environment, attribute), iterable)
    total = start
    for item in bounded_list(iterable, "the sum filter"):
        check_binop("+", total, item)
        total = total + item
    return total


def _list(value: Any) -> list[Any]:
    return bounded_list(value, "the list filter")


def _lossless_size(name: str, func: Callable[..., Any], factor: int) -> Callable[..., Any]:
    """A filter whose output is at most `factor` times its input's text (escaping, quoting, repr)."""

    @_keep_pass_arg(func)
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        value = args[1] if getattr(func, "jinja_pass_arg", None) is not None else args[0]
        allow_text(text_size(value) * factor, f"the {name} filter on {_short(value)}")
        return func(*args, **kwargs)

    return wrapper


def _checked_after(func: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that cannot grow its input much: counts the call and the size of what it returns."""

    @_keep_pass_arg(func)
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _tick()
        result = func(*args, **kwargs)
        _charge_result(result)
        return result

    return wrapper


_PREDICTED_FILTERS: dict[str, Callable[..., Any]] = {
    "join": _join,
    "center": _center,
    "indent": _indent,
    "wordwrap": _wordwrap,
    "replace": _replace,
    "format": _format,
    "batch": _batch,
    "slice": _slice,
    "sum": _sum,
    "list": _list,
}
# escaping multiplies a character by at most 6 (`&#34;`), JSON by 6 (`\u0001`), repr/str/urlencode by 12
_GROWTH_FACTOR = {
    "e": 6,
    "escape": 6,
    "forceescape": 6,
    "tojson": 6,
    "pprint": 6,
    "string": 1,
    "urlencode": 12,
    "xmlattr": 12,
    "title": 3,
    "upper": 3,
    "capitalize": 3,
}
# urlize writes each link's target and rel once per link: unbounded by its input, and of no use in a prompt
_REMOVED_FILTERS = ("urlize",)


def bounded_filters(defaults: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    out: dict[str, Callable[..., Any]] = {}
    for name, func in defaults.items():
        if name in _REMOVED_FILTERS:
            continue
        if name in _PREDICTED_FILTERS:
            out[name] = _PREDICTED_FILTERS[name]
        elif name in _GROWTH_FACTOR:
            out[name] = _checked_after(_lossless_size(name, func, _GROWTH_FACTOR[name]))
        else:
            out[name] = _checked_after(func)
    return out


# --- the environment -----------------------------------------------------------------------------------------


class _WrapLoopsAndConcat(NodeTransformer):
    """Route every `{% for %}` iterable and every `~` through the environment, where they are counted."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        call = nodes.Call(nodes.EnvironmentAttribute("bounded_steps"), [node.iter], [], None, None)
        node.iter = call.set_lineno(node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        call = nodes.Call(
            nodes.EnvironmentAttribute("bounded_tilde"), [nodes.List(node.nodes)], [], None, None
        )
        return call.set_lineno(node.lineno)


def _finalize(value: Any) -> Any:
    """Every `{{ ... }}` passes here before str(): a huge structure is refused before it is written out."""
    if not isinstance(value, str | int | float | bool | type(None)):  # those are already bounded
        allow_text(text_size(value), f"writing out {_short(value)}")
    return value


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox with every growing operation bounded (module docstring)."""

    intercepted_binops = frozenset({"*", "%", "**", "+"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, finalize=_finalize, **kwargs)
        self.filters = bounded_filters(dict(self.filters))
        self.globals.pop("lipsum", None)  # lipsum(n=10**9) writes paragraphs without end
        self.globals["range"] = bounded_range

    def _generate(self, source: nodes.Template, *args: Any, **kwargs: Any) -> str:
        source = _WrapLoopsAndConcat().visit(source)
        source.set_environment(self)
        return super()._generate(source, *args, **kwargs)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _check_time()
        check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _tick()
        if not __self.is_safe_callable(__obj):
            return super().call(__context, __obj, *args, **kwargs)  # raises the sandbox's SecurityError
        if isinstance(getattr(__obj, "__self__", None), str) and callable(__obj):
            return _bounded_str_call(__obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        _charge_result(result)
        return result

    def getattr(self, obj: Any, attribute: str) -> Any:
        _check_time()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _check_time()
        return super().getitem(obj, argument)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if super().wrap_str_format(value) is None:
            return None
        f_self = value.__self__
        is_format_map = value.__name__ == "format_map"

        def bounded_format(*args: Any, **kwargs: Any) -> str:
            formatter: _BoundingFormatter
            if isinstance(f_self, Markup):
                formatter = BoundedEscapeFormatter(self, escape=f_self.escape)
            else:
                formatter = BoundedFormatter(self)
            if is_format_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument")
                kwargs, args = args[0], ()
            return type(f_self)(formatter.vformat(f_self, args, kwargs))

        return functools.update_wrapper(bounded_format, value)

    def concat(self, pieces: Iterable[str]) -> str:
        """Joins the output of `{% set %}` blocks, macros and `{% filter %}` blocks."""
        parts = pieces if isinstance(pieces, list) else list(pieces)
        allow_text(sum(len(p) for p in parts), "the text of a block or macro")
        return "".join(parts)

    @staticmethod
    def bounded_steps(iterable: Any) -> _Steps:
        return _SizedSteps(iterable) if hasattr(type(iterable), "__len__") else _Steps(iterable)

    @staticmethod
    def bounded_tilde(pieces: list[Any]) -> str:
        allow_text(sum(text_size(p) for p in pieces), "`~` of " + " ~ ".join(_short(p) for p in pieces[:3]))
        return "".join(str(p) for p in pieces)


def render_bounded(
    template: jinja2.Template, context: Mapping[str, Any], time_limit_s: float | None = None
) -> str:
    """template.render(**context) within one render's budget, its output capped at MAX_TEXT characters. The
    cap is raised inside the template's own frame, so the error names the line that wrote past it."""
    with render_scope(time_limit_s):
        pieces: list[str] = []
        total = 0
        gen = cast(Generator[str, None, None], template.generate(**context))  # a generator, typed Iterator
        for piece in gen:
            total += len(piece)
            if total > MAX_TEXT:
                gen.throw(
                    TemplateBoundError(
                        f"the rendered prompt passed {_n(MAX_TEXT)} characters (the limit on one prompt; {_DOCS})."
                    )
                )
            pieces.append(piece)
        return "".join(pieces)


def evaluate_bounded(expression: Callable[..., Any], context: Mapping[str, Any]) -> Any:
    """A compiled expression (label_space, a judge role's `when`) evaluated within one render's budget."""
    with render_scope():
        return expression(**context)
