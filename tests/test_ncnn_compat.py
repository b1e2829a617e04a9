"""What Tencent/ncnn's own ``python/tests`` check, written for ncnn_c (issue 14, section 2).

ncnn's tests are not vendored: this module exercises the same behaviours in our own code, and
``tests/ncnn_python_tests.py`` runs ncnn's files themselves, unchanged, from a checkout.
"""

from __future__ import annotations

import pytest

import ncnn_c as ncnn


def test_extractor_has_no_constructor():
    with pytest.raises(TypeError, match="No constructor defined"):
        ncnn.Extractor()
    net = ncnn.Net()
    with net.create_extractor() as ex:
        assert isinstance(ex, ncnn.Extractor)
