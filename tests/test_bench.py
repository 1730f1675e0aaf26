"""The benchmark command runs end to end on the CPU (tiny grids) and writes its outputs."""

import json

import pytest

from rtopk import bench


def test_bench_run_small_grid(tmp_path, capsys):
    grid = [(64, 40, 5, "randn"), (64, 40, 5, "two_values"), (64, 40, 5, "inf_mixed"), (32, 300, 40, "heavy_tail"),
            (16, 300, 150, "randn")]
    result = bench.run(grid, bench.DTYPES["float32"], "cpu")
    out = capsys.readouterr().out
    assert "| N | M | k | dist |" in out and "geometric means" in out
    assert len(result["rows"]) == len(grid)
    assert not any(r.get("wrong") or r.get("wrong_sorted") for r in result["rows"])
    assert "sorted output" in out and "sorted_cost_geomean" in result["summary"]
    assert "k > 128" in out and result["summary"]["sorted_cost_large_k_max"] == result["rows"][-1]["sorted_cost"]
    assert "worst_adversarial_ratio" in result["summary"]
    # The device name survives the summary loops (it was once overwritten by a loop variable).
    assert result["device"] == "CPU"
    costs = [r["sorted_cost"] for r in result["rows"] if r["dist"] == "randn" and r["k"] <= 128]
    assert result["summary"]["sorted_cost_cells"] == len(costs)
    assert result["summary"]["sorted_cost_within_25"] == sum(c <= 0.25 for c in costs)
    assert f"{sum(c <= 0.25 for c in costs)} of {len(costs)} cells within +25%" in out


def test_bench_main_writes_files(tmp_path, monkeypatch):
    monkeypatch.setitem(bench.GRIDS, "quick", [(128, 33, 4, "randn"), (128, 33, 4, "ties")])
    js, cs = tmp_path / "r.json", tmp_path / "r.csv"
    args = ["--device", "cpu", "--json", str(js), "--csv", str(cs)]
    plot_path = tmp_path / "r.png"
    try:
        import matplotlib  # noqa: F401

        args += ["--plot", str(plot_path)]
    except ImportError:
        plot_path = None
    assert bench.main(args) == 0
    data = json.loads(js.read_text())
    assert [r["dist"] for r in data["rows"]] == ["randn", "ties"]
    assert cs.read_text().startswith("N,M,k,dist,")
    if plot_path is not None:
        assert plot_path.stat().st_size > 1000


@pytest.mark.parametrize("dist", ("randn",) + bench.ADVERSARIAL)
def test_bench_inputs_are_real_data(dist):
    import torch

    x = bench.make_input(dist, 8, 50, torch.float32, "cpu", torch.Generator().manual_seed(0))
    assert x.shape == (8, 50) and not bool((x == 0).all())


def test_results_md_sections(tmp_path, capsys):
    """benchmarks/results_md.py renders a bench JSON as a results section: heading from the file name, the
    summary recomputed from the JSON, the adversarial ratios by row length, one table row per cell."""
    import importlib.util
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("results_md", os.path.join(here, "..", "benchmarks", "results_md.py"))
    results_md = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(results_md)
    grid = [(64, 40, 5, "randn"), (64, 40, 5, "two_values"), (64, 72, 5, "randn"), (64, 72, 5, "heavy_tail")]
    result = bench.run(grid, bench.DTYPES["float32"], "cpu")
    capsys.readouterr()
    path = tmp_path / "H200-adversarial_float32.json"
    path.write_text(json.dumps(result))
    text = results_md.section(str(path))
    assert text.startswith("## float32, adversarial rows\n")
    assert f"exact {result['summary']['floor_frac_exact']:.3f}" in text
    assert "exact floor fraction by M:" in text and "(M = 40, 72)" in text
    ratio = result["rows"][1]["exact"] / result["rows"][0]["exact"]
    assert f"M = 40: two_values {ratio:.2f}x" in text
    assert sum(line.startswith("| 64 |") for line in text.splitlines()) == len(grid)


def test_bench_sorted_check(monkeypatch):
    """The sorted-output check passes rtopk's rank order on rows with NaN of both signs and +-inf (torch.topk's own
    CUDA sorted output misorders NaN, so the check ranks torch's selection itself), and fails an index-order output
    and one with a NaN moved out of first place."""
    import torch

    import rtopk

    gen = torch.Generator().manual_seed(5)
    for dist in ("randn", "nan_mixed", "inf_mixed", "all_nan", "two_values"):
        x = bench.make_input(dist, 64, 256, torch.float32, "cpu", gen)
        assert bench.sorted_matches_torch(x, 32), dist
    x = bench.make_input("nan_mixed", 64, 256, torch.float32, "cpu", gen)
    real_topk = rtopk.topk

    def index_order(t, k, sorted=True):
        return real_topk(t, k, sorted=False)

    def nan_last(t, k, sorted=True):
        v, i = real_topk(t, k, sorted=True)
        return torch.return_types.topk((v.roll(-1, -1), i.roll(-1, -1)))

    for fake in (index_order, nan_last):
        monkeypatch.setattr(rtopk, "topk", fake)
        assert not bench.sorted_matches_torch(x, 32), fake.__name__
