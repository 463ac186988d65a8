"""Shared test configuration: the hypothesis profiles, and Dask's thread pool in forked processes.

Two profiles are registered and one is chosen with the environment variable
``HYPOTHESIS_PROFILE`` (default ``ci``):

* ``ci``  -- derandomized (the same examples on every run and machine), no
  example database, no per-example deadline, a modest number of examples;
  this is what the default ``python3 -m pytest`` run uses.
* ``random`` -- random examples without a database, drawn from the seed
  given by ``--hypothesis-seed`` (``.ci/random_properties.py`` picks one,
  prints it, and runs the property tests with it until its time is up);
* ``dev`` -- random examples, many more of them, and hypothesis' local
  example database so that a counterexample found once is replayed first on
  the next run: ``HYPOTHESIS_PROFILE=dev python3 -m pytest tests/test_properties_*.py``.

Tests that fit models read ``settings().max_examples`` to scale their own
budget, so they too run longer under ``dev``.  ``HYPOTHESIS_MAX_EXAMPLES``
overrides the chosen profile's number of examples (a long fuzz session:
``HYPOTHESIS_PROFILE=dev HYPOTHESIS_MAX_EXAMPLES=16000 python3 -m pytest tests/test_fuzz.py``).
"""

import os

import pytest
from hypothesis import HealthCheck, settings


def _fresh_dask_pools():
    """Forget Dask's thread pools in a forked child.

    A process forked after a Dask computation (mutmut forks one child per
    mutant after its clean run of the tests) inherits the threaded
    scheduler's pool object but none of its threads: the pool believes it
    is full and every later ``compute`` waits for ever.  Dropping the pools
    makes the child start its own on first use.
    """
    import sys

    threaded = sys.modules.get("dask.threaded")
    if threaded is not None:
        threaded.default_pool = None
        threaded.pools.clear()


os.register_at_fork(after_in_child=_fresh_dask_pools)

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=60,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "random",
    derandomize=False,
    database=None,
    deadline=None,
    max_examples=200,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev",
    derandomize=False,
    deadline=None,
    max_examples=2000,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)

_profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if _profile not in ("ci", "random", "dev"):
    raise ValueError(f"HYPOTHESIS_PROFILE must be 'ci', 'random' or 'dev', got {_profile!r}")
_examples = os.environ.get("HYPOTHESIS_MAX_EXAMPLES")
if _examples:  # a longer (or shorter) run of a profile, e.g. a fuzz session of ten minutes
    settings.register_profile(f"{_profile}-n", settings.get_profile(_profile), max_examples=int(_examples))
    _profile = f"{_profile}-n"
settings.load_profile(_profile)


@pytest.fixture
def r_rule_fit():
    """``kerndwd.fit`` under R's stopping rule, for tests that compare with it: the
    returned function fits, and asserts that the one warning of R's rule
    (columns possibly far from the optimum) came exactly when
    ``path.far_from_optimal`` is non-empty, and that nothing else warned.
    ``via`` fits with another function of the same answer (e.g. the engine's)."""
    import warnings

    import kerndwd

    def fit(*args, via=None, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            path = (kerndwd.fit if via is None else via)(*args, **kwargs)
        far = [w for w in caught if issubclass(w.category, kerndwd.DWDConvergenceWarning)
               and str(w.message).startswith("R's stopping rule (stop='step'")]
        assert len(far) == (1 if path.far_from_optimal.size else 0), [str(w.message) for w in caught]
        assert len(caught) == len(far), [str(w.message) for w in caught]
        return path

    return fit
