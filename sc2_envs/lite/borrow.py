"""Borrowed array views for the hot Numba kernels: the same memory, no reference counting.

Numba counts references to every array through its meminfo: each time an array is bound to a new
variable it increments the count (an atomic add) and decrements it when the variable dies. Inlining a
helper (``numba.njit(inline="always")``) binds each of its array parameters to a new variable, and
Numba's reference-count pruning does not remove the pairs across a helper's several exits; a game loop
written as small inlined steps over twenty state arrays then spends much of its time on these atomic
operations, which also keep LLVM from holding array loads in registers across them.

``borrowed`` returns the arrays as views with no meminfo (as ``numba.carray`` makes over a raw
pointer): Numba's increments and decrements of a null meminfo are no-ops, and once the view is made in
the function that uses it LLVM sees the null constant and drops them at compile time. The data,
shape and strides are those of the input, so every read and write is the same; results are bit-equal.

The caller must keep the source arrays alive while the views are in use and must not let a view escape
the call (return it or store it): a view does not keep its memory alive. Kernels that take their arrays
as arguments satisfy both.
"""

from __future__ import annotations

from numba.core import types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array


@intrinsic
def borrowed(typingctx, arrays):
    """The tuple ``arrays`` of Numba arrays as views without reference counting (inside a jitted function).

    Args:
        arrays: a tuple of arrays (any dtypes, dimensions and layouts).

    Returns:
        a tuple of the same types: each a view of the same data, shape and strides, with a null meminfo
        and no parent object.
    """
    if not isinstance(arrays, types.BaseTuple) or not all(isinstance(a, types.Array) for a in arrays):
        return None

    def codegen(context, builder, sig, args):
        (tup,) = args
        views = []
        for k, aty in enumerate(sig.args[0]):
            src = make_array(aty)(context, builder, builder.extract_value(tup, k))
            view = make_array(aty)(context, builder)
            populate_array(view, data=src.data, shape=src.shape, strides=src.strides, itemsize=src.itemsize, meminfo=None)
            views.append(view._getvalue())
        return context.make_tuple(builder, sig.return_type, views)

    return arrays(arrays), codegen
