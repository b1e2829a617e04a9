"""LayerNorm on the GPU, in place, through the shared normalisation passes (``_meanvar``):
one segment per innermost slice (its length from the CPU layer's rule), gamma/beta per
position in the slice."""

from __future__ import annotations

from ..layernorm import LayerNorm
from ._meanvar import GAMMA_POSITION, MeanVarNormVulkan, NormLayout, line_view, logical_shape


class LayerNorm_vulkan(MeanVarNormVulkan, LayerNorm):
    gamma_mode = GAMMA_POSITION

    def gamma_beta(self):
        return (self.gamma_data, self.beta_data) if self.affine else (None, None)

    def norm_layout(self, m):
        n = self._slice_len(logical_shape(m))
        if n < 0:
            return None
        P, lstride, rows, inner = line_view(m)
        return NormLayout(P=P, lstride=lstride, rows=rows, n=n, spc=inner // n, nch=1)
