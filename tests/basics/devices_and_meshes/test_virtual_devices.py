from snippets.basics.devices_and_meshes import virtual_devices


def test_lists_eight_cpu_devices_in_id_order(capsys):
    devices = virtual_devices.list_devices()
    assert [d.id for d in devices] == list(range(8))
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "8 devices on platform 'cpu'"
    assert out[1:] == [f"  id={i}  CpuDevice(id={i})" for i in range(8)]


def test_changing_the_count_after_start_is_refused_and_changes_nothing(capsys):
    virtual_devices.too_late_to_change()
    out = capsys.readouterr().out
    assert out.startswith(
        "RuntimeError: jax_num_cpu_devices config should be updated before"
    )
    assert out.rstrip().endswith("Still 8 devices.")
