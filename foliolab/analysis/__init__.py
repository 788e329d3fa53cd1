"""A run's samples -> typed rows, apart from their rendering: the
statistics (stats.py, workloadstats.py), the counting analysis
(countanalysis.py), what the boots say of the run (runboots.py), the
headline, and `diff`'s and reproduce's views; analyse.py puts them
together. render/ draws what is here.
"""
