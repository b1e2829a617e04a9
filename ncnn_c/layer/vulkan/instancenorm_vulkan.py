"""InstanceNorm on the GPU, in place, through the shared normalisation passes (``_meanvar``):
one segment per channel (the whole blob for 1-D/2-D), gamma/beta per segment."""

from __future__ import annotations

from ..instancenorm import InstanceNorm
from ._meanvar import GAMMA_SEGMENT, MeanVarNormVulkan, NormLayout, line_view, logical_shape


class InstanceNorm_vulkan(MeanVarNormVulkan, InstanceNorm):
    gamma_mode = GAMMA_SEGMENT

    def gamma_beta(self):
        return (self.gamma_data, self.beta_data) if self.affine else (None, None)

    def norm_layout(self, m):
        if not self._accepts(logical_shape(m)):
            return None
        P, lstride, rows, inner = line_view(m)
        # 1-D/2-D blobs are one channel: every line joins one segment
        nch = 1 if m.dims >= 3 else rows * P
        return NormLayout(P=P, lstride=lstride, rows=rows, n=inner, spc=1, nch=nch)
