"""What a boot's guest left, read: the records of its results port or
console (parse.py) and the counting plugin's windows (countwindows.py).

The ground the workloads, the judge and the analysis stand on: it imports
nothing else of foliolab's.
"""
