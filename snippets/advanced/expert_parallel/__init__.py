"""Expert parallelism: a mixture-of-experts layer whose tokens travel by all_to_all."""
