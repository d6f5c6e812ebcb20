"""Measuring and recording: CUDA-graph timing and the measured ceilings (:mod:`.timing`), the decode benchmark
sweep (:mod:`.sweep`) and its merges (:mod:`.merge`), same-process A/Bs (:mod:`.ab`), the named correctness matrix
and fuzz (:mod:`.verify`, shapes in :mod:`.shapes`), the latency ladder (:mod:`.latency`), the cold start
(:mod:`.coldstart`), the records under ``data/`` (:mod:`.data`) and the tables built from them (:mod:`.report`)."""
