"""The kernel test robot's checks, run here before a series is posted.

The build robots of the mm tree (0-day/LKP and the maintainers' own)
compile every posted series on many architectures and configs, with
W=1, sparse and kernel-doc, and report only what a patch adds. A series
that breaks !CONFIG_SWAP or i386 is sent back within hours of posting;
``foliolab check --robot`` finds the same before it is posted.

- ``matrix.py``: the cells (architecture, config, compiler) and which
  prefixes of a series each one compiles;
- ``objects.py``: what a series makes the robot compile (mm/, the
  directories of the .c files it changes, the files that include a
  header it changes);
- ``diagnostics.py``: gcc, clang, sparse, kernel-doc and checkpatch
  output read into diagnostics, and the ones a patch adds;
- ``run.py``: one cell on one tree, prepared once and cached by the
  tree, the config and the compiler; the whole matrix over a series.

It imports only the modules of foliolab that stay where they are (errors,
paths, proc, arch, locks, ui, hostsetup and kernel/).
"""
