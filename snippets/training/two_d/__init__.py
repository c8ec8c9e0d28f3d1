"""2-D parallelism: the batch over "data", the weights over "model", and the mesh shape."""
