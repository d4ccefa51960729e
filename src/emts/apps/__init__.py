"""The jobs behind the command line, callable from Python with no argparse: tracking a source
(:mod:`.track`), Stages A+B's channels (:mod:`.channels`), Stages A-C's detections
(:mod:`.detect`), the demo (:mod:`.demo`), latency benchmarks (:mod:`.bench`, :mod:`.peer`),
the ground-station page (:mod:`.serve`), the MAVLink camera component (:mod:`.mavlink`) and
the drawings they write (:mod:`.draw`)."""
