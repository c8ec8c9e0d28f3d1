"""Mixed precision: the dtype contract of the transformer step, loss scaling, master weights."""
