"""``dynjax.scipy``: ``special``, ``stats`` (``norm``, ``multivariate_normal``) and ``linalg``,
with the names and signatures of ``jax.scipy``. See ``doc/nn_and_scipy.md``."""
from . import special  # noqa: F401
try:   # written alongside; the package imports while they are missing
    from . import linalg, stats  # noqa: F401
except ImportError:   # pragma: no cover
    pass
