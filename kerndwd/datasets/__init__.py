"""The four UCI data sets of the paper's Table 2, and the paper's simulations.

Loaders
-------
``load_bupa``, ``load_haberman``, ``load_sonar`` and ``load_vertebral`` return
``(X, y)`` with ``y`` in {-1, +1}.  A data set is looked for, in this order:

1. the ``data_home`` argument (a folder);
2. the folder named by the ``KERNDWD_DATA`` environment variable;
3. the user cache folder, ``$XDG_CACHE_HOME/kerndwd`` (default
   ``~/.cache/kerndwd``);
4. otherwise the original UCI file is downloaded once into that cache folder.

In each folder either the CSV form (``bupa.csv``: a header row, the raw UCI
values unchanged, the UCI class field last as ``y``) or the original UCI file
(``bupa.data``, ``haberman.data``, ``sonar.all-data``, ``column_2C.dat``) is
accepted.  Every file is checked against a published sha256 before it is
used, so a damaged or different version of a data set is refused rather
than silently giving other numbers.  The hashes come from the data sets'
provenance notes (the CSV hash for the CSV form, the source hash for the UCI
file).

Simulations
-----------
``make_table1_example`` (the four timing examples of Table 1),
:class:`GaussianMixture` / ``make_mixture`` (Figure 1, with its Bayes rule and
a Monte-Carlo Bayes error), and ``make_data_piling`` (Figure 2).  Each takes a
``random_state`` (an int, ``None`` or a ``numpy.random.Generator``).
"""

from .simulations import (FIGURE1_CENTRES_SEED, PAPER_BAYES_ERROR, GaussianMixture, make_data_piling, make_mixture,
                          make_table1_example)
from .uci import DATA_ENV, DatasetNotFoundError, get_data_home, load_bupa, load_dataset, load_haberman, load_sonar, \
    load_vertebral

__all__ = [
    "DatasetNotFoundError",
    "GaussianMixture",
    "get_data_home",
    "load_bupa",
    "load_dataset",
    "load_haberman",
    "load_sonar",
    "load_vertebral",
    "make_data_piling",
    "make_mixture",
    "make_table1_example",
    "PAPER_BAYES_ERROR",
    "FIGURE1_CENTRES_SEED",
    "DATA_ENV",
]
