"""NamedSharding and device_put: place arrays on a mesh, see which device holds what."""
