"""The majoriser families: how one MM step is solved for each form.

* :mod:`.linear` -- ``f = b0 + X beta`` (or features): eigenbasis (R's
  ``ldwd``) and Cholesky (``wldwd``);
* :mod:`.kernel` -- ``f = b0 + K alpha``: eigenbasis (``kdwd``) and Cholesky (``wkdwd``);
* :mod:`.iterative` -- sparse or very wide linear forms, by conjugate gradients;
* :mod:`.blocks` -- the exact kernel by block coordinate sweeps, without ``K``;
* :mod:`.feature_blocks` -- kernel approximations by sweeps over blocks of
  features or landmarks;
* :mod:`.contract` -- what every majoriser promises.
"""

from .contract import LinearPenalty, Majoriser, StepFn, check_majoriser

__all__ = ["LinearPenalty", "Majoriser", "StepFn", "check_majoriser"]
