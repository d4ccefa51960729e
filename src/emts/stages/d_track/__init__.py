"""Stage D: the locked target's track in stabilized coordinates (:mod:`.tracker`)."""
