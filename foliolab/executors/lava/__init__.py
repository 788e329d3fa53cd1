"""LAVA as foliolab's executor: jobs (job.py), their logs (log.py),
Debian's LAVA packages (debs.py), the dispatcher here (local.py), a lab's
server (server.py), and jobs written for a lab without foliolab
(export.py)."""
