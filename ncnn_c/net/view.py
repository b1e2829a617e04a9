"""NetView: what an executor may see of a loaded Net, read-only.

The executors (``reference``, ``native``, ``vulkan_forward``) and the Extractor read the
graph, the plans and the device through this view and nothing else of the Net: the Net's
private attributes are named here only. The view is live (a Net reloaded or cleared is
seen as it is now) and holds the Net, never the other way round, so no cycle keeps a Net
alive. Plans and per-layer options are built by the Net on first use and cached there; the
replay and native-plan caches are the Net's too (they go with its weights).
"""

from __future__ import annotations

from typing import Any

from ..layer import Layer
from ..option import Option
from .graph import Blob
from .plan import LayerOptions, Plan, data_source


class NetView:
    """Read-only access to a Net's loaded graph, caches and Vulkan device."""

    __slots__ = ("_net",)

    def __init__(self, net: Any) -> None:
        self._net = net

    # -- the graph ----------------------------------------------------------------------------
    @property
    def blobs(self) -> list[Blob]:
        return self._net._blobs

    @property
    def layers(self) -> list[Layer]:
        return self._net._layers

    @property
    def consumer_counts(self) -> list[int]:
        """Layers reading each blob."""
        return self._net._consumer_counts

    def is_source(self, index: int) -> bool:
        """Whether blob ``index`` can only come from ``ex.input()`` (plan.data_source)."""
        net = self._net
        return data_source(net._blobs, net._layers, index)

    def plan(self, index: int) -> Plan:
        """The layers blob ``index`` needs (made once per blob)."""
        return self._net._plan(index)

    def layer_options(self, opt: Option) -> LayerOptions:
        """Each layer's Option for the values of ``opt`` (a new object when they changed)."""
        return self._net._layer_options(opt)

    def input_names(self) -> list[str]:
        return self._net.input_names()

    # -- the CPU plan ---------------------------------------------------------------------------
    @property
    def native_enabled(self) -> bool:
        """``net.native_plan``: False keeps the numpy layers."""
        return bool(self._net.native_plan)

    @property
    def native_plans(self) -> Any:
        """The net's NativePlans (dropped with its weights)."""
        return self._net._native_plans

    # -- Vulkan ---------------------------------------------------------------------------------
    @property
    def gpu_ready(self) -> bool:
        """Whether the layers' pipelines were made for the Vulkan device."""
        return self._net._gpu_ready

    @property
    def vkdev(self) -> Any:
        return self._net._vkdev

    @property
    def vk_layout(self) -> Any:
        """The layout-conversion Pipeline of a GPU net."""
        return self._net._vk_layout

    @property
    def replay_capacity(self) -> int:
        return self._net.replay_capacity

    @property
    def replays(self) -> Any:
        """The net's ReplayCache."""
        return self._net._replays
