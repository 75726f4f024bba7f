"""core: roofs and the plausibility guard, operation counts, the GPU and link registries, tiling, input checks, number formatting."""

from .layer import gather as _gather

__all__ = _gather(__name__, __path__, globals())
