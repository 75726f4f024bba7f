"""workloads: what a job costs on the roofline: inference, training and its memory, communication, parallelism, serving, energy and money, published runs."""

from ..core.layer import gather as _gather

# scenarios holds the worked examples chapters share, read as ``from roofline_lib import scenarios as sc``.
__all__ = _gather(__name__, __path__, globals(), on_demand={"scenarios"})
