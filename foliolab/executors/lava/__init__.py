"""LAVA as foliolab's executor: jobs (job.py), their logs (log.py),
Debian's LAVA packages (debs.py), the dispatcher here (local.py), a lab's
server (server.py), jobs written for a lab without foliolab (export.py),
and what their runs' manifests and reports say of them (record.py)."""
