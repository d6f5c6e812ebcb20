"""The Triton kernels of the indexer's decode path: ``@triton.jit`` code only, one algorithm per module.

* :mod:`.common` -- helpers every kernel shares: packed keys, a row's live extent, writing ids, flags.
* :mod:`.scores` -- block scores (the NaN-propagating max of each block's live logits).
* :mod:`.hier` -- top-k by nested group maxima (``k <= 256``; ``k <= 512`` at many rows).
* :mod:`.bisect` -- top-k by bisecting the k-th key over a register-resident row (``k > 256``, many rows).
* :mod:`.radix` -- top-k by digit histograms (larger ``k`` at few rows, and rows wider than 32768 columns).
* :mod:`.flags` -- candidate flags from selected ids.
* :mod:`.mask` -- the candidate mask of packed logits (the serving drop-in's ``apply_candidate_mask``).
* :mod:`.producer` -- paged FP8 MQA logits and the bounded sanitize.

Nothing here chooses a plan or allocates: :mod:`dsa_lab.plans` decides, :mod:`dsa_lab.launch` launches.  Import a
module only when a kernel is about to run (``TRITON_INTERPRET`` is read when a kernel is decorated).
"""
