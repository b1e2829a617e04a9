"""RMSNorm on the GPU, in place, through the shared normalisation passes (``_meanvar``) in
their mean-of-squares mode: one segment per slice (its length from the CPU layer's rule),
gamma per position in the slice, no shift and no beta."""

from __future__ import annotations

from ..rmsnorm import RMSNorm
from ._meanvar import GAMMA_POSITION, MeanVarNormVulkan, NormLayout, line_view, logical_shape

# meanvar_partial/combine's statistics: 1 / sqrt(mean(x^2) + eps)
STATS_RMS = 4


class RMSNorm_vulkan(MeanVarNormVulkan, RMSNorm):
    stats_mode = STATS_RMS
    gamma_mode = GAMMA_POSITION

    def gamma_beta(self):
        return (self.gamma_data if self.affine else None), None

    def norm_layout(self, m):
        shape = logical_shape(m)
        shape.elemsize = 4  # the CPU check asks for fp32; fp16 lanes are read as such here
        n = self._slice_len(shape)
        if n < 0:
            return None
        P, lstride, rows, inner = line_view(m)
        return NormLayout(P=P, lstride=lstride, rows=rows, n=n, spc=inner // n, nch=1)
