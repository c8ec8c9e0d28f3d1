import re
from pathlib import Path

import pytest
from jax import P

from snippets.hlo import count_collectives
from snippets.training.choosing import costs
from snippets.training.choosing import strategies as st

FIXTURES = Path(__file__).resolve().parents[2] / "docs_build" / "fixtures"
SIZES = (21_024, 32, 2_048)  # W, b, A for the MLP and a batch of 64

EXPECTED_COUNTS = {
    "data parallel": {"all-reduce": 1},
    "FSDP": {"all-gather": 4, "all-reduce": 1},
    "tensor parallel": {"all-reduce": 1},
    "2-D (2, 4)": {"all-reduce": 2},
    "2-D (4, 2)": {"all-reduce": 2},
}


class FakeCompiled:
    def __init__(self, text):
        self.text = text

    def as_text(self):
        return self.text


def test_collective_bytes_of_the_fsdp_step_compiled_for_tpu_and_gpu():
    """The page's FSDP step at the TPU tables' size (MLP 1024 -> 4096 -> 1024, batch
    256), stored compiled for v5e:2x4 (libtpu) and for 8 H100s (without a GPU)."""
    tpu = (FIXTURES / "tpu_v5e_2x4_fsdp_step.hlo").read_text()
    assert costs.collective_bytes(FakeCompiled(tpu)) == {
        "all-reduce": (1, 4 + (1024 + 4096) * 4),  # the loss and the biases' gradients
        "all-gather": (4, 2 * 1024 * 4096 * 2 + (1024 + 4096) * 4),  # bf16 kernels
        "reduce-scatter": (2, 2 * 1024 * 4096 * 4 // 8),  # an eighth of each kernel's
    }
    weights = 4 * (2 * 1024 * 4096 + 4096 + 1024)
    gpu = (FIXTURES / "gpu_h100x8_fsdp_step.hlo").read_text()
    assert costs.collective_bytes(FakeCompiled(gpu)) == {
        "all-reduce": (1, 4),
        "all-gather": (2, weights),
        "reduce-scatter": (1, weights // 8),
    }


def test_the_sizes_the_formulas_use(capsys):
    assert costs.model_sizes() == SIZES
    assert capsys.readouterr().out == "W = 21,024 bytes of weights, b = 32, A = 2,048\n"


@pytest.mark.parametrize("name", list(st.STRATEGIES))
def test_collectives_in_each_compiled_step(runs, name):
    compiled = runs[name].compiled
    assert count_collectives(compiled) == EXPECTED_COUNTS[name]
    found = costs.collective_bytes(compiled)
    assert {op: n for op, (n, _) in found.items()} == EXPECTED_COUNTS[name]


@pytest.mark.parametrize("name", list(st.STRATEGIES))
def test_measured_bytes_equal_the_formulas(runs, name):
    run, want = runs[name], costs.formulas(name, *SIZES)
    assert run.params == want["params"][1]
    assert run.adam == want["adam"][1]
    assert set(run.collectives) == {op for op in want if op in EXPECTED_COUNTS[name]}
    for op, (count, total) in run.collectives.items():
        assert (count, total) == (want[op][0], want[op][2]), op


def test_the_formulas_as_numbers():
    table = {name: costs.formulas(name, *SIZES) for name in st.STRATEGIES}
    assert {n: t["params"] for n, t in table.items()} == {
        "data parallel": ("W", 21_024),
        "FSDP": ("W/8", 2_628),
        "tensor parallel": ("(W-b)/8 + b", 2_656),
        "2-D (2, 4)": ("(W-b)/4 + b", 5_280),
        "2-D (4, 2)": ("(W-b)/2 + b", 10_528),
    }
    assert table["FSDP"]["adam"] == ("2 * params + 4", 5_260)
    assert table["data parallel"]["all-reduce"] == (1, "params + 4", 21_028)
    assert table["FSDP"]["all-gather"] == (4, "W", 21_024)
    assert table["FSDP"]["all-reduce"] == (1, "W + 4", 21_028)
    assert table["tensor parallel"]["all-reduce"] == (1, "A", 2_048)
    assert table["2-D (2, 4)"]["all-reduce"] == (2, "A/2 + params + 4", 6_308)
    assert table["2-D (4, 2)"]["all-reduce"] == (2, "A/4 + params + 4", 11_044)


def test_what_the_guidance_reads_from_the_table(runs):
    def sent(name):
        return sum(total for _, total in runs[name].collectives.values())

    # FSDP: weights and Adam state divided by 8, twice data parallelism's traffic.
    assert runs["FSDP"].params * 8 == runs["data parallel"].params
    assert sent("FSDP") == 42_052 == 2 * sent("data parallel") - 4
    # Tensor parallelism sends the output activations only.
    assert sent("tensor parallel") == 2_048
    # For this model (W about ten times A), the larger model axis moves less.
    assert sent("2-D (2, 4)") < sent("2-D (4, 2)")
    # FSDP's scratch memory is the largest: the gathered weights live there.
    temps = {name: run.temp for name, run in runs.items()}
    assert max(temps, key=temps.get) == "FSDP"
    assert temps["FSDP"] >= SIZES[0]


def test_fsdp_block_prints_its_collectives(runs, capsys):
    assert costs.fsdp_collectives(runs) == {"all-gather": 4, "all-reduce": 1}
    assert capsys.readouterr().out.splitlines() == [
        "all-reduce          1",
        "all-gather          4",
    ]


def test_the_table_shows_measured_numbers_and_formulas(runs, capsys):
    costs.show_table(runs, *SIZES)
    out = capsys.readouterr().out
    assert "One train step of the MLP, batch 64, per device" in out
    assert "compiled for the CPU backend" in out
    assert (
        "ms" not in out.split()
    )  # times on 8 virtual devices sharing 2 cores say nothing
    rows = [line for line in out.splitlines() if line.startswith("│ ")]
    first = [cell.strip() for cell in rows[0].strip("│").split("│")]
    assert first[:5] == [
        "data parallel",
        "21,024",
        "42,052",
        f"{runs['data parallel'].temp:,}",
        "1 all-reduce: 21,028",
    ]
    assert "4 all-gather: 21,024" in out and "= A/2 + params + 4" in out


def test_fsdp_split_along_the_hidden_units_gathers_the_batch(monkeypatch):
    rules = {
        "up.kernel": P(None, "data"),
        "up.bias": P("data"),
        "down.kernel": P("data", None),
        "down.bias": P("data"),
    }
    monkeypatch.setitem(
        st.STRATEGIES, "hidden split", ((8,), ("data",), rules, P("data"))
    )
    run = costs.run_strategy("hidden split")
    assert run.params == SIZES[0] // 8  # the same memory as FSDP ...
    gathered = re.findall(r"= (\S+) all-gather\(", run.compiled.as_text())
    assert "f32[64,32]{1,0}" in gathered  # ... but the whole batch is gathered
    assert not any(shape.startswith("f32[32,128]") for shape in gathered)


def test_the_prose_quotes_the_tables_figures(runs):
    """ "How to choose" quotes bytes from the table: each is the measured figure."""
    page = (
        Path(__file__).resolve().parents[3] / "docs/training/choosing.md"
    ).read_text()
    prose = " ".join(page[page.index("## How to choose") :].split())
    dp, fsdp, tp = runs["data parallel"], runs["FSDP"], runs["tensor parallel"]
    quoted = {
        "here {:,} bytes of weights": dp.params,
        "({:,} and": fsdp.params,
        "and {:,} bytes instead of": fsdp.adam,
        "instead of {:,} and": dp.params,
        "and {:,}), at the price": dp.adam,
        "one all-reduce of `A` per step here, {:,} bytes": tp.collectives["all-reduce"][
            1
        ],
        "against FSDP's {:,}": sum(b for _, b in fsdp.collectives.values()),
    }
    for template, value in quoted.items():
        assert template.format(value) in prose, template
