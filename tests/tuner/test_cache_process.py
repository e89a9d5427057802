"""A second process loads the first one's tuning from disk and never calls the scorer."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent('''
    import sys
    from pathlib import Path

    import numpy as np

    from autotile.tuner import Config, autotune
    from tests.tuner._kernels import double_kernel, grid_1d

    counter = Path(sys.argv[1])
    dtype = np.dtype(sys.argv[2])


    def scorer(cfg, args):
        counter.write_text(str(int(counter.read_text() or "0") + 1))
        return 1e-3 / cfg.kwargs["BLOCK"]


    k = autotune([Config({"BLOCK": b, "TAIL": "mask"}) for b in (16, 32, 64)], key=["n"],
                 scorer=scorer)(double_kernel)
    x = np.arange(96, dtype=dtype)
    out = np.zeros(96, dtype)
    k[grid_1d](x, out, 96)
    assert (out == 2 * x).all()
    print(k.cache_source, k.n_tuned, k.best_config)
''')


def _run(script, counter, dtype, cache_dir):
    env = {**os.environ, "AUTOTILE_CACHE_DIR": str(cache_dir)}
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, str(script), str(counter), dtype], env=env, cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_second_process_hits_the_disk_cache(tmp_path):
    script = tmp_path / "tune_once.py"
    script.write_text(SCRIPT)
    counter = tmp_path / "n_scored"
    counter.write_text("0")
    cache = tmp_path / "cache"
    assert _run(script, counter, "float32", cache) == \
        "tuned 1 BLOCK: 64, TAIL: mask, num_warps: 4, num_stages: 3"
    assert counter.read_text() == "3"
    (entry,) = cache.glob("double_kernel-*.json")
    data = json.loads(entry.read_text())
    assert data["best_str"] == "BLOCK: 64, TAIL: mask, num_warps: 4, num_stages: 3"
    assert data["best_index"] == 2 and [h["status"] for h in data["history"]] == ["ok"] * 3
    assert _run(script, counter, "float32", cache) == \
        "disk 0 BLOCK: 64, TAIL: mask, num_warps: 4, num_stages: 3"
    assert counter.read_text() == "3"  # the scorer was not called again
    assert _run(script, counter, "float64", cache).startswith("tuned 1")  # new dtype, new key
    assert counter.read_text() == "6"
