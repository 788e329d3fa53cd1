"""A patch series, read and checked: its added lines as they stand
(lines.py, over unidiff.py and csource.py), `check` patch by patch
(check.py), and `check --since`: the series against a base's stable
history (stablehistory.py, sincespec.py).
"""
