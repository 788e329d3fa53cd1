"""The boots of a run: planned and handed to an executor (measure.py),
each capture judged (outcome.py, the only writer of boot.json), turned
into samples with the workload's derive (derive.py), its monitors read
(monitors.py), and the accelerator chosen before them (accel.py).

Above the executors, which only run boots and hand back what they
captured; below the analysis and the reports, which read what is here.
"""
