"""Stage C: the micro-detector (:mod:`.detector`) and the modes the pipeline runs it in
(:mod:`.temporal`, :mod:`.fusion`), the colour evidence on its boxes (:mod:`.boxfit`) and the
stateful TSM variant's streaming state (:mod:`.streaming`)."""
