"""foliolab: an A/B lab for Linux memory-management patches.

Data flows one way, and the folders name its stages:

    kernel/ (source, kconfig, build, image) -> executors/ (the boots run)
    -> boot/ (judged, samples) -> analysis/ (statistics) -> render/

run/ drives a measured run through them from its request; suite/,
coverage/, series/ and bisect/ are the other commands' stages; guestdata/
reads what a guest left. The modules at this level are what every stage
shares. cli.py builds the commands (commands/) and is the only place that
prints errors and chooses exit codes.
"""

__version__ = "0.1.0"
