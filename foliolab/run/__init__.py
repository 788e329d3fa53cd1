"""A measured run from its request: the Request and its stages' inputs
(stages.py), the checks before any work (rootcheck.py), the manifest and
--resume (record.py), the plan said before a run (dryrun.py), and the
orchestrator of `compare`, `attribute` and `jobs` (orchestrate.py);
`foliolab run`'s one boot (command.py).
"""
