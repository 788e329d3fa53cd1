"""`foliolab test --coverage`: which of a series' added lines the suite
ran. lines.py classifies each line (its states and reason classes),
reasons.py reads the series' coverage-reasons file, gcovdata.py,
gcovrecord.py and ifdefs.py read gcov's data, what the guest shipped and
the preprocessor's conditionals, run.py builds, boots and writes the
report, html.py draws it.
"""
