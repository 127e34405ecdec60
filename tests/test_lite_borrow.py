"""``sc2_envs.lite.borrow.borrowed``: views of the same memory without reference counting."""

import numba
import numpy as np

from sc2_envs.lite.borrow import borrowed


@numba.njit
def _write_through_views(a, b):
    va, vb = borrowed((a, b))
    for i in range(va.shape[0]):
        for j in range(va.shape[1]):
            va[i, j] += vb[j]
    return va.shape[0], va.shape[1], va.strides[0], va.strides[1], vb.shape[0]


def test_borrowed_views_write_the_source_arrays_with_their_shapes_and_strides():
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    b = np.array([1, 2, 3], np.int64)
    expected = a + b
    shape_strides = _write_through_views(a, b)
    np.testing.assert_array_equal(a, expected)
    assert shape_strides == (4, 3, a.strides[0], a.strides[1], 3)


def test_borrowed_views_of_a_strided_slice_see_the_slice():
    base = np.zeros((6, 4), np.float32)
    view = base[::2, 1:]
    _write_through_views(view, np.array([1, 1, 1], np.int64))
    assert base[::2, 1:].sum() == view.size and base.sum() == view.size
