"""Measuring and recording: CUDA-graph timing and the measured ceilings (:mod:`.timing`), the decode benchmark
sweep (:mod:`.sweep`), the named correctness matrix and fuzz (:mod:`.verify`, shapes in :mod:`.shapes`), the
latency ladder (:mod:`.latency`), the records under ``data/`` (:mod:`.data`) and the tables built from them
(:mod:`.report`)."""
