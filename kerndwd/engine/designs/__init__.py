"""Designs: how a problem becomes a majoriser, what each supports, and the registry.

* :mod:`.base` -- :class:`Design`, :func:`register_design`, :func:`build_majoriser`;
* :mod:`.exact` -- the exact kernel with R's choice of solver (the default);
* :mod:`.features` -- kernel approximations: :class:`FeatureDesign`, Nystrom
  (``approx="nystroem"``) and random Fourier features (``approx="rff"``);
* :mod:`.bcd` -- the exact kernel by block coordinate descent (``solver="bcd"``);
* :mod:`.auto` -- ``solver="auto"``: the exact kernel's solver chosen from the rows and the memory;
* :mod:`.cg` -- the exact kernel on the kernel matrix by Newton's method with
  Nystrom-preconditioned conjugate gradients (``solver="cg"``);
* :mod:`.feature_bcd` -- the kernel approximations by block coordinate descent
  (``approx="nystroem"`` or ``"rff"`` with ``solver="bcd"``);
* :mod:`.dask` -- the forms of rows held by a Dask cluster (linear and feature
  designs on such rows).
* :mod:`.dask_bcd` -- ``solver="bcd"`` on rows held by a Dask cluster: the
  sweeps of :mod:`.bcd` run beside the row chunks.
"""

from . import auto, bcd, cg, exact, features  # noqa: F401  (register the built-in designs)
from .base import Design, build_majoriser, design_class, design_names, make_design, register_design
from .auto import AutoDesign
from .bcd import BlockCoordinateDesign
from .cg import KernelCGDesign
from .exact import ExactDesign
from .features import FeatureDesign, FourierDesign, NystroemDesign
from .feature_bcd import FourierBlockDesign, NystroemBlockDesign, feature_block_design

__all__ = ["AutoDesign", "BlockCoordinateDesign", "Design", "KernelCGDesign", "ExactDesign", "FeatureDesign", "FourierDesign", "NystroemDesign",
           "FourierBlockDesign", "NystroemBlockDesign", "feature_block_design",
           "build_majoriser", "design_class", "design_names", "make_design", "register_design"]
