"""A person's data: exported, forgotten on request, and turn texts expired after their
retention."""
