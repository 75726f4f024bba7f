"""models: a transformer's counts from its config (shipped configs, Hugging Face config.json), and the FLOP audit against torch."""

from ..core.layer import gather as _gather

# audit runs torch's FlopCounterMode: ``from roofline_lib.models import audit`` imports torch when asked.
__all__ = _gather(__name__, __path__, globals(), on_demand={"audit"})
