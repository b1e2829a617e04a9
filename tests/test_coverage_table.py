"""The README's layer coverage table is what the code has: a row per ncnn layer type (all 110),
with a CPU form, a Vulkan form, an int8 form and a native CPU plan form as the code says.

``python tests/test_coverage_table.py`` prints the table to paste into the README.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# layer types with an int8 forward (int8_scale_term / quantized weights, or int8 by nature)
INT8 = {"Convolution", "ConvolutionDepthWise", "InnerProduct", "Gemm", "Quantize", "Dequantize", "Requantize"}


def table() -> str:
    from ncnn_c.layer import LAYER_TYPES, create_layer_cpu
    from ncnn_c.net.native.ops import NATIVE_TYPES

    vk_dir = ROOT / "ncnn_c" / "layer" / "vulkan"
    vk = {f[: -len("_vulkan.py")] for f in os.listdir(vk_dir) if f.endswith("_vulkan.py")}
    rows = ["| layer | CPU | native plan | Vulkan | int8 |", "|---|:-:|:-:|:-:|:-:|"]
    mark = {True: "yes", False: "-"}
    for t in sorted(LAYER_TYPES, key=str.lower):
        cpu = create_layer_cpu(t) is not None
        rows.append(
            f"| {t} | {mark[cpu]} | {mark[t in NATIVE_TYPES]} | {mark[t.lower() in vk]} | {mark[t in INT8]} |"
        )
    return "\n".join(rows)


def test_readme_table_matches_the_code():
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"\| layer \| CPU \| native plan \| Vulkan \| int8 \|\n(?:\|.*\|\n)+", readme)
    assert m, "the README has no coverage table (python tests/test_coverage_table.py prints it)"
    assert m.group(0).strip() == table(), "README coverage table is stale: regenerate it"


def test_every_type_has_a_cpu_form():
    from ncnn_c.layer import LAYER_TYPES, create_layer_cpu

    assert len(LAYER_TYPES) == 110
    assert [t for t in LAYER_TYPES if create_layer_cpu(t) is None] == []


if __name__ == "__main__":
    print(table())
