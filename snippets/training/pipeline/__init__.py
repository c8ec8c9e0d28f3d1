"""Pipeline parallelism: one model stage per device, microbatches passed along with ppermute."""
