# stress-ng-STRESSOR: one of stress-ng's mm stressors (workload.py's
# MM_STRESSORS), FL_WORKERS instances for FL_SECONDS (FL_BYTES_MB: its
# --NAME-bytes, for the stressors that have one; 0: stress-ng's default),
# bogo-ops a second from its YAML: what mmtests' stressng configs and the
# kernel test robot's stress-ng jobs run, one stressor at a time.
#
# Counting window FL_WIN_STRESS (dirty-tlb's: the stress-ng run): every
# worker's kernel work, stress-ng's start and end included, and one fork
# and exec of flmark. Marked only in a counting boot, so a timed boot's
# counters (pgfault) hold stress-ng alone, as before.
fl_sample() {
	fl_anon_folio 4
	echo madvise > $THP/enabled
	sized=
	[ "${FL_BYTES_MB:-0}" != 0 ] &&
		sized="--$FL_STRESSOR-bytes ${FL_BYTES_MB}M"
	rm -f /tmp/stress-ng.yaml
	fl_fault
	fl_snap before
	[ "$FL_COUNT" = 1 ] && flmark begin $FL_WIN_STRESS
	# shellcheck disable=SC2086 # $sized: an option and its value, or none
	(cd /tmp && stress-ng --"$FL_STRESSOR" "$FL_WORKERS" $sized \
		--timeout "${FL_SECONDS}s" --metrics --yaml /tmp/stress-ng.yaml) \
		> /tmp/stress-ng.out 2>&1 || fl_invalid "stress-ng exited with $?"
	[ "$FL_COUNT" = 1 ] && flmark end $FL_WIN_STRESS
	fl_snap after
	fl_file stress-ng.yaml /tmp/stress-ng.yaml
	fl_file stress-ng.out /tmp/stress-ng.out
}
