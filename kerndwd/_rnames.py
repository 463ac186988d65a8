"""R-style component access shared by the result objects (``res["lambda.min"]``)."""

from __future__ import annotations

from typing import Any


class RNamed:
    """Mapping access by R's component names.

    A subclass lists R's names in ``_R_NAMES``; ``obj["lambda.min"]`` reads
    the attribute ``lambda_min`` (dots become underscores, ``lambda`` is
    ``lambda_`` since it is a Python keyword).
    """

    _R_NAMES: tuple[str, ...] = ()

    def __getitem__(self, key: str) -> Any:
        if key not in self._R_NAMES:
            raise KeyError(f"no component {key!r}; have {self._R_NAMES}")
        return getattr(self, "lambda_" if key == "lambda" else key.replace(".", "_"))

    def keys(self) -> list[str]:
        return list(self._R_NAMES)

    def __contains__(self, key: object) -> bool:
        return key in self._R_NAMES
