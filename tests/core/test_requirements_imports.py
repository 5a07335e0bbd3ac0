"""The preflight import check finds every import a file makes, at any depth (function, class, with, match,
except bodies), leaves out the optional ones (under a try that catches ImportError, or TYPE_CHECKING), and
resolves relative imports."""

from __future__ import annotations

from audioeval.run.requirements import _imports_of

SOURCE = """
import os
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import typed_only
try:
    import optional_one
except ImportError:
    optional_one = None
try:
    import needed_in_try
except KeyError:
    pass

def f(x):
    import in_function
    with open(x) as handle:
        from in_with import thing
    match x:
        case 1:
            import in_match
    try:
        pass
    except ValueError:
        import in_handler
    finally:
        import in_finally
    return [__import__("not_an_import_statement")]

class C:
    from . import sibling
    from ..parent import other
    if typing.TYPE_CHECKING:
        import typed_too
    else:
        import in_else
"""


def test_every_required_import_at_any_depth_and_no_optional_one(tmp_path):
    path = tmp_path / "mod.py"
    path.write_text(SOURCE)
    found = {module for module, _line in _imports_of(path, "audioeval.run")}
    required = {"os", "typing", "needed_in_try", "in_function", "in_with", "in_match", "in_handler"}
    required |= {"in_finally", "audioeval.run", "audioeval.run.sibling", "audioeval.parent", "in_else"}
    assert required <= found
    assert not found & {"typed_only", "optional_one", "typed_too", "not_an_import_statement"}
