"""Beyond one host: the data-parallel train step on two processes of four devices each."""
