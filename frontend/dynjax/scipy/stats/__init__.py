"""``dynjax.scipy.stats``: the ``norm`` and ``multivariate_normal`` distributions."""
from . import multivariate_normal, norm  # noqa: F401
