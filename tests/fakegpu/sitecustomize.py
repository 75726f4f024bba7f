"""Started by every Python process whose PYTHONPATH holds tests/fakegpu (the fake-GPU test only).

Inert unless ROOFLINE_FAKE_GPU=h200 is set: then this process (a notebook kernel, or
tools/gpu_check.py) sees a simulated H200, as tests/fakegpu/fake_cuda.py describes.
"""

import os

if os.environ.get("ROOFLINE_FAKE_GPU", "").strip().lower() == "h200":
    import fake_cuda

    fake_cuda.install_lazily()
