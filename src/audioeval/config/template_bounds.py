"""Bounded template rendering: Jinja's immutable sandbox, extended through its documented hooks so that no
template can exhaust memory or time (docs/architecture.md, Template bounds).

`call_binop` (`*` `+` `%` `**`), `call` (every function and method call), the filters (a curated list, each
wrapped) and `finalize` (every `{{ ... }}`) refuse a result past a bound, predicting its size first wherever it
can grow far beyond its inputs. A value a template names (`{% set %}`, `{% with %}`, a loop's iterable, a
call's arguments) is measured with its shared parts counted each time they appear (`[a, a]` holds `a` twice),
so what `==`, `in`, sort and writing out walk is bounded too. Each loop iteration and call counts against the
render's steps, and the hooks check a deadline (no signal alarm: judge templates render off the main thread).
`concat` caps each prompt, block and macro text. Loops and named values reach the hooks through a token-stream
filter (`Extension.filter_stream`). A template that passes a bound raises TemplateBoundError, which the
renderers turn into a ConfigError naming file:line."""

from __future__ import annotations

import contextvars
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial, wraps
from typing import Any

import jinja2
from jinja2.ext import Extension
from jinja2.lexer import Token, TokenStream
from jinja2.nodes import EvalContext
from jinja2.runtime import Context, LoopContext
from jinja2.sandbox import MAX_RANGE, ImmutableSandboxedEnvironment, SandboxedFormatter

MAX_TEXT = 1_000_000  # characters in a string a template makes, and in a prompt, block or macro text
MAX_ITEMS = MAX_RANGE  # items in a list or range (Jinja's own range bound, 100,000)
MAX_INT_BITS = 65_536
MAX_SIZE = 20_000_000  # characters and items in one value, its shared parts counted each time they appear
MAX_MADE = 20_000_000  # characters and items made in one render
MAX_STEPS = 1_000_000  # loop iterations and calls in one render
TIME_LIMIT_S = 5.0
_DOCS = "see docs/architecture.md, Template bounds"


class TemplateBoundError(Exception):
    """A template tried to go past a rendering bound. Not a TypeError or ValueError: no Jinja path swallows it."""


def _n(value: int) -> str:
    return f"{value:,}"


def _short(value: Any) -> str:
    """A few characters of an operand, for a message."""
    if isinstance(value, str):
        return repr(value[:12] + "...") if len(value) > 12 else repr(value)
    if isinstance(value, list | tuple | dict):
        return f"a {type(value).__name__} of {_n(len(value))} items"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value) if value.bit_length() < 64 else f"an integer of {_n(value.bit_length())} bits"
    return type(value).__name__


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


What = str | Callable[[], str]  # what the template tried, for a message: built only when a bound is passed


def _refuse_past(limit: int, amount: int, what: What, would: str, may: str) -> None:
    """Raise when `amount` passes `limit`; `would` and `may` are phrases with a {} for the amount and the limit."""
    if amount > limit:
        tried = what() if callable(what) else what
        raise TemplateBoundError(
            f"{tried} would {would.format(_n(amount))}; a template may {may.format(_n(limit))} ({_DOCS})."
        )


def allow_text(size: int, what: What) -> None:
    _refuse_past(MAX_TEXT, size, what, "make a string of {} characters", "make strings of at most {}")


def allow_items(count: int, what: What) -> None:
    _refuse_past(MAX_ITEMS, count, what, "make a list of {} items", "make lists of at most {}")


def allow_bits(bits: int, what: What) -> None:
    _refuse_past(
        MAX_INT_BITS, bits, what, "make an integer of about {} bits", "make integers of at most {} bits"
    )


def allow_size(size: int, what: What) -> None:
    would = (
        "hold {} characters and items, its shared parts counted each time they appear (as `==`, `in`, sort "
    )
    _refuse_past(MAX_SIZE, size, what, would + "and writing out walk it)", "hold at most {}")


_CONTAINERS: tuple[type, ...] = (dict, list, tuple, type({}.keys()), type({}.values()), type({}.items()))


def _scalar_size(item: Any) -> int | None:
    """The size of anything but a list, tuple, dict or dict view (None for those)."""
    if isinstance(item, str):
        return len(item)
    if isinstance(item, bool | float) or item is None:
        return 5
    if isinstance(item, int):
        return item.bit_length() * 3 // 10 + 1
    return None if isinstance(item, _CONTAINERS) else 20  # handles, ranges, loops: a short text


def size_of(value: Any, known: dict[int, tuple[Any, int]] | None = None) -> int:
    """How many characters and items `value` holds, a shared part counted each time it appears (as str(), `==`
    and sort walk it). Each distinct container is visited once, so `[a, a]` nested 60 deep costs 60 looks.
    `known` (id -> (container, size)) gives the containers measured before and receives those measured now."""
    if (scalar := _scalar_size(value)) is not None:
        return scalar
    known = {} if known is None else known

    def measured(item: Any) -> int | None:
        if type(item) is str:
            return len(item)
        if (size := _scalar_size(item)) is None and id(item) in known:
            size = known[id(item)][1]
        return size

    stack = [value] if measured(value) is None else []
    while stack:  # depth first: a container is summed once all its parts are measured
        item = stack[-1]
        total, pending = 2 + (4 if isinstance(item, dict) else 2) * len(item), {}
        for part in [*item.keys(), *item.values()] if isinstance(item, dict) else item:
            size = measured(part)
            if size is None:
                pending[id(part)] = part
            else:
                total += size
        if pending:
            stack.extend(pending.values())
        else:
            known[id(item)] = (stack.pop(), total)
    return measured(value) or 0


class RenderBudget:
    """What one render may still spend (steps, time, what it makes), and the sizes it has measured."""

    def __init__(self, time_limit_s: float | None = None) -> None:
        self.limit_s = TIME_LIMIT_S if time_limit_s is None else time_limit_s
        self.deadline = time.monotonic() + self.limit_s
        self.steps = self.made_so_far = 0
        # id -> (value, size) of values measured; holding the value keeps the id its own
        self.known: dict[int, tuple[Any, int]] = {}

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateBoundError(
                f"rendering took longer than {self.limit_s:g} s (the render time limit; {_DOCS})."
            )

    def tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise TemplateBoundError(
                f"the template ran more than {_n(MAX_STEPS)} loop iterations and calls in one render (the limit; "
                f"{_DOCS})."
            )
        self.check_time()

    def size(self, value: Any) -> int:
        """size_of(value); the containers measured are remembered for the rest of the render (a template cannot
        change a list or dict), the most recent few thousand of them."""
        size = size_of(value, self.known)
        while len(self.known) > 4096:
            del self.known[next(iter(self.known))]
        return size

    def text(self, value: Any) -> int:
        return len(value) if isinstance(value, str) else self.size(value)

    def hold(self, value: Any, what: What, size: int | None = None) -> Any:
        """A value the template names or makes: refused past MAX_SIZE, else remembered, so that a literal built
        of it (`[a, a]`) is measured in a few looks."""
        size = self.size(value) if size is None else size
        if size > MAX_SIZE:
            allow_size(size, what)
        if isinstance(value, list | tuple | dict):
            self.known[id(value)] = (value, size)
        return value

    def made(self, value: Any, what: What, inputs: tuple[Any, ...] = (), size: int | None = None) -> Any:
        """What an operation returned: refused past a bound, else counted against the render."""
        if isinstance(value, str):
            if (size := len(value)) > MAX_TEXT:
                allow_text(size, what)
        elif any(value is given for given in inputs):
            return value
        elif isinstance(value, int):
            allow_bits(value.bit_length(), what)
        elif isinstance(value, list | tuple | dict):
            allow_items(len(value), what)
            size = self.size(value) if size is None else size
            self.hold(value, what, size=size)
        self.charge(size or 1)
        return value

    def charge(self, size: int) -> None:
        self.made_so_far += size
        if self.made_so_far > MAX_MADE:
            raise TemplateBoundError(
                f"the template made more than {_n(MAX_MADE)} characters and list items in all in one render "
                f"(the limit; {_DOCS})."
            )

    def list_of(self, iterable: Any, what: What) -> list[Any]:
        """list(iterable), refused past MAX_ITEMS without reading further."""
        items = []
        for item in iterable:
            items.append(item)
            if len(items) > MAX_ITEMS:
                allow_items(len(iterable) if hasattr(iterable, "__len__") else len(items), what)
        return items


_current: contextvars.ContextVar[RenderBudget | None] = contextvars.ContextVar("render_budget", default=None)


def _budget() -> RenderBudget:
    """The budget of the render under way (outside one, e.g. constant folding at compile time, a fresh one)."""
    return _current.get() or RenderBudget()


# --- sizes predicted before an operation runs ----------------------------------------------------------------

_PERCENT = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?[hlL]?(?P<type>.)"
)
_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d+)?[,_]?(?:\.(?P<prec>\d+))?[a-zA-Z%]?")


def _field_size(value: Any, width: Any, precision: Any) -> int:
    """At most how long one formatted field is (a float's digits come on top of its precision)."""
    return max(abs(_int(width)), size_of(value) + abs(_int(precision)) + 330 * isinstance(value, float))


def percent_size(fmt: str, args: Any) -> int:
    """An upper bound on len(fmt % args); mismatched arguments are left for Python's own error."""
    positional = iter(args if isinstance(args, tuple) else (args,))
    total = len(fmt)
    for match in _PERCENT.finditer(fmt):
        if match["type"] != "%" and total <= MAX_TEXT:
            width = next(positional, 0) if match["width"] == "*" else int(match["width"] or 0)
            precision = next(positional, 0) if match["prec"] == "*" else int(match["prec"] or 0)
            keyed = match["key"] is not None and isinstance(args, Mapping)
            total += _field_size(args.get(match["key"]) if keyed else next(positional, ""), width, precision)
    return total


def _replace_size(b: RenderBudget, s: Any, old: Any, new: Any, count: Any) -> int:
    if not isinstance(s, str) or not isinstance(old, str) or not isinstance(new, str):
        return b.text(s) * max(b.text(new), 1)  # replacing in the text of another value: any char may match
    n = s.count(old) if old else len(s) + 1
    return len(s) + (min(n, count) if isinstance(count, int) and count >= 0 else n) * max(
        len(new) - len(old), 0
    )


def _sum_size(b: RenderBudget, items: list[Any], start: Any, what: What) -> int:
    """Summing lists makes a new list at each step: the result is bounded, and each step's copy is counted."""
    if isinstance(start, list | tuple):  # numbers grow by a few bits, and Python refuses to sum strings
        allow_items(total := len(start) + sum(len(i) for i in items if isinstance(i, list | tuple)), what)
        b.charge(total * len(items))
    return 0


def _json_size(b: RenderBudget, value: Any, indent: Any, what: What) -> int:
    """The length of tojson's output. Indented, each line holds indent x depth spaces, which the value's size
    does not bound: the output is counted as the encoder makes it (its pieces are short), stopping at the cap."""
    if indent is None:
        return b.text(value)
    _refuse_past(
        16, len(indent) if isinstance(indent, str) else _int(indent), what, "indent by {}", "indent by {}"
    )
    total = 0
    for piece in json.JSONEncoder(indent=indent, sort_keys=True).iterencode(value):
        if (total := total + len(piece)) > MAX_TEXT:
            break
    return total


def _pad(width: Any) -> int:
    return len(width) if isinstance(width, str) else max(_int(width), 0)


def _pieces(b: RenderBudget, count: Any, what: What) -> int:
    allow_items(_int(count), what)
    return 0


_Arg = Callable[[int, str, Any], Any]  # (position, keyword, default) -> the argument given
# What a growing str method or filter would make, in characters, from its value and arguments; those that make
# lists refuse by themselves. Filters not named here make at most what they are given.
_GROWS: dict[str, Callable[[RenderBudget, Any, _Arg, What], int]] = {
    **dict.fromkeys(
        ["center", "ljust", "rjust", "zfill"],
        lambda b, v, arg, what: max(b.text(v), _int(arg(0, "width", 0))),
    ),
    "replace": lambda b, v, arg, what: _replace_size(
        b, v, arg(0, "old", ""), arg(1, "new", ""), arg(2, "count", -1)
    ),
    "expandtabs": lambda b, v, arg, what: len(v) + v.count("\t") * max(_int(arg(0, "tabsize", 8)), 0),
    "indent": lambda b, v, arg, what: (
        b.text(v) + (v.count("\n") + 1 if isinstance(v, str) else 1) * _pad(arg(0, "width", 4))
    ),
    "wordwrap": lambda b, v, arg, what: (b.text(v) + 1) * (1 + len(str(arg(2, "wrapstring", None) or "\n"))),
    "format": lambda b, v, arg, what: (
        b.text(v) if b.text(v) > MAX_TEXT else percent_size(str(v), arg(-1, "", ()))
    ),
    "join": lambda b, v, arg, what: b.text(v) + b.text(arg(0, "d", "")) * len(v),
    "sum": lambda b, v, arg, what: _sum_size(b, v, arg(1, "start", 0), what),
    "batch": lambda b, v, arg, what: _pieces(b, arg(0, "linecount", 0), what),
    "slice": lambda b, v, arg, what: _pieces(b, arg(0, "slices", 0), what),
    "tojson": lambda b, v, arg, what: _json_size(b, v, arg(0, "indent", None), what),
    **dict.fromkeys(["string", "upper", "title", "capitalize"], lambda b, v, arg, what: b.text(v)),
}
# The filters a template may use. Left out: lipsum-like generators, the HTML filters (escape, safe, striptags,
# urlize, urlencode, xmlattr), pprint, and random (a prompt must not change from one run to the next).
_FILTERS = (
    "abs attr batch capitalize center count d default dictsort filesizeformat first float format groupby indent "
    "int items join last length list lower map max min reject rejectattr replace reverse round select "
    "selectattr slice sort string sum title tojson trim truncate unique upper wordcount wordwrap"
).split()
_METHODS = {  # the methods of plain values a template may call; the others are unsafe attributes
    str: frozenset(
        "capitalize casefold center count endswith expandtabs find format format_map index isalnum isalpha "
        "isascii isdecimal isdigit isidentifier islower isnumeric isprintable isspace istitle isupper join ljust "
        "lower lstrip partition removeprefix removesuffix replace rfind rindex rjust rpartition rsplit rstrip "
        "split splitlines startswith strip swapcase title upper zfill".split()
    ),
    dict: frozenset({"get", "items", "keys", "values"}),
    list | tuple: frozenset({"count", "index"}),
    int | float: frozenset({"bit_length", "is_integer"}),
}


def _arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Arg:
    """Looks an argument up by position or keyword; position -1 gives the keywords, else all positionals."""
    return lambda i, key, default: (
        (kwargs or args) if i < 0 else args[i] if len(args) > i else kwargs.get(key, default)
    )


def check_binop(b: RenderBudget, operator: str, left: Any, right: Any, what: What) -> int | None:
    """Refuse `left <operator> right` past a bound before it runs; returns the size of a list it makes."""
    if operator == "*":
        seq, times = (right, left) if isinstance(left, int) and not isinstance(right, int) else (left, right)
        if isinstance(times, int) and isinstance(seq, str):
            allow_text(len(seq) * max(times, 0), what)
        elif isinstance(times, int) and isinstance(seq, list | tuple):
            allow_items(len(seq) * max(times, 0), what)
            allow_size(size := b.size(seq) * max(times, 0), what)
            return size
        elif isinstance(left, int) and isinstance(right, int):
            allow_bits(left.bit_length() + right.bit_length(), what)
    elif operator == "+":
        if isinstance(left, str) and isinstance(right, str):
            allow_text(len(left) + len(right), what)
        elif isinstance(left, list | tuple) and isinstance(right, list | tuple):
            allow_items(len(left) + len(right), what)
            allow_size(size := b.size(left) + b.size(right), what)
            return size
        elif isinstance(left, int) and isinstance(right, int):
            allow_bits(max(left.bit_length(), right.bit_length()) + 1, what)
    elif (
        operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1
    ):
        allow_bits(left.bit_length() * min(right, 2**62), what)
    elif operator == "%" and isinstance(left, str):
        allow_text(percent_size(left, right), what)
    return None


class _BoundedFormatter(SandboxedFormatter):
    """str.format / format_map with each field, and the whole result, bounded before it is made."""

    made = 0

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion:
            allow_text(size_of(value), f"`!{conversion}` of {_short(value)} in str.format")
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        spec = _SPEC.fullmatch(format_spec)
        self.made += _field_size(value, *(int(spec[g] or 0) if spec else 0 for g in ("width", "prec")))
        allow_text(self.made, f"str.format with the field spec {format_spec[:20]!r}")
        return super().format_field(value, format_spec)


def _filter_call(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    shown = ", ".join([*map(_short, args), *(f"{k}={_short(v)}" for k, v in kwargs.items())])
    return f"the {name} filter (`|{name}({shown})`)"


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(func)  # keeps Jinja's pass_context / pass_environment marking
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.tick()
        lead = 0  # the context or environment Jinja passes first
        while lead < len(args) and isinstance(args[lead], Context | EvalContext | jinja2.Environment):
            lead += 1
        what = partial(_filter_call, name, args[lead + 1 :], kwargs)
        if name in _GROWS and lead < len(args):
            if name in ("join", "sum"):  # the items are read once, here, and handed on as a list
                args = (*args[:lead], budget.list_of(args[lead], what), *args[lead + 1 :])
            allow_text(_GROWS[name](budget, args[lead], _arguments(args[lead + 1 :], kwargs), what), what)
        return budget.made(func(*args, **kwargs), what, inputs=args)

    return bounded


# --- loops and named values ----------------------------------------------------------------------------------


class _Counted:
    """A loop's iterable whose every iteration counts against the render (`loop.length` still works)."""

    def __init__(self, inner: Any, budget: RenderBudget) -> None:
        self.inner, self.budget = inner, budget

    def __iter__(self) -> Iterator[Any]:
        for item in self.inner:
            self.budget.tick()
            yield item

    def __len__(self) -> int:
        return len(self.inner)  # a TypeError for iterators makes Jinja count the items instead


def _named(what: str, value: Any) -> str:
    return f"{what} ({_short(value)})"


def _loop_filter(iterable: Any) -> _Counted:
    budget = _budget()
    return _Counted(budget.hold(iterable, partial(_named, "the iterable of a loop", iterable)), budget)


def _value_filter(value: Any) -> Any:
    return _budget().hold(value, partial(_named, "the value of a {% set %} or {% with %}", value))


class _NamedValues(Extension):
    """`{% for x in E %}` -> `{% for x in (E)|bounded_loop %}`; `{% set x = E %}` and `{% with x = E %}` ->
    `... = (E)|bounded_value`. A filter, unlike a name, cannot be rebound by a template."""

    def filter_stream(self, stream: TokenStream) -> Iterable[Token]:
        tag = None  # the statement being read: "for", "set" or "with" (None when its value is done)
        wrapping = ""  # the filter the value being read goes to, once its opening parenthesis is out
        depth, previous = 0, ""  # brackets open in the statement; the type of the token before
        for token in stream:
            if previous == "block_begin":
                tag = token.value if token.test_any("name:for", "name:set", "name:with") else None
            ends = token.type == "block_end" or (tag == "with" and token.type == "comma")
            ends |= tag == "for" and token.test_any("name:if", "name:recursive")
            if wrapping and depth == 0 and ends:
                yield from (
                    Token(token.lineno, *t) for t in (("rparen", ")"), ("pipe", "|"), ("name", wrapping))
                )
                wrapping, tag = "", tag if tag == "with" else None
            depth += (token.type in ("lparen", "lbracket", "lbrace")) - (
                token.type in ("rparen", "rbracket", "rbrace")
            )
            yield token
            previous = token.type
            if token.type == "block_end":
                tag, depth = None, 0
            elif depth == 0 and not wrapping and token.test("name:in" if tag == "for" else "assign") and tag:
                wrapping = "bounded_loop" if tag == "for" else "bounded_value"
                yield Token(token.lineno, "lparen", "(")


# --- the environment -----------------------------------------------------------------------------------------


def _finalize(value: Any) -> Any:
    """Every `{{ ... }}` passes here before it becomes text: a huge value is refused before str() runs."""
    if value is None or isinstance(value, int | float) or (isinstance(value, str) and len(value) <= MAX_TEXT):
        return value  # numbers are bounded where they are made; concat counts the text
    budget = _budget()
    budget.check_time()
    if (size := budget.text(value)) > MAX_TEXT:
        raise TemplateBoundError(
            f"writing out {_short(value)} would make {'' if isinstance(value, str) else 'about '}{_n(size)} "
            f"characters; a template may write at most {_n(MAX_TEXT)} at once ({_DOCS})."
        )
    return value


def _name(func: Any) -> str:
    if isinstance(func, LoopContext):
        return "loop"
    return getattr(func, "__name__", None) or getattr(func, "name", None) or type(func).__name__


def _call(func: Any) -> str:
    owner = getattr(func, "__self__", None)
    return f"str.{_name(func)}() on {_short(owner)}" if isinstance(owner, str) else f"calling {_name(func)}"


def _operation(left: Any, operator: str, right: Any) -> str:
    return f"`{_short(left)} {operator} {_short(right)}`"


def _argument(func: Any, value: Any) -> str:
    return f"an argument of {_name(func)} ({_short(value)})"


def _range(*args: int) -> range:
    allow_items(len(range(*args)), f"range({', '.join(map(str, args))})")
    return range(*args)


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox with every operation bounded (module docstring)."""

    intercepted_binops = frozenset({"*", "%", "**", "+"})

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(finalize=_finalize, extensions=[_NamedValues], **kwargs)
        self.filters = {name: _bounded_filter(name, self.filters[name]) for name in _FILTERS}
        self.filters.update(bounded_loop=_loop_filter, bounded_value=_value_filter)
        self.globals.pop("lipsum", None)  # lipsum(n=10**9) writes paragraphs without end
        self.globals["range"] = _range

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        allowed = next((names for kind, names in _METHODS.items() if isinstance(obj, kind)), None)
        if allowed is not None and callable(value) and attr not in allowed:
            return False
        return super().is_safe_attribute(obj, attr, value)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        budget = _budget()
        budget.check_time()
        what = partial(_operation, left, operator, right)
        size = check_binop(budget, operator, left, right, what)
        return budget.made(super().call_binop(context, operator, left, right), what, size=size)

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        budget = _budget()
        budget.tick()
        # a macro, namespace() or cycler() keeps its arguments where the template reads them; a dict keyword's
        # values are measured one by one (Jinja passes a loop's variables so, in a dict it changes as it goes)
        for value in (
            *args,
            *(p for v in kwargs.values() for p in (v.values() if type(v) is dict else (v,))),
        ):
            if isinstance(value, _CONTAINERS):  # nothing else holds shared parts
                budget.hold(value, partial(_argument, __obj, value))
        owner = getattr(__obj, "__self__", None)
        what = partial(_call, __obj)
        if isinstance(owner, str) and (name := __obj.__name__) in ("format", "format_map"):
            __obj = __self._format(owner, name)  # a str.format reached without attribute access
        elif isinstance(owner, str) and name == "join" and len(args) == 1:
            args = (budget.list_of(args[0], what),)
            allow_text(budget.text(args[0]) + len(owner) * len(args[0]), what)
        elif isinstance(owner, str) and name in _GROWS:
            allow_text(_GROWS[name](budget, owner, _arguments(args, kwargs), what), what)
        return budget.made(super().call(__context, __obj, *args, **kwargs), what, inputs=args)

    def getattr(self, obj: Any, attribute: str) -> Any:
        _budget().check_time()
        if isinstance(obj, str) and attribute in ("format", "format_map"):
            return self._format(obj, attribute)
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _budget().check_time()
        if isinstance(obj, str) and argument in ("format", "format_map"):
            return self._format(obj, argument)
        return super().getitem(obj, argument)

    def _format(self, text: str, method: str) -> Callable[..., str]:
        def bounded_format(*args: Any, **kwargs: Any) -> str:
            if method == "format_map":
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument")
                kwargs, args = args[0], ()
            return _BoundedFormatter(self).vformat(text, args, kwargs)

        return bounded_format

    def concat(self, pieces: Iterable[str]) -> str:
        """Joins a render's output (streamed, so the error is raised at the template line that passed the cap)
        and each block's, macro's and imported template's text."""
        parts, total = [], 0
        for piece in pieces:
            total += len(piece)
            if total > MAX_TEXT:
                streamed = hasattr(pieces, "throw")
                whose = "the rendered prompt" if streamed else "the text of a block or macro"
                err = TemplateBoundError(f"{whose} passed {_n(MAX_TEXT)} characters (the limit; {_DOCS}).")
                if streamed:
                    pieces.throw(err)  # type: ignore[attr-defined]
                raise err
            parts.append(piece)
        return "".join(parts)


def render_bounded(
    template: jinja2.Template, context: Mapping[str, Any], time_limit_s: float | None = None
) -> str:
    """template.render(**context) within one render's budget."""
    token = _current.set(RenderBudget(time_limit_s))
    try:
        return template.render(**context)
    finally:
        _current.reset(token)


def evaluate_bounded(expression: Callable[..., Any], context: Mapping[str, Any]) -> Any:
    """A compiled expression (label_space, a judge role's `when`) evaluated within one render's budget."""
    token = _current.set(RenderBudget())
    try:
        return expression(**context)
    finally:
        _current.reset(token)
