"""Notebook support: the figures and widgets (:mod:`.viz`), the machine-checked key-order proofs (:mod:`.proofs`)
and the build of the executed workbook (:mod:`.build`)."""
