"""The jobs behind the command line, callable from Python with no argparse: tracking a source
(:mod:`.track`), the demo (:mod:`.demo`), latency benchmarks (:mod:`.bench`, :mod:`.peer`), the
ground-station page (:mod:`.serve`), the MAVLink camera component (:mod:`.mavlink`) and the
drawings they write (:mod:`.draw`)."""
