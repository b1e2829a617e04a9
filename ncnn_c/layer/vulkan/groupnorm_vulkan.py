"""GroupNorm on the GPU, in place, through the shared normalisation passes (``_meanvar``):
one segment per group of channels, gamma/beta per channel."""

from __future__ import annotations

from ..groupnorm import GroupNorm
from ._meanvar import MeanVarNormVulkan, NormLayout, line_view, logical_shape


class GroupNorm_vulkan(MeanVarNormVulkan, GroupNorm):
    def gamma_beta(self):
        return (self.gamma_data, self.beta_data) if self.affine else (None, None)

    def norm_layout(self, m):
        if not self._accepts(logical_shape(m)):
            return None
        cg = self.channels // self.group
        if m.dims == 1:
            # every scalar is a channel of one value
            return NormLayout(P=1, lstride=1, rows=self.channels, n=1, spc=1, nch=cg)
        P, lstride, rows, inner = line_view(m)
        return NormLayout(P=P, lstride=lstride, rows=rows, n=inner, spc=1, nch=cg)
