"""R-style component access shared by the result objects (``res["lambda.min"]``)."""


class RNamed:
    """Mapping access by R's component names.

    A subclass lists R's names in ``_R_NAMES``; ``obj["lambda.min"]`` reads
    the attribute ``lambda_min`` (dots become underscores, ``lambda`` is
    ``lambda_`` since it is a Python keyword).
    """

    _R_NAMES: tuple = ()

    def __getitem__(self, key):
        if key not in self._R_NAMES:
            raise KeyError(f"no component {key!r}; have {self._R_NAMES}")
        return getattr(self, "lambda_" if key == "lambda" else key.replace(".", "_"))

    def keys(self):
        return list(self._R_NAMES)

    def __contains__(self, key):
        return key in self._R_NAMES
