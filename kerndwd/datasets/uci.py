"""The four UCI data sets of the paper's Table 2.

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
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.request import urlopen

import numpy as np

__all__ = ["DatasetNotFoundError", "get_data_home", "load_dataset", "load_bupa", "load_haberman", "load_sonar",
           "load_vertebral", "DATA_ENV"]

#: Environment variable naming a folder that holds the data files.
DATA_ENV = "KERNDWD_DATA"
#: Seconds to wait for the UCI server before giving up.
DOWNLOAD_TIMEOUT = 60
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"


class DatasetNotFoundError(OSError):
    """No local copy of a data set exists and it could not be downloaded.

    A subclass of :class:`OSError`; its message says where the files were
    looked for and where to put them.

    Examples
    --------
    >>> import tempfile
    >>> from kerndwd.datasets import DatasetNotFoundError, load_sonar
    >>> with tempfile.TemporaryDirectory() as empty:  # doctest: +SKIP
    ...     load_sonar(data_home=empty, download=False)
    Traceback (most recent call last):
    ...
    kerndwd.datasets.DatasetNotFoundError: data set 'sonar' not found (...)
    """


@dataclass(frozen=True)
class _Source:
    name: str
    csv_name: str
    csv_sha256: str
    raw_name: str          # the UCI file name (what data_home may hold instead of the CSV)
    raw_sha256: str
    url: str
    member: str | None     # file inside a zip archive, when the URL is a zip
    columns: tuple
    n_features: int        # leading columns that form X
    positive: str          # the raw class value mapped to +1 (others to -1)
    label_column: str      # the raw field that defines y
    raw_sep: str           # field separator of the UCI file


_SOURCES = {
    "bupa": _Source(
        "bupa", "bupa.csv", "3e8ccd77419639e4bb57b17cdb468d13cecb90c101f5806af5a6bfe6b9d61961",
        "bupa.data", "a166a3e7a6f4dc41aaaedc59a107e57d8adcaeb8821f0873d756982f1ea74c92",
        _UCI + "liver-disorders/bupa.data", None,
        ("mcv", "alkphos", "sgpt", "sgot", "gammagt", "drinks", "selector", "y"),
        6, "2", "selector", ","),
    "haberman": _Source(
        "haberman", "haberman.csv", "17d5a336b1b1d9483d01d236f29df71fc4243dccbf90f69269628c29422e49e5",
        "haberman.data", "ce2ae090e5d28fb9d57b8c0d237f95897b7faf21408da73d6d8282f91df5ddeb",
        _UCI + "haberman/haberman.data", None,
        ("age", "year_of_operation", "positive_axillary_nodes", "y"),
        3, "2", "y", ","),
    "sonar": _Source(
        "sonar", "sonar.csv", "17ca160af11bfd230a3bb9adc9ffc79cb38e7f0d5062e95418f4fabc620ea441",
        "sonar.all-data", "e90434cdbf00fcf93ffa911fe447ae25606979658e60f1d32e155c3b5240234d",
        _UCI + "undocumented/connectionist-bench/sonar/sonar.all-data", None,
        tuple(f"V{j}" for j in range(1, 61)) + ("y",),
        60, "M", "y", ","),
    "vertebral": _Source(
        "vertebral", "vertebral.csv", "acbdcec84e98ffe7a0a64ee990da39d77034a4a06bfa58c3b999a48a5a62fcf6",
        "column_2C.dat", "79cab246a0d4a1863c27095e30729aea5ce2b5e7241e5c01d7e31a55173cf6d2",
        _UCI + "00212/vertebral_column_data.zip", "column_2C.dat",
        ("pelvic_incidence", "pelvic_tilt", "lumbar_lordosis_angle", "sacral_slope",
         "pelvic_radius", "degree_spondylolisthesis", "y"),
        6, "AB", "y", " "),
}


# --------------------------------------------------------------------------
# locating, verifying and converting files
# --------------------------------------------------------------------------
def get_data_home():
    """The user cache folder: ``$XDG_CACHE_HOME/kerndwd`` or ``~/.cache/kerndwd``.

    Returns
    -------
    pathlib.Path
        The folder (it need not exist yet); downloads are stored there.

    Examples
    --------
    >>> from kerndwd.datasets import get_data_home
    >>> get_data_home().name
    'kerndwd'
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kerndwd"


#: Bytes read at a time when a local file is hashed before it is read whole.
_HASH_CHUNK = 1 << 16


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path):
    """sha256 of a file read in chunks: a wrong or huge file in a data folder
    is refused without being loaded into memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _verify(data, expected, where, got=None):
    got = _sha256(data) if got is None else got
    if got != expected:
        raise ValueError(
            f"{where} has sha256 {got}, expected {expected}: the file is damaged or a different "
            "version of the data set; delete it (it will be fetched again) or replace it with the "
            "original UCI file"
        )


def _raw_to_csv(src, raw):
    """The CSV form of an original UCI file: header row, values unchanged,
    LF line ends, no blank lines; BUPA gets ``y`` = copy of ``selector``."""
    lines = [ln.strip() for ln in raw.decode("ascii").splitlines()]
    rows = [ln.split() if src.raw_sep == " " else ln.split(",") for ln in lines if ln]
    if src.name == "bupa":
        rows = [r + [r[-1]] for r in rows]
    out = io.StringIO()
    out.write(",".join(src.columns) + "\n")
    for r in rows:
        out.write(",".join(r) + "\n")
    return out.getvalue().encode("ascii")


def _read_local(src, folder):
    """CSV bytes from ``folder`` (CSV form or the UCI file), or None if absent."""
    folder = Path(folder)
    csv_path = folder / src.csv_name
    if csv_path.is_file():
        _verify(None, src.csv_sha256, str(csv_path), got=_file_sha256(csv_path))
        return csv_path.read_bytes()
    raw_path = folder / src.raw_name
    if raw_path.is_file():
        _verify(None, src.raw_sha256, str(raw_path), got=_file_sha256(raw_path))
        return _raw_to_csv(src, raw_path.read_bytes())
    return None


def _download(src, cache):
    """Fetch the UCI file, verify it, store the CSV form in ``cache``."""
    try:
        with urlopen(src.url, timeout=DOWNLOAD_TIMEOUT) as resp:
            payload = resp.read()
    except OSError as exc:  # URLError, timeouts and refused connections are OSErrors
        raise DatasetNotFoundError(_not_found_message(src, cache, f"download failed: {exc}")) from exc
    if src.member is not None:
        try:
            with zipfile.ZipFile(io.BytesIO(payload)) as zf:
                payload = zf.read(src.member)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise ValueError(f"{src.url} is not a zip archive holding {src.member}: {exc}") from exc
    _verify(payload, src.raw_sha256, src.url)
    data = _raw_to_csv(src, payload)
    _verify(data, src.csv_sha256, f"the CSV form of {src.url}")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cache / (src.csv_name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, cache / src.csv_name)  # atomic: never leave half a file under the final name
    return data


def _not_found_message(src, cache, reason):
    return (
        f"data set {src.name!r} not found ({reason}). Put {src.csv_name} (the CSV form) or the "
        f"original UCI file {src.raw_name} (from {src.url}) in a folder and pass it as data_home=..., "
        f"or set the environment variable {DATA_ENV} to that folder, or place it in the cache "
        f"folder {cache}."
    )


def _csv_bytes(name, data_home=None, download=True):
    src = _SOURCES[name]
    folders = []
    if data_home is not None:
        folders.append(Path(data_home))
    if os.environ.get(DATA_ENV):
        folders.append(Path(os.environ[DATA_ENV]))
    cache = get_data_home()
    folders.append(cache)
    for folder in folders:
        data = _read_local(src, folder)
        if data is not None:
            return data
    if not download:
        looked = ", ".join(str(f) for f in folders)
        raise DatasetNotFoundError(_not_found_message(src, cache, f"looked in {looked}; download=False"))
    return _download(src, cache)


def load_dataset(name, data_home=None, as_frame=False, download=True):
    """Load one of ``"bupa"``, ``"haberman"``, ``"sonar"``, ``"vertebral"``.

    A data set is looked for in ``data_home``, then in the folder named by
    the ``KERNDWD_DATA`` environment variable, then in the cache folder
    (:func:`get_data_home`), and is otherwise downloaded once into that
    cache.  Each folder may hold the CSV form (e.g. ``bupa.csv``) or the
    original UCI file; every file is checked against a published sha256.

    Parameters
    ----------
    name : {"bupa", "haberman", "sonar", "vertebral"}
        The data set.
    data_home : str or path-like, optional
        A folder to look in first.
    as_frame : bool, default False
        Return a pandas DataFrame (the UCI field names) and a Series ``y``.
    download : bool, default True
        Download the UCI file into the cache folder when no local copy exists.

    Returns
    -------
    X : ndarray of float, shape (n, p), or pandas DataFrame
        The predictors.
    y : ndarray of float, shape (n,), or pandas Series
        -1 or +1.

    Raises
    ------
    ValueError
        An unknown ``name``, or a file whose sha256 differs from the
        published one.
    TypeError
        ``as_frame`` not a bool.
    DatasetNotFoundError
        No local copy, and ``download=False`` or the download failed.

    Examples
    --------
    >>> from kerndwd.datasets import load_dataset
    >>> X, y = load_dataset("haberman", as_frame=True)
    >>> list(X.columns), len(y)
    (['age', 'year_of_operation', 'positive_axillary_nodes'], 306)
    """
    if not isinstance(name, str) or name not in _SOURCES:
        raise ValueError(f"name must be one of {sorted(_SOURCES)}, got {name!r}")
    if not isinstance(as_frame, bool):
        raise TypeError(f"as_frame must be True or False, got {as_frame!r}")
    src = _SOURCES[name]
    data = _csv_bytes(name, data_home, download)
    reader = csv.reader(io.StringIO(data.decode("ascii")))
    header = next(reader)
    rows = list(reader)
    label = np.array([r[header.index(src.label_column)] for r in rows])
    X = np.array([r[:src.n_features] for r in rows], dtype=float)
    y = np.where(label == src.positive, 1.0, -1.0)
    if as_frame:
        import pandas as pd

        return (pd.DataFrame(X, columns=list(header[:src.n_features])),
                pd.Series(y, name="y"))
    return X, y


def load_bupa(data_home=None, as_frame=False, download=True):
    """BUPA liver disorders (UCI id 60): n = 345, p = 6; y = -1 (145) / +1 (200).

    ``X`` holds the first six fields (``mcv, alkphos, sgpt, sgot, gammagt,
    drinks``) and ``y = +1`` where the seventh field ``selector`` is 2, else
    -1: the labelling of the paper's Table 2 and of the R package's ``BUPA``
    data, kept so that the table can be reproduced.

    Caveat: ``selector`` is not a diagnosis.  The BUPA researchers made it to
    split the records into a training and a test set (McDermott & Forsyth,
    Pattern Recognition Letters 73, 2016; the UCI page now says so), and the
    data set has no liver-disorder label at all.  A classifier of this ``y``
    therefore predicts an arbitrary split, which is why every method's error
    on BUPA stays near 30%.  For a meaningful task UCI suggests thresholding
    ``drinks`` (e.g. ``drinks >= 3``) and dropping it from ``X``.

    Parameters
    ----------
    data_home : str or path-like, optional
        A folder to look in first (see :func:`load_dataset`).
    as_frame : bool, default False
        Return a pandas DataFrame and Series (needs pandas).
    download : bool, default True
        Download the UCI file into the cache folder when no local copy exists.

    Returns
    -------
    X : ndarray of float, shape (345, 6), or pandas DataFrame
        The predictors (with the UCI field names as columns when ``as_frame``).
    y : ndarray of float, shape (345,), or pandas Series
        -1 or +1.

    Raises
    ------
    DatasetNotFoundError
        No local copy, and ``download=False`` or the download failed.
    ValueError
        A file whose sha256 differs from the published one.

    See Also
    --------
    load_dataset

    Examples
    --------
    >>> from kerndwd.datasets import load_bupa
    >>> X, y = load_bupa()
    >>> X.shape, int((y > 0).sum()), int((y < 0).sum())
    ((345, 6), 200, 145)
    """
    return load_dataset("bupa", data_home, as_frame, download)


def load_haberman(data_home=None, as_frame=False, download=True):
    """Haberman's survival (UCI id 43): n = 306, p = 3 (age, year of the
    operation minus 1900, positive axillary nodes); y = +1 for "died within 5
    years" (81), -1 for "survived 5 years or longer" (225).

    The UCI file has 306 rows; the paper reports n = 305 (most likely a first
    record read as a header).  All 306 rows are returned.

    Parameters
    ----------
    data_home : str or path-like, optional
        A folder to look in first (see :func:`load_dataset`).
    as_frame : bool, default False
        Return a pandas DataFrame and Series (needs pandas).
    download : bool, default True
        Download the UCI file into the cache folder when no local copy exists.

    Returns
    -------
    X : ndarray of float, shape (306, 3), or pandas DataFrame
        The predictors (with the UCI field names as columns when ``as_frame``).
    y : ndarray of float, shape (306,), or pandas Series
        -1 or +1.

    Raises
    ------
    DatasetNotFoundError
        No local copy, and ``download=False`` or the download failed.
    ValueError
        A file whose sha256 differs from the published one.

    See Also
    --------
    load_dataset

    Examples
    --------
    >>> from kerndwd.datasets import load_haberman
    >>> X, y = load_haberman()
    >>> X.shape, int((y > 0).sum()), int((y < 0).sum())
    ((306, 3), 81, 225)
    """
    return load_dataset("haberman", data_home, as_frame, download)


def load_sonar(data_home=None, as_frame=False, download=True):
    """Sonar, mines vs. rocks (UCI id 151): n = 208, p = 60 band energies in
    [0, 1]; y = +1 for a mine (M, 111), -1 for a rock (R, 97).

    Parameters
    ----------
    data_home : str or path-like, optional
        A folder to look in first (see :func:`load_dataset`).
    as_frame : bool, default False
        Return a pandas DataFrame and Series (needs pandas).
    download : bool, default True
        Download the UCI file into the cache folder when no local copy exists.

    Returns
    -------
    X : ndarray of float, shape (208, 60), or pandas DataFrame
        The predictors (with the UCI field names as columns when ``as_frame``).
    y : ndarray of float, shape (208,), or pandas Series
        -1 or +1.

    Raises
    ------
    DatasetNotFoundError
        No local copy, and ``download=False`` or the download failed.
    ValueError
        A file whose sha256 differs from the published one.

    See Also
    --------
    load_dataset

    Examples
    --------
    >>> from kerndwd.datasets import load_sonar
    >>> X, y = load_sonar()
    >>> X.shape, int((y > 0).sum()), int((y < 0).sum())
    ((208, 60), 111, 97)
    """
    return load_dataset("sonar", data_home, as_frame, download)


def load_vertebral(data_home=None, as_frame=False, download=True):
    """Vertebral column, two classes (UCI id 212, ``column_2C.dat``): n = 310,
    p = 6 biomechanical features (rounded to 2 decimals in that file); y = +1
    for abnormal (AB, 210), -1 for normal (NO, 100).

    Parameters
    ----------
    data_home : str or path-like, optional
        A folder to look in first (see :func:`load_dataset`).
    as_frame : bool, default False
        Return a pandas DataFrame and Series (needs pandas).
    download : bool, default True
        Download the UCI file into the cache folder when no local copy exists.

    Returns
    -------
    X : ndarray of float, shape (310, 6), or pandas DataFrame
        The predictors (with the UCI field names as columns when ``as_frame``).
    y : ndarray of float, shape (310,), or pandas Series
        -1 or +1.

    Raises
    ------
    DatasetNotFoundError
        No local copy, and ``download=False`` or the download failed.
    ValueError
        A file whose sha256 differs from the published one.

    See Also
    --------
    load_dataset

    Examples
    --------
    >>> from kerndwd.datasets import load_vertebral
    >>> X, y = load_vertebral()
    >>> X.shape, int((y > 0).sum()), int((y < 0).sum())
    ((310, 6), 210, 100)
    """
    return load_dataset("vertebral", data_home, as_frame, download)
