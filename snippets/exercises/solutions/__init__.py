"""Reference solutions of the exercises, one module each (see docs/exercises/)."""
