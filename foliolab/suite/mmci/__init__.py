"""The tests every linux-mm series meets in the mm subsystem's own CI (the
"mm CI", github.com/linux-mm/mm-ci), run by foliolab (issue 57).

- ``mmci.py``: what the mm CI does, as read from its public configuration
  once (repository, path and commit beside each fact);
- ``config.py``: its kconfig fragment (configs/mm-ci.config) merged with
  the kernel tree's own tools/testing/selftests/mm/config;
- ``discover.py``: the ``ksft_*.sh`` wrappers of a kernel tree (or, for a
  tree that predates them, the categories of its run_vmtests.sh);
- ``results.py``: one wrapper's output as test outcomes, one per case;
- ``compare.py``: each case's failures k of n on two kernels, and which
  are new failures;
- ``hosttests.py``: the userland tests of the mm data structures, built
  and run on the host from each kernel's own tree;
- ``plan.py``: the guest the wrappers run in, scaled to this machine.
"""
