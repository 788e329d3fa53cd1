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
- ``diagnostics.py``: gcc, clang and sparse output read into
  diagnostics, and the ones a patch adds;
- ``prefixes.py``: the series' prefixes (each one's commit and tree);
- ``cache.py``: a result, kept under the hash of what made it;
- ``toolchain.py``: the compilers, a cell's make command line, which
  cells a tree can be compiled on;
- ``treecheck.py``: what a tree-wide check is;
- ``checks.py``: the tree-wide checks (kernel-doc, checkpatch), each one
  object in one registry;
- ``report.py``: what each patch adds, robot.txt and robot.json;
- ``run.py``: one cell on one tree, prepared once and cached by the
  tree, the config and the compiler; the whole matrix over a series;
- ``command.py``: the options, read into one request, and what the
  command prints.

It imports only the modules of foliolab that stay where they are (errors,
paths, proc, arch, locks, ui, hostsetup, kernel/ and series/'s
checkpatch).
"""
