"""The 8 virtual CPU devices every page runs on, and what happens if you ask too late.

Run `python -m snippets.basics.devices_and_meshes.virtual_devices` to print what the page shows.
"""

# --8<-- [start:imports]
import jax

# --8<-- [end:imports]


def list_devices() -> list[jax.Device]:
    # --8<-- [start:list-devices]
    devices = jax.devices()
    print(f"{jax.device_count()} devices on platform {devices[0].platform!r}")
    for device in devices:
        print(f"  id={device.id}  {device!r}")
    # --8<-- [end:list-devices]
    return devices


def too_late_to_change() -> None:
    # --8<-- [start:too-late]
    try:
        jax.config.update("jax_num_cpu_devices", 4)
    except RuntimeError as err:
        print(f"RuntimeError: {err}")
    print(f"Still {jax.device_count()} devices.")
    # --8<-- [end:too-late]


def main() -> None:
    list_devices()
    too_late_to_change()


if __name__ == "__main__":
    from docs_build.devices import use_cpu_devices

    use_cpu_devices(8)
    main()
