"""A transformer, trained end to end: logical axes, sharded init, bfloat16, remat."""
