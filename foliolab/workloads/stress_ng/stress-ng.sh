# stress-ng-STRESSOR: one of stress-ng's mm stressors (workload.py's
# MM_STRESSORS), FL_WORKERS instances for FL_SECONDS (FL_BYTES_MB: its
# --NAME-bytes, for the stressors that have one; 0: stress-ng's default),
# bogo-ops a second from its YAML: what mmtests' stressng configs and the
# kernel test robot's stress-ng jobs run, one stressor at a time.
fl_sample() {
	fl_anon_folio 4
	echo madvise > $THP/enabled
	sized=
	[ "${FL_BYTES_MB:-0}" != 0 ] &&
		sized="--$FL_STRESSOR-bytes ${FL_BYTES_MB}M"
	rm -f /tmp/stress-ng.yaml
	fl_fault
	fl_snap before
	# shellcheck disable=SC2086 # $sized: an option and its value, or none
	(cd /tmp && stress-ng --"$FL_STRESSOR" "$FL_WORKERS" $sized \
		--timeout "${FL_SECONDS}s" --metrics --yaml /tmp/stress-ng.yaml) \
		> /tmp/stress-ng.out 2>&1 || fl_invalid "stress-ng exited with $?"
	fl_snap after
	fl_file stress-ng.yaml /tmp/stress-ng.yaml
	fl_file stress-ng.out /tmp/stress-ng.out
}
