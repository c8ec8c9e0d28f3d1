"""Programs compiled for CPU, TPU and GPU targets without the hardware: what each costs.

`python -m docs_build.compiled cpu tpu` (`nox -s tpu`) and `python -m docs_build.compiled gpu`
(`nox -s gpu`) write results/<family>.json here, in one format. `targets` names the targets
and makes their devices, `steps` and `advanced` hold the pages' programs made lowerable from
shapes, `driver` compiles and reads them (with docs_build/hlo.py), `results` loads the
committed results for the build, and `pages` and `plot` draw the tables and the figure.
"""
