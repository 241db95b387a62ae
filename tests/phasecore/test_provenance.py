"""Every result records what made it: kind, configuration, versions, and the CPU kernels
where they were chosen by hand."""

import json
import os
import subprocess
import sys

from phasecore.results import KERNEL_LEVERS, provenance


def _kernels_in_child(env_extra: dict) -> dict | None:
    """The ``kernels`` attribute a fresh process with ``env_extra`` writes (None: none)."""
    code = ("import torch; from phasecore.results import provenance; "
            "print(provenance('k', {}).get('kernels', 'null'))")
    return json.loads(_child(code, env_extra))


def test_provenance_records_the_kernel_levers_that_are_set_and_torchs_vector_width():
    attrs = provenance("test.kind", {"a": 1})
    assert attrs["kind"] == "test.kind" and json.loads(attrs["config"]) == {"a": 1}
    assert "numpy" in json.loads(attrs["versions"])
    assert _kernels_in_child({}) is None  # the machine's own kernels: nothing recorded
    other = _kernels_in_child({"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"})
    assert other == {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE",
                     "torch_cpu_capability": "DEFAULT"}


def _child(code: str, env_extra: dict) -> str:
    """What a fresh process running ``code`` prints, with no kernel lever set but
    ``env_extra``."""
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_LEVERS}
    return subprocess.run([sys.executable, "-c", code], env={**env, **env_extra}, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_importing_dnnphase_asks_mkl_for_reproducible_kernels_unless_the_user_chose():
    """MKL's own dispatch multiplied a stack of 2 matrices with other bits than one matrix
    alone on an AMD EPYC with AVX-512 at these shapes (a model depended on its stack-mates);
    its reproducible branch does not. The package's own setting is not "chosen by hand"."""
    code = ("import os, torch, dnnphase; from phasecore.results import provenance\n"
            "g = torch.Generator().manual_seed(0)\n"
            "h, d = torch.randn(2, 16, 13, generator=g), torch.randn(2, 16, 5, generator=g)\n"
            "many = torch.bmm(h.transpose(1, 2), d)\n"
            "same = all(torch.equal(many[m], torch.bmm(h[m:m + 1].transpose(1, 2), "
            "d[m:m + 1])[0]) for m in range(2))\n"
            "print(os.environ['MKL_CBWR'], same, provenance('k', {}).get('kernels'))")
    assert _child(code, {}) == "AUTO True None"
    chosen = _child(code, {"MKL_CBWR": "COMPATIBLE"}).split(" ", 2)
    assert chosen[:2] == ["COMPATIBLE", "True"] and '"MKL_CBWR": "COMPATIBLE"' in chosen[2]
