"""Compiled CPU kernels (Numba) for stages of ``SMACSim``'s step, bit-equal to the torch code."""
