"""Devices and meshes: virtual CPU devices, jax.make_mesh, Mesh and axis types."""
