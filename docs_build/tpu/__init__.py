"""TPU programs compiled on a machine without a TPU: what each training strategy costs.

`python -m docs_build.tpu` (or `nox -s tpu`) writes results.json here; `steps` holds the
pages' steps made lowerable from shapes, `driver` compiles and reads them.
"""
