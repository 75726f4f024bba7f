"""models: a transformer's counts from its config (shipped configs, Hugging Face config.json), and the FLOP audit against torch."""

from ..core.layer import gather as _gather

# audit runs torch's FlopCounterMode and tiny_model builds a torch decoder: each imports torch when asked
# (``from roofline_lib.models import audit``).
__all__ = _gather(__name__, __path__, globals(), on_demand={"audit", "tiny_model"})
