"""Weapon timing from SC2 game data: damage point (wind-up), missile speed, spacing of multiple hits.

Time base: game loops (16 per normal-speed second); speeds in distance units per game loop.

Sources (SC2 4.6.2 game data, SC2Mapster/SC2GameData @949614a9, the same at 4.10.4;
``mods/{core,liberty}.sc2mod/base.sc2data/GameData/{Weapon,Effect,Mover}Data.xml``):
    * ``DamagePoint`` of each ``CWeaponLegacy`` (normal seconds; the default 0.1667 where a unit's
      weapon does not override it): marine 0.05, marauder 0, stalker 0.1667, zealot 0,
      zergling 0.1667, hydralisk 0.2083, colossus 0.0832, spine crawler 0.3332, baneling 0.
    * Missiles (``CEffectLaunchMissile`` with a ``CMoverMissile``; damage is dealt by the impact
      effect when the missile arrives): stalker (max speed 18.75 per normal s, acceleration 3200,
      i.e. at top speed at once), hydralisk (40), marauder (20), spine crawler (tentacle, up to 200).
      Marine, zergling, zealot, colossus and baneling damage is applied directly (no missile).
    * Zealot: two 8-damage hits 0.28 normal s apart (the second attack of its weapon's effect set;
      medium confidence: the spacing is read from the effect chain, not measured in game).

How the engine rounds a fractional damage point to game loops is not documented; the simulator lands
the hit ``ceil(damage_point)`` loops after the attack starts (0 -> the same loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from sc2_envs.units import LOOPS_PER_SECOND


@dataclass(frozen=True)
class WeaponTiming:
    """Timing of one unit type's weapon.

    Attributes:
        damage_point: normal seconds from the attack's start to its (first) hit or missile launch;
            the attack is cancelled, dealing nothing, if the attacker dies or gets another order
            (or its target dies) before then.
        missile_speed: missile speed in distance units per normal second; 0 = damage applied
            directly at the damage point.
        hit_interval: normal seconds between successive hits of one attack (``attacks > 1``);
            0 = all hits together.
    """

    damage_point: float = 0.0
    missile_speed: float = 0.0
    hit_interval: float = 0.0

    @property
    def damage_point_loops(self) -> float:
        return self.damage_point * LOOPS_PER_SECOND

    @property
    def missile_speed_per_loop(self) -> float:
        return self.missile_speed / LOOPS_PER_SECOND

    @property
    def hit_interval_loops(self) -> float:
        return self.hit_interval * LOOPS_PER_SECOND


WEAPON_TIMING: dict[str, WeaponTiming] = {
    "marine": WeaponTiming(damage_point=0.05),
    "marauder": WeaponTiming(damage_point=0.0, missile_speed=20.0),
    "stalker": WeaponTiming(damage_point=0.1667, missile_speed=18.75),
    "zealot": WeaponTiming(damage_point=0.0, hit_interval=0.28),
    "zergling": WeaponTiming(damage_point=0.1667),
    "hydralisk": WeaponTiming(damage_point=0.2083, missile_speed=40.0),
    "colossus": WeaponTiming(damage_point=0.0832),
    "spine_crawler": WeaponTiming(damage_point=0.3332, missile_speed=200.0),
    "baneling": WeaponTiming(damage_point=0.0),
    "medivac": WeaponTiming(),  # no weapon
}
"""Weapon timing per unit type (keys as in ``sc2_envs.units.UNITS``)."""


def get_timing(name: str) -> WeaponTiming:
    """The weapon timing of unit type ``name``.

    Raises:
        KeyError: unknown unit type; the message lists the known ones.
    """
    try:
        return WEAPON_TIMING[name]
    except KeyError:
        raise KeyError(f"no weapon timing for unit type {name!r}; known: {sorted(WEAPON_TIMING)}") from None
