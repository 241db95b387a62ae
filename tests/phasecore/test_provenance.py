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
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_LEVERS}
    out = subprocess.run([sys.executable, "-c", code], env={**env, **env_extra}, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def test_provenance_records_the_kernel_levers_that_are_set_and_torchs_vector_width():
    attrs = provenance("test.kind", {"a": 1})
    assert attrs["kind"] == "test.kind" and json.loads(attrs["config"]) == {"a": 1}
    assert "numpy" in json.loads(attrs["versions"])
    assert _kernels_in_child({}) is None  # the machine's own kernels: nothing recorded
    other = _kernels_in_child({"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"})
    assert other == {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE",
                     "torch_cpu_capability": "DEFAULT"}
