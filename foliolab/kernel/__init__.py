"""The kernels a run boots, from what the user names to a bootable image.

- specs.py: the kernel specs (``base``, ``git:PATH@REF``, ``debian:VERSION``,
  each ``+DIR[:N]``, ``image:PATH``), parsed and checked
- sources/: each source a spec names, and each series input, as a class
  in a registry (its form, checks, tree, build directory, record)
- trees.py: a spec resolved to the source tree it builds from (a series
  applied, or found applied)
- store.py: each kernel found kept, or built and kept; what --dry-run knows
- source.py: source trees (the pinned base, git, a series applied)
- debian.py: Debian's linux-source packages
- kconfig.py: config fragments by purpose, the debug kernel's arguments
- build.py: one build of a tree (make, ccache, the kept store)
- image.py: the guest's base ramdisk and a boot's job archive
- symbols.py: System.map, for counting and checking roots
"""
