"""The code of the home page (docs/index.md): one first look at sharding."""
