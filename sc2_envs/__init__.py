"""sc2-envs: StarCraft II multi-agent RL environments with an embedded SMAC simulator.

Public surface:
    * ``make_batched(map_name, num_envs, device, seed, **options)``: the native batched simulator.
    * ``list_maps()``: the SMAC v1 maps the simulator supports.
"""

from sc2_envs.maps import get_map, list_maps
from sc2_envs.sim import SMACSim, UnitPlacement, make_batched

__all__ = ["SMACSim", "UnitPlacement", "get_map", "list_maps", "make_batched"]
__version__ = "0.1.0"
