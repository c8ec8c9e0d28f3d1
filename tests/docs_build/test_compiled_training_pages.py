"""The training pages' "on TPU" sections: each sets the CPU program beside the TPU-compiled
ones, and the claims its prose makes about them hold for the committed results
(docs_build/compiled/results/), so a compiler that changes a plan fails here, not on the page."""

import re
from pathlib import Path

import pytest

from docs_build import costmodel as cm
from docs_build.compiled import pages

ROOT = Path(__file__).resolve().parents[2]
TRAINING = ROOT / "docs" / "training"
TPUS = ("v5e:2x4", "v5p:2x2x2", "v5e:8x8", "v5e:16x16")
MIB = 2**20

# page: (its comparison tables, how many numbers its prose quotes)
PAGES = {
    "data-parallel": (["data parallel"], 5),
    "fsdp": (["FSDP, explicit gather | FSDP"], 11),
    "tensor-parallel": (["tensor parallel"], 3),
    "two-d": (["2-D"], 3),
    "pipeline": (["pipeline"], 3),
    "choosing": ([], 7),
    "multi-host": ([], 7),
}


def kinds(target: str, strategy: str) -> dict[str, int]:
    summary = pages.program(target, strategy)["summary"]
    return {kind: s["runs"] for kind, s in summary.items()}


def mib(target: str, strategy: str, field: str) -> float:
    return pages.mib(pages.program(target, strategy), field)


def model() -> cm.MLP:
    m = pages.results()["model"]
    return cm.MLP(m["d"], m["hidden"], m["batch"], m["pipeline_microbatches"])


@pytest.mark.parametrize("page", PAGES)
def test_each_page_quotes_only_generated_tpu_figures(page):
    text = (TRAINING / f"{page}.md").read_text(encoding="utf-8")
    compares, numbers = PAGES[page]
    assert pages.COMPARE.findall(text) == compares
    assert len(pages.NUMBER.findall(text)) == numbers
    filled = pages.fill(text)
    assert "<!-- tpu" not in filled  # every marker names a compiled program
    # no MiB figure typed into the page: every one is filled in
    assert not re.search(r"\d MiB", text)


def test_a_comparison_table_names_its_backends_and_every_target():
    table = pages.compare_table("FSDP, explicit gather | FSDP")
    rows = [line for line in table.splitlines() if line.startswith("| FSDP")]
    assert len(rows) == 2 * len(pages.results()["targets"])
    assert "for the CPU backend" in table and "libtpu" in table
    assert "nothing ran on a TPU" in table
    row = next(r for r in rows if r.startswith("| FSDP | v5e:2x4,"))
    assert f"**{mib('v5e:2x4', 'FSDP', 'wire'):.1f} MiB**" in row
    assert f"{mib('v5e:2x4', 'FSDP', 'peak'):.1f} MiB |" in row


@pytest.mark.parametrize(
    "named", ["data parallel", "FSDP, explicit gather | FSDP", "tensor parallel", "2-D"]
)
def test_a_training_steps_table_gives_its_time_bound(named):
    """The training pages' comparison tables end with the step's lower bound on time on
    every TPU and GPU target: the larger of its matmuls at the chip's published bf16 peak
    and each network's bytes at its published rate, and which of them sets it."""
    table = pages.compare_table(named)
    head = next(line for line in table.splitlines() if "| target |" in line)
    assert head.endswith("| peak | step at least |")
    several = "|" in named
    rows = [line for line in table.splitlines() if "devices<br>" in line]
    assert len(rows) == len(named.split("|")) * len(pages.results()["targets"])
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        strategy = cells[0] if several else named
        target = cells[1 if several else 0].split(",")[0]
        if target == "cpu":
            assert cells[-1] == "-"
            continue
        p = pages.program(target, strategy)
        chip = cm.LINKS[pages.chip_key(target)]
        flops = 10 * model().batch * model().d * model().hidden
        flops /= pages.results()["targets"][target]["devices"]
        family = pages.tg.FAMILIES[pages.family_of(target)]
        times = {
            "compute": flops / chip.bf16_flops,
            pages.NETWORK_LABEL[family.within]: pages.network_mib(p, family.within)
            * MIB
            / chip.within,
            pages.NETWORK_LABEL[family.between]: pages.network_mib(p, family.between)
            * MIB
            / chip.between,
        }
        what = max(times, key=times.get)
        value, said = re.fullmatch(r"([\d,.]+) µs \((\w+)\)", cells[-1]).groups()
        assert said == what
        assert float(value.replace(",", "")) * 1e-6 == pytest.approx(
            times[what], rel=5e-3
        )
    assert "Step at least: a lower bound on its time" in table
    for key in ("v5e", "v5p", "h100"):
        assert cm.LINKS[key].url in table


def test_the_pipelines_table_has_no_time_bound():
    """steptime does not model the pipeline's FLOPs: its table keeps six columns."""
    table = pages.compare_table("pipeline")
    assert "step at least" not in table and "Step at least" not in table


def test_a_pipeline_table_does_not_call_its_step_a_training_step():
    caption = pages.compare_table("pipeline")
    assert "GPipe forward pass" in caption and "Adam" not in caption


def test_tables_of_training_steps_label_the_pipeline_as_a_forward_pass():
    """The pipeline's program is a GPipe forward pass; beside full training steps (data
    parallelism's forward, backward and Adam update) its row says so."""
    for table in (pages.table(), pages.model_table()):
        rows = [r for r in table.splitlines() if r.startswith("| pipeline")]
        assert rows and all(
            r.startswith("| pipeline (forward pass only) |") for r in rows
        )


def test_the_cpu_peak_is_withheld_because_it_reads_below_its_temporaries():
    p = pages.program("cpu", "FSDP")["memory"]
    assert p["peak_bytes"] < p["temp_bytes"]
    assert "| not reported |" in pages.compare_table("FSDP")


def test_a_table_for_an_unknown_target_says_which_exist():
    with pytest.raises(pages.CompiledResultsError, match=r"'v9:1x1'.*use some of"):
        pages.fill("<!-- tpu-costs: cpu v9:1x1 -->")


def test_data_parallel_claims():
    for target in ("cpu", *TPUS):
        assert kinds(target, "data parallel") == {"all-reduce": 1}
    assert mib("v5e:2x4", "data parallel", "wire") == pytest.approx(
        mib("cpu", "data parallel", "wire"), rel=1e-3
    )
    # temporaries: negligible on the CPU, a little more than the gradients on each TPU
    params = pages.params_mib()
    assert params == pytest.approx(model().params * 4 / MIB)
    assert mib("cpu", "data parallel", "temp") < 1 / 1024
    for target in TPUS:
        assert params < mib(target, "data parallel", "temp") < 1.1 * params


def test_fsdp_claims():
    def gathers(target, strategy):
        big = [
            c
            for c in pages.program(target, strategy)["collectives"]
            if c["kind"] == "all-gather" and c["result_bytes"] > MIB
        ]
        return {c["dtype"] for c in big}

    for strategy in ("FSDP", "FSDP, explicit gather"):
        assert gathers("cpu", strategy) == {"f32"}
        for target in ("v5e:2x4", "v5p:2x2x2"):
            assert gathers(target, strategy) == {"bf16"}
        for target in ("v5e:8x8", "v5e:16x16"):
            assert set(kinds(target, strategy)) == {"all-reduce"}
        # a peak far above the state on every slice
        for target in TPUS:
            assert mib(target, strategy, "peak") > 4 * mib(target, strategy, "state")
    assert "reduce-scatter" in kinds("v5e:2x4", "FSDP")
    assert "reduce-scatter" not in kinds("v5e:2x4", "FSDP, explicit gather")
    dp = mib("v5e:2x4", "data parallel", "wire")
    assert mib("v5e:2x4", "FSDP", "wire") < dp
    assert mib("v5e:2x4", "FSDP, explicit gather", "wire") > dp * 1.2
    # CPU temporaries: both kernels whole and their gradients whole, f32
    m = model()
    kernels = 2 * m.d * m.hidden * 4
    temp = pages.program("cpu", "FSDP, explicit gather")["memory"]["temp_bytes"]
    assert temp == pytest.approx(2 * kernels, rel=1e-4)
    assert mib("v5e:8x8", "FSDP, explicit gather", "peak") > 40 * mib(
        "v5e:8x8", "FSDP, explicit gather", "state"
    )


FIXTURE = ROOT / "tests" / "docs_build" / "fixtures" / "tpu_v5e_2x4_fsdp_step.hlo"


def forms(target: str, strategy: str) -> list[tuple[str, str]]:
    return [
        (c["kind"], c["form"]) for c in pages.program(target, strategy)["collectives"]
    ]


def test_fsdp_claims_about_overlap():
    """The page: on v5e:2x4 one of the two kernel gathers of each FSDP step is
    asynchronous, inside the fused op of the first layer's product (the choosing page's
    step, whose program the fixture keeps); data parallelism's all-reduce is one
    synchronous op in every program."""
    for strategy in ("FSDP", "FSDP, explicit gather"):
        big = [
            c["form"]
            for c in pages.program("v5e:2x4", strategy)["collectives"]
            if c["kind"] == "all-gather" and c["result_bytes"] > MIB
        ]
        assert sorted(big) == ["async-fusion", "sync"]
    for target in ("cpu", *TPUS):
        assert forms(target, "data parallel") == [("all-reduce", "sync")]
    # In the stored program, the fusion that starts the async gather also runs a matmul
    # whose result is the first layer's hidden activations, f32[32,4096].
    text = FIXTURE.read_text()
    body = text.split("%async_collective_fusion.31 ", 1)[1].split("\n}", 1)[0]
    assert " all-gather(" in body
    assert re.search(r"= f32\[32,4096\]\S* convolution\(", body)
    said = " ".join((TRAINING / "fsdp.md").read_text().split())
    assert "one of the two kernel gathers is asynchronous" in said
    assert "is one synchronous operation after the backward pass" in said
    assert "where data parallelism's all-reduce can overlap" not in said


def test_fsdp_claims_about_memory_on_tpu():
    """v5e's temporaries leave out buffers in memory space 1 (a whole f32 kernel
    gradient there, far more than the figure); the peak is not the sum of the others."""
    text = FIXTURE.read_text()
    assert re.search(r"= f32\[4096,1024\]\{1,0:T\(8,128\)S\(1\)\} fusion\(", text)
    whole_gradient = 4096 * 1024 * 4 / MIB
    assert mib("v5e:2x4", "FSDP", "temp") < whole_gradient / 8
    for strategy in ("FSDP", "FSDP, explicit gather"):
        for target in TPUS:
            m = pages.program(target, strategy)["memory"]
            added = m["argument_bytes"] + m["output_bytes"] + m["temp_bytes"]
            if target.startswith("v5e"):
                assert m["peak_bytes"] > added
            else:
                assert m["peak_bytes"] < added
        gradients = model().params * 4 / MIB
        assert mib("v5p:2x2x2", strategy, "temp") == pytest.approx(gradients, rel=0.1)
    said = " ".join((TRAINING / "fsdp.md").read_text().split())
    assert (
        "above arguments, outputs and temporaries together for these steps on v5e"
        in said
    )


def test_the_bfloat16_gathers_come_from_the_default_precision():
    """Nothing in the build asks for another matmul precision than JAX's default."""
    import jax

    assert jax.config.jax_default_matmul_precision is None
    for source in (ROOT / "docs_build" / "tpu").glob("*.py"):
        assert "precision" not in source.read_text(), source
    for page in ("fsdp", "scaling", "choosing"):
        said = " ".join((TRAINING / f"{page}.md").read_text().split())
        assert "default matmul precision" in said, page
        assert "the type the" not in said, page


def test_tensor_parallel_claims():
    for target in ("cpu", *TPUS):
        assert kinds(target, "tensor parallel") == {"all-reduce": 1}
    assert mib("v5e:2x4", "tensor parallel", "wire") == pytest.approx(
        mib("cpu", "tensor parallel", "wire"), rel=1e-3
    )
    small, large = (
        mib(t, "tensor parallel", "state") for t in ("v5e:2x4", "v5e:16x16")
    )
    assert large < small < 32 * large
    # the batch, whole on every device, is most of what a device holds on 256 chips
    assert model().batch_bytes / MIB > 0.5 * large


def test_tpu_programs_split_collectives_into_pairs_and_cpu_programs_do_not():
    """two-d: on the CPU every collective is one instruction; the TPU programs the site
    compiles split some into a start and a done or wrap them in fusions."""
    programs = pages.results()["programs"] + pages.results()["advanced"]["programs"]
    forms = {}
    for p in (p for p in programs if "refused" not in p):
        platform = "cpu" if p["target"] == "cpu" else "tpu"
        forms.setdefault(platform, set()).update(c["form"] for c in p["collectives"])
    assert forms["cpu"] == {"sync"}
    assert {"async", "async-fusion"} <= forms["tpu"]
    said = " ".join((TRAINING / "two-d.md").read_text().split())
    assert "GPU and TPU programs often split" not in said
    assert "may be printed as a `-start` and a `-done` instruction" in said


def test_two_d_claims():
    for target in ("cpu", *TPUS):
        assert kinds(target, "2-D") == {"all-reduce": 2}
    states = [mib(t, "2-D", "state") for t in TPUS]
    assert max(states) < 1.05 * min(states)
    wires = [mib(t, "2-D", "wire") for t in ("v5e:2x4", "v5e:8x8", "v5e:16x16")]
    assert wires == sorted(wires) and wires[0] < wires[-1]


def test_the_fast_links_on_tpu_are_the_slice():
    """two-d and choosing: on TPUs the fast domain is the slice, whose chips span
    several hosts (a v5e host has 8 chips); within one slice of 64 or 256 chips every
    collective runs over the inter-chip links, with groups up to the whole slice."""
    for target in ("v5e:8x8", "v5e:16x16"):
        devices = pages.results()["targets"][target]["devices"]
        assert devices > 8
        for strategy in ("data parallel", "2-D"):
            collectives = pages.program(target, strategy)["collectives"]
            assert {c["network"] for c in collectives} == {"ici"}  # no DCN in a slice
        groups = [
            c["group_size"]
            for c in pages.program(target, "data parallel")["collectives"]
        ]
        assert max(groups) == devices
    for page in ("two-d", "choosing"):
        said = " ".join((TRAINING / f"{page}.md").read_text().split())
        phrase = (
            "on TPUs, the chips of one slice, whose inter-chip links span several hosts"
        )
        assert phrase in said, page


def test_pipeline_claims():
    m = model()
    for target in ("cpu", *TPUS):
        p = pages.program(target, "pipeline")
        stages = p["mesh"]["stage"]
        ticks = m.microbatches + stages - 1
        assert kinds(target, "pipeline") == {"collective-permute": 2 * ticks}
        assert cm.plan_of(p).width == (4 if target == "cpu" else 2)
    assert mib("v5e:2x4", "pipeline", "wire") == pytest.approx(
        mib("cpu", "pipeline", "wire") / 2, rel=0.01
    )
    # 256 stages and 8 microbatches: most ticks are bubble
    stages = pages.program("v5e:16x16", "pipeline")["mesh"]["stage"]
    assert (stages - 1) / (m.microbatches + stages - 1) > 0.5


def test_choosing_claims():
    for strategy in ("data parallel", "tensor parallel", "2-D"):
        assert mib("v5e:2x4", strategy, "wire") == pytest.approx(
            mib("cpu", strategy, "wire"), rel=1e-3
        )
    fsdp = mib("v5e:2x4", "FSDP", "wire")
    assert fsdp < mib("v5e:2x4", "data parallel", "wire") < mib("cpu", "FSDP", "wire")
    assert fsdp != pytest.approx(mib("cpu", "FSDP", "wire"), rel=0.1)
    # "from less than data parallelism on v5e:2x4 to twice it on v5e:16x16", the extremes
    ratios = {
        t: mib(t, "FSDP", "wire") / mib(t, "data parallel", "wire")
        for t in ("cpu", *TPUS)
    }
    assert min(ratios, key=ratios.get) == "v5e:2x4" and ratios["v5e:2x4"] < 1
    assert max(ratios, key=ratios.get) == "v5e:16x16"
    assert ratios["v5e:16x16"] == pytest.approx(2, rel=0.01)


def test_a_pages_notebook_quotes_the_same_figures():
    from docs_build import notebooks

    content = notebooks.build(TRAINING / "data-parallel.md", "https://x/", "https://y/")
    assert "<!-- tpu" not in content
    assert pages.number("v5e:16x16", "data parallel") in content


def test_multi_host_claims_about_slices():
    target, strategy = "2 slices of v5e:2x4", "data parallel"
    p = pages.program(target, strategy)
    ici = {(c["kind"], c["network"]) for c in p["collectives"]}
    # summed within the slice (reduce-scatter), across slices (DCN), gathered again
    assert {
        ("reduce-scatter", "ici"),
        ("all-gather", "ici"),
        ("all-reduce", "dcn"),
    } <= ici
    assert mib(target, strategy, "dcn") < mib(target, strategy, "ici") / 10  # "only"
    assert pages.floor_ms(p, "dcn") > pages.floor_ms(p, "ici")  # "longer than"
    text = (TRAINING / "multi-host.md").read_text(encoding="utf-8")
    assert f"]({cm.V5E.url})" in text and "<!-- tpu-hybrid: tpu -->" in text
    assert "each host's network cards shared by its 8 chips" in text
    assert cm.V5E.dcn == 2 * 100e9 / 8 / 8  # 2 x 100 Gbit/s NICs per host of 8 chips


def test_multi_host_claims_about_gpu_nodes():
    """ "For data parallelism the GPU program does not sum within each node first ... For
    FSDP ... within each node, over NVLink, and across nodes one all-reduce in pairs of
    GPUs, [0, 8], [1, 9] ... the formula's bytes"."""
    from docs_build import hlo

    target = "2 nodes of h100:1x8"
    text = " ".join((TRAINING / "multi-host.md").read_text(encoding="utf-8").split())
    assert "<!-- tpu-hybrid: gpu -->" in text
    assert "does not sum within each node first" in text
    dp = pages.program(target, "data parallel")
    assert {(c["kind"], c["group_size"], c["network"]) for c in dp["collectives"]} == {
        ("all-reduce", 16, "ib")
    }
    fsdp = pages.program(target, "FSDP")
    within = {c["kind"] for c in fsdp["collectives"] if c["network"] == "nvlink"}
    assert within == {"all-gather", "reduce-scatter"}
    assert {
        c["group_size"] for c in fsdp["collectives"] if c["network"] == "nvlink"
    } == {8}
    pairs = [c for c in fsdp["collectives"] if c["group_size"] == 2]
    assert len(pairs) == 1 and pairs[0]["network"] == "ib"
    groups = hlo.replica_groups(pairs[0]["replica_groups"], 16)
    assert groups == [[i, i + 8] for i in range(8)]
    small = [c for c in fsdp["collectives"] if c["network"] == "ib" and c not in pairs]
    assert all(c["result_bytes"] < 64 * 2**10 for c in small)  # "a few kilobytes"
    m = model()
    assert mib(target, "FSDP", "ib") == pytest.approx(
        cm.dcn_bytes(fsdp["mesh"], m) / 2**20, rel=cm.TOLERANCE
    )
    # the times: the larger NVLink share still takes longer than the InfiniBand one
    assert pages.floor_ms(fsdp, "ib") < pages.floor_ms(fsdp, "nvlink")
    assert "sending that takes at least" in text and ", against" in text
    # the bandwidths the prose names are the ones the times are computed from
    assert "(900 GB/s of NVLink per GPU, both directions together)" in text
    assert "(one 400 Gb/s InfiniBand port per GPU)" in text
    assert cm.H100.within == 900e9 / 2 and cm.H100.between == 400e9 / 8
    assert f"[NVIDIA publishes]({cm.H100.url})" in text


def said(page: str) -> str:
    return " ".join((TRAINING / f"{page}.md").read_text(encoding="utf-8").split())


def test_the_training_pages_claims_about_the_gpu_programs_hold():
    """Each training page's GPU sentence, against the GPU programs."""
    gpus = [t for t in pages.results()["targets"] if pages.family_of(t) == "gpu"]
    m = model()
    for target in gpus:
        # data parallel: "two all-reduces of about half of them each, the same bytes in
        # all ... each GPU program about half of it" (of the gradients, in temporaries)
        dp = pages.program(target, "data parallel")
        assert kinds(target, "data parallel") == {"all-reduce": 2}
        half = m.params * 4 / 2
        assert all(
            abs(c["result_bytes"] - half) < 0.01 * half for c in dp["collectives"]
        )
        assert dp["memory"]["temp_bytes"] == pytest.approx(half, rel=0.01)
        # tensor parallel: one all-reduce of the activations, the CPU's bytes
        assert kinds(target, "tensor parallel") == {"all-reduce": 1}
        # 2-D: the same two all-reduces; model within a node, data across nodes
        assert kinds(target, "2-D") == {"all-reduce": 2}
        # pipeline: "the GPU programs send both in one permute ... float32, as the CPU's"
        pipe = pages.program(target, "pipeline")
        (permute,) = pipe["collectives"]
        assert len(permute["shapes"]) == 2 and permute["shapes"][0].startswith("f32")
        assert cm.plan_of(pipe).width == 4
        # fsdp: float32 gathers; the choosing page's step reduce-scatters, this page's
        # all-reduces; the choosing page's temporaries are the two kernels whole
        for strategy in ("FSDP", "FSDP, explicit gather"):
            gathers = [
                c
                for c in pages.program(target, strategy)["collectives"]
                if c["kind"] == "all-gather"
            ]
            assert {c["dtype"] for c in gathers} == {"f32"}
        assert "reduce-scatter" in kinds(target, "FSDP")
        assert "reduce-scatter" not in kinds(target, "FSDP, explicit gather")
    assert mib("h100:1x8", "tensor parallel", "wire") == pytest.approx(
        mib("v5e:2x4", "tensor parallel", "wire"), rel=1e-3
    )
    assert mib("h100:1x8", "pipeline", "wire") == pytest.approx(
        mib("cpu", "pipeline", "wire"), rel=1e-3
    )
    assert "The GPU programs send the gradients in two all-reduces" in said(
        "data-parallel"
    )
    assert "the GPU programs send both in one permute" in said("pipeline")
    assert "send float32, as the CPU's" in said("pipeline")
    assert "**On the GPUs.** Both steps gather the kernels in float32" in said("fsdp")
    assert "stays on NVLink" in said("two-d")
    assert "On the H100s FSDP keeps the plan the FSDP page teaches" in said("choosing")
    for target in ("h100:2x8", "h100:8x8"):
        collectives = pages.program(target, "2-D")["collectives"]
        networks = sorted(c["network"] for c in collectives)
        assert networks == ["ib", "nvlink"]
