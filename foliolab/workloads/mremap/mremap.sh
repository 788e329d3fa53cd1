# mremap: mremap() moves of a populated anonymous region (mremapmove.c):
# FL_SIZE_MB moved 2 * FL_ITERATIONS times as FL_MOVE says (pmd, pte,
# maymove). PMD THP for the region: FL_THP (always or never), every mTHP
# size never, so the region is in base pages or in THPs and nothing else.
fl_sample() {
	fl_anon_folio 4
	fl_thp_pmd "$FL_THP"
	fl_fault
	fl_snap before
	mremapmove "$FL_MOVE" "$FL_SIZE_MB" "$FL_ITERATIONS" ||
		fl_invalid "mremapmove exited with $?"
	fl_snap after
}
