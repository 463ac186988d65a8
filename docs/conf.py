"""Sphinx configuration of the kerndwd documentation.

Build with ``python -m sphinx -W -b html docs docs/_build/html`` from the
repository root; the example gallery (``examples/``) runs while it builds.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MPLBACKEND", "Agg")

import kerndwd  # noqa: E402

project = "kerndwd"
author = "The kerndwd developers"
copyright = "2026, the kerndwd developers"
release = kerndwd.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    # Mathematics without the network: sphinx-mathjax-offline is a pure
    # wheel on PyPI that carries MathJax 3.2.2 and copies it into
    # _build/html/_static/mathjax, pointing mathjax_path there, so neither
    # the build nor a reader of the built pages fetches anything from a CDN.
    # It installs with the rest of the "docs" extra from PyPI alone; the
    # alternatives need Debian packages as well (imgmath: a LaTeX toolchain
    # and dvipng, hundreds of MB, and bitmaps of each formula; libjs-mathjax:
    # MathJax 2 at a Debian path that the build would have to copy itself).
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.json", "**.codeobj.json"]
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

autosummary_generate = True
templates_path = ["_templates"]
autodoc_default_options = {"members": True, "inherited-members": False}
# the signatures' type hints name numpy.typing.ArrayLike rather than spell out its union
autodoc_type_aliases = {"ArrayLike": "numpy.typing.ArrayLike"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    # no repr of a script's last expression (ax.legend(), ax.set_title(...))
    # under its figure
    "capture_repr": (),
    # no pages of execution times: they load their table scripts from a CDN
    "write_computation_times": False,
}



def _skip_sklearn_plumbing(app, what, name, obj, skip, options):
    # scikit-learn adds set_{fit,score,...}_request to every estimator class;
    # their docstrings refer to scikit-learn's own glossary
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_sklearn_plumbing)


html_theme = "pydata_sphinx_theme"
html_title = "kerndwd"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # the gallery's code cells get the width of the right-hand column
    "secondary_sidebar_items": {
        "**": ["page-toc", "sourcelink"],
        **{f"auto_examples/{path.stem}": [] for path in sorted((ROOT / "examples").glob("plot_*.py"))},
    },
}
# pages without subpages: no empty "Section Navigation" column, so that their
# wide tables get the room
html_sidebars = {page: [] for page in ("index", "getting-started", "r-users", "model", "solvers", "scaling",
                                         "validation", "reproductions", "benchmarks", "r-behaviour")}
