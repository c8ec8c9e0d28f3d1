"""Loading data into one global array: per-shard reads with make_array_from_callback,
per-process rows with make_array_from_process_local_data, and a small batch loader.

Run `python -m snippets.advanced.shapes_and_randomness.loading` to print what the page shows.
"""

# --8<-- [start:imports]
import tempfile
from pathlib import Path

# --8<-- [end:imports]
import jax
import numpy as np
from jax import P
from jax.sharding import Mesh, NamedSharding

# On the page, these are defined by earlier blocks.
from snippets.advanced.shapes_and_randomness.uneven import check_divides


def write_dataset() -> tuple[Path, np.ndarray]:
    # --8<-- [start:dataset]
    path = Path(tempfile.mkdtemp()) / "features.npy"
    rows = 10 * np.arange(40)[:, None] + np.arange(6)  # row r: 10r, 10r + 1, ...
    np.save(path, rows.astype(np.float32))
    data = np.load(path, mmap_mode="r")  # (1)!
    print(type(data).__name__, data.shape, data.dtype)
    # --8<-- [end:dataset]
    return path, data


def from_callback(mesh: Mesh, data: np.ndarray):
    # --8<-- [start:callback]
    asked = []

    def read(index):  # (1)!
        asked.append(index)
        return data[index]

    by_rows = NamedSharding(mesh, P("x"))
    batch = jax.make_array_from_callback((16, 6), by_rows, read)
    print(jax.typeof(batch), " calls:", len(asked))
    for shard in batch.addressable_shards[:3]:
        rows, first = shard.index[0], shard.data[:, 0]
        print(f"{shard.device}: rows {rows.start}-{rows.stop - 1}, first column", first)
    # --8<-- [end:callback]
    return batch, asked


def from_process_local(mesh: Mesh, data: np.ndarray):
    # --8<-- [start:process-local]
    by_rows = NamedSharding(mesh, P("x"))
    mine = np.asarray(data[:16])  # (1)!
    batch = jax.make_array_from_process_local_data(by_rows, mine, (16, 6))
    print(jax.typeof(batch), " same rows:", np.array_equal(batch, data[:16]))
    # --8<-- [end:process-local]
    return batch


# --8<-- [start:loader]
def global_batches(data, batch_size, sharding, seed=0):
    """(batch, mask) pairs: one shuffled pass over `data`, placed as `sharding` says.
    The last batch is padded with zero rows, where `mask` is False."""
    if batch_size < 1 or any(entry is not None for entry in sharding.spec[1:]):
        raise ValueError(
            f"need a batch_size of 1 or more and a spec that splits rows only; "
            f"got {batch_size} and {sharding.spec}."
        )
    check_divides((batch_size, *data.shape[1:]), sharding.spec, sharding.mesh)
    order = np.random.default_rng(seed).permutation(len(data))  # (1)!
    for start in range(0, len(data), batch_size):
        yield place_rows(data, order[start : start + batch_size], batch_size, sharding)


def place_rows(data, ids, batch_size, sharding):
    """Rows `ids` of `data` as one global batch of `batch_size` rows, and its mask."""
    mask = np.arange(batch_size) < len(ids)
    ids = np.pad(ids, (0, batch_size - len(ids)))  # padding rows: masked out

    def read(index):  # called for each of this process's devices
        return np.where(mask[index[0], None], data[ids[index[0]]], 0)  # (2)!

    by_rows = NamedSharding(sharding.mesh, P(*sharding.spec[:1]))  # for the mask
    batch = jax.make_array_from_callback((batch_size, *data.shape[1:]), sharding, read)
    return batch, jax.make_array_from_callback(mask.shape, by_rows, lambda i: mask[i])


# --8<-- [end:loader]


def run_loader(mesh: Mesh, data: np.ndarray):
    # --8<-- [start:loader-run]
    seen = []
    for batch, mask in global_batches(data, 16, NamedSharding(mesh, P("x")), seed=1):
        real = np.asarray(batch)[np.asarray(mask)]
        seen += (real[:, 0] // 10).astype(int).tolist()  # row r starts with 10r
        print(jax.typeof(batch), jax.typeof(mask), f"real rows: {len(real)}")
    print("every row once:", sorted(seen) == list(range(len(data))))
    # --8<-- [end:loader-run]
    return seen


def main() -> None:
    from snippets.advanced.shapes_and_randomness.uneven import build_meshes

    mesh, _ = build_meshes()
    path, data = write_dataset()
    from_callback(mesh, data)
    from_process_local(mesh, data)
    run_loader(mesh, data)
    del data
    path.unlink()
    path.parent.rmdir()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
