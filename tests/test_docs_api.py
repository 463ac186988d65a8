"""Every public function and class has a numpydoc docstring with the sections
the API reference promises: Parameters (when it takes any), Returns (when it
returns something), Raises (when its own body raises) and Examples (for the
public functions and classes; their public methods need the first three).

The examples themselves run in the doctest step,
``python3 -m pytest --doctest-modules kerndwd``.
"""

import ast
import importlib
import inspect
import textwrap

import pytest

docscrape = pytest.importorskip("numpydoc.docscrape")

#: The public API: these modules' ``__all__`` (or the names listed).
PUBLIC = {
    "kerndwd": None,
    "kerndwd.engine": None,
    "kerndwd.calibration": None,
    "kerndwd.datasets": None,
    "kerndwd.plot": None,
    "kerndwd.estimator": ["DWDClassifier"],
    "kerndwd.estimator_cv": ["DWDClassifierCV"],
}


def _public_objects():
    seen = {}
    for modname, names in PUBLIC.items():
        mod = importlib.import_module(modname)
        for name in names or mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                seen.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return sorted(seen.items())


def _public_methods(cls):
    for name, member in vars(cls).items():
        if not name.startswith("_") and inspect.isfunction(member):
            yield f"{cls.__module__}.{cls.__qualname__}.{name}", member


def _raises_in_body(obj):
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(obj))).body[0]
    except (OSError, TypeError):
        return False
    if isinstance(node, ast.ClassDef):  # the class raises through its constructor
        bodies = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name in ("__init__", "__post_init__")]
    else:
        bodies = [node]
    return any(isinstance(n, ast.Raise) for b in bodies for n in ast.walk(b))


def _returns_value(func):
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(func))).body[0]
    except (OSError, TypeError):
        return False
    return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(node))


def _gaps(obj, need_examples):
    doc = inspect.getdoc(obj)
    if not doc:
        return ["a docstring"]
    parsed = docscrape.NumpyDocString(doc)
    gaps = []
    try:
        params = [p for p in inspect.signature(obj).parameters if p not in ("self", "cls")]
    except (TypeError, ValueError):
        params = []
    if params and not parsed["Parameters"] and not (inspect.isclass(obj) and parsed["Attributes"]):
        gaps.append("Parameters")
    if inspect.isfunction(obj) and _returns_value(obj) and not (parsed["Returns"] or parsed["Yields"]):
        gaps.append("Returns")
    if _raises_in_body(obj) and not parsed["Raises"]:
        gaps.append("Raises")
    if need_examples and not parsed["Examples"]:
        gaps.append("Examples")
    return gaps


OBJECTS = _public_objects()


def test_the_public_api_is_found():
    assert len(OBJECTS) > 50


@pytest.mark.parametrize("qualname,obj", OBJECTS, ids=[q for q, _ in OBJECTS])
def test_public_docstring_sections(qualname, obj):
    gaps = _gaps(obj, need_examples=True)
    if inspect.isclass(obj):
        gaps += [f"{m}: {g}" for m, meth in _public_methods(obj) for g in _gaps(meth, need_examples=False)]
    assert not gaps, f"{qualname} lacks {', '.join(gaps)}"
