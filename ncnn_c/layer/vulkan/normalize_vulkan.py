"""Normalize on the GPU, in place, through the shared normalisation passes (``_meanvar``)
in their sum-of-squares mode: one L2 norm for the blob (across spatial and channels), per
channel (across spatial), or per spatial position (across channels); then the scale, shared
or per channel. 1-D/2-D blobs are one channel, as on the CPU."""

from __future__ import annotations

from ..normalize import Normalize
from ._meanvar import MeanVarNormVulkan, NormLayout, line_view, logical_shape


class Normalize_vulkan(MeanVarNormVulkan, Normalize):
    @property
    def stats_mode(self) -> int:  # type: ignore[override]
        return 1 + self.eps_mode

    @property
    def kseg(self) -> int:  # type: ignore[override]
        return int(not self.across_spatial)

    def gamma_beta(self):
        return self.scale_data, None

    def norm_layout(self, m):
        if not self._accepts(logical_shape(m)):
            return None
        P, lstride, rows, inner = line_view(m)
        channels = rows * P
        one_channel = m.dims <= 2
        gmul = 0 if self.channel_shared or one_channel else 1
        if self.across_spatial:
            # one norm per channel, or one for the whole blob
            nch = channels if self.across_channel or one_channel else 1
            return NormLayout(P=P, lstride=lstride, rows=rows, n=inner, spc=1, nch=nch, gmul=gmul)
        # one norm per spatial position, over the channels (a 1-D/2-D blob's only channel)
        if one_channel:
            apply = (inner, 1, 1.0, inner)
            return NormLayout(P=P, lstride=lstride, rows=rows, n=1, spc=inner, nch=1, gmul=gmul, apply=apply)
        apply = (inner, 1, 0.0, 0)
        return NormLayout(
            P=P, lstride=lstride, rows=rows, n=1, spc=inner, nch=channels, gmul=gmul, apply=apply
        )

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        if not self.across_spatial and not self.across_channel:
            # no norm at all: the blob passes through, as on the CPU
            return 0 if self.norm_layout(bottom_top) is not None else -1
        return super().forward_inplace_vk(bottom_top, cmd, opt)
