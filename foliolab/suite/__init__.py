"""`foliolab test`: the correctness suite on a debug kernel, planned,
built and booted (run.py), and what its boots say (results.py).
"""
