"""foliolab: an A/B lab for Linux memory-management patches.

Data flows one way through one module per stage:

    source -> kconfig -> build -> image -> boot -> run -> stats -> report

cli.py wires the stages together and is the only place that prints errors
and chooses exit codes.
"""

__version__ = "0.1.0"
