"""evidence: what a real run shows: timing and measured roofs, GPU records, Triton kernels, traces, the diagnosis, live runs.

Imported module by module (``from roofline_lib.evidence import measure``): most of it needs torch.
"""
