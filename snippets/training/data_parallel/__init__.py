"""Data parallelism: the batch split over a "data" axis, the parameters on every device."""
