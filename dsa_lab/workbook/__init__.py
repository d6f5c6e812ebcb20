"""Notebook support: what the notebooks show, each part tested under ``tests/``.

* :mod:`.backend` (which backend runs), :mod:`.records` (``data/`` records: load, label, summarize);
* :mod:`.tables` (rows and :func:`.tables.format_table`), :mod:`.dev_runs` (the dev runs' tables),
  :mod:`.figures` (plotly figures), :mod:`.widgets` (ipywidgets over tested callbacks);
* :mod:`.proofs` (the machine-checked key-order proof), :mod:`.causal` (the causal-bounds experiments);
* :mod:`.build` (the executed workbook).
"""
