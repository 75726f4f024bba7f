"""Started by every Python process whose PYTHONPATH holds tests/fakegpu (the fake-GPU test only).

Inert unless ROOFLINE_FAKE_GPU=h200 is set: then this process (a notebook kernel, or
tools/gpu_check.py) sees a simulated H200, as tests/fakegpu/fake_cuda.py describes.

A notebook kernel under the fake also ends without tearing the interpreter down: once every atexit
handler has run (this one, registered first, runs last), its streams are flushed and it leaves with
``os._exit``. Python's teardown of the ~3,000 modules a chapter loads (torch among them) cost a
kernel 1.6 CPU-seconds after chapter 6, on the side of ``make fake-gpu`` that runs one chapter at a
time; what it frees the operating system frees anyway. The fake's own log is closed after each line.
"""

import os
import sys

if os.environ.get("ROOFLINE_FAKE_GPU", "").strip().lower() == "h200":
    import fake_cuda

    fake_cuda.install_lazily()

    if "ipykernel_launcher" in sys.orig_argv:  # python -m ipykernel_launcher: a kernel
        import atexit

        def _leave_without_teardown() -> None:
            for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001 - a closed or replaced stream: nothing left to flush
                    pass
            os._exit(0)

        atexit.register(_leave_without_teardown)
