"""A finished run's results in another system's format, read from the
run's own records only (testrecord.py's outcomes, kernelrecord.py's
kernels, a compare's results.json through analysis.diff).

- ``kcidb.py``: KernelCI's common database (KCIDB, schema v5.3).
"""
