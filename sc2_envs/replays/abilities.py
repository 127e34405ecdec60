"""Map replay commands (ability link, command index, target kind) to raw functions.

Chain:
1. ``m_abilLink`` (a build-specific index) -> ability link name, from sc2reader's datapack
   ``sc2reader/data/LotV/<pack>_abilities.csv``; the pack is chosen by base build with the
   same ranges sc2reader registers in ``resources.Replay``.
2. (link name, ``m_abilCmdIndex``) -> s2client API ability id, from ``stableid.json``
   (Blizzard/s2client-proto).
3. (ability id, target kind) -> raw function (``pysc2_evolved`` ``RAW_FUNCTIONS``); the
   target kind is ``pt`` for ``TargetPoint``, ``unit`` for ``TargetUnit``, else ``quick``.
4. Fallbacks when step 2 or 3 misses: the general ability (``remapid``), then the command
   name from sc2reader's ``ability_lookup.csv`` (e.g. ``OrbitalCommandTrain`` index 0 ->
   ``TrainSCV``) matched against raw function names (``Train_SCV_quick``) on their
   sorted words, so ``BuildBarracksTechLab`` finds ``Build_TechLab_Barracks_pt``.
A command without an ability (``m_abil`` None) is a right click: ``Smart_pt`` / ``Smart_unit``.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import json
import os
import pkgutil
import re
from pathlib import Path

from sc2_envs.full_game import spec
from sc2_envs.full_game._deps import require
from sc2_envs.replays.decode import UnsupportedBuildError

# (first base build, sc2reader LotV datapack) from sc2reader 1.9.0 resources.Replay.
_LOTV_PACKS = (
    (34784, "base"),
    (44401, "44401"),
    (47185, "47185"),
    (48258, "48258"),
    (53644, "53644"),
    (54724, "54724"),
    (59587, "59587"),
    (70154, "70154"),
    (76114, "76114"),
    (77379, "77379"),
    (80949, "80949"),
    (89634, "89720"),
    (95122, "96883"),
    (97364, "97364"),
)

SMART_PT = 1
SMART_UNIT = 12


def datapack_for_build(base_build: int) -> str:
    """sc2reader LotV datapack name for a base build.

    Raises:
        UnsupportedBuildError: builds before Legacy of the Void (< 34784).
    """
    pack = None
    for first, name in _LOTV_PACKS:
        if base_build >= first:
            pack = name
    if pack is None:
        raise UnsupportedBuildError(
            f"base build {base_build} predates Legacy of the Void (34784); no ability table maps its commands to raw functions"
        )
    return pack


PACKAGED_STABLEID = Path(__file__).resolve().parent / "data" / "stableid.json.gz"


def default_stableid_path() -> Path:
    """The ``stableid.json`` used when none is passed.

    ``$SC2_ENVS_SHARED_DATA/sc2_static/stableid.json`` when that environment variable is set (a newer
    table, e.g. the one StarCraft II writes to ``Documents/StarCraft II/stableid.json``); otherwise the
    copy shipped with the package, ``sc2_envs/replays/data/stableid.json.gz`` (gzip of the file at the
    top level of Blizzard/s2client-proto, commit dd91ad3965783fb56526ec511e58b7b9887007f9, MIT licence).
    """
    root = os.environ.get("SC2_ENVS_SHARED_DATA")
    if root:
        return Path(root) / "sc2_static" / "stableid.json"
    return PACKAGED_STABLEID


def _read_json(p: Path):
    """Parse a ``.json`` or gzip-compressed ``.json.gz`` file."""
    if p.suffix == ".gz":
        with gzip.open(p, "rt", encoding="utf-8") as f:
            return json.load(f)
    return json.loads(p.read_text())


@functools.lru_cache(maxsize=4)
def load_stableid(path: str) -> dict[tuple[str, int], tuple[int, int]]:
    """(link name, command index) -> (ability id, general ability id or 0) from stableid.json.

    Raises:
        FileNotFoundError: the file is missing (message says where it was looked for).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(
            f"stableid.json not found at {str(p)!r}; pass stableid_path= or set SC2_ENVS_SHARED_DATA "
            "to a folder holding sc2_static/stableid.json (StarCraft II writes this file to "
            "Documents/StarCraft II/stableid.json on Windows and macOS)"
        )
    table = _read_json(p)
    out = {}
    for a in table["Abilities"]:
        out[(a["name"], int(a["index"]))] = (int(a["id"]), int(a.get("remapid", 0)))
    return out


@functools.lru_cache(maxsize=32)
def _link_names(pack: str) -> dict[int, str]:
    require("sc2reader", "ability link names")
    data = pkgutil.get_data("sc2reader.data", f"LotV/{pack}_abilities.csv").decode("utf8")
    out = {}
    for line in data.splitlines():
        if line.strip():
            idx, name = line.strip().split(",")
            out[int(idx)] = name
    return out


@functools.lru_cache(maxsize=1)
def _command_names() -> dict[str, list[str]]:
    require("sc2reader", "ability command names")
    data = pkgutil.get_data("sc2reader.data", "ability_lookup.csv").decode("utf8")
    return {row[0]: row[1:] for row in csv.reader(io.StringIO(data)) if row}


def _norm(name: str) -> str:
    """Order-free name key: CamelCase and ``_`` words, lower-cased and sorted.

    ``BuildBarracksTechLab`` (sc2reader command) and ``Build_TechLab_Barracks`` (raw function)
    both become ``barracks build lab tech``.
    """
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
    return " ".join(sorted(w.lower() for w in words))


@functools.lru_cache(maxsize=1)
def _functions_by_name() -> dict[tuple[str, str], int]:
    out = {}
    for f in spec.raw_functions():
        base = f.name.rsplit("_", 1)[0] if f.kind in ("quick", "pt", "unit", "autocast") else f.name
        out.setdefault((_norm(base), f.kind), f.id)
    return out


class AbilityMapper:
    """Maps one build's commands to raw function ids and counts what it could not map.

    Args:
        base_build: the replay's base build.
        stableid_path: path of ``stableid.json`` (default ``default_stableid_path()``).

    Raises:
        UnsupportedBuildError: the build has no sc2reader datapack.
        FileNotFoundError: ``stableid.json`` is missing.
    """

    def __init__(self, base_build: int, stableid_path: str | os.PathLike | None = None):
        self.pack = datapack_for_build(int(base_build))
        self.links = _link_names(self.pack)
        self.stable = load_stableid(str(stableid_path or default_stableid_path()))
        self.by_ability = spec.function_by_ability()
        self.general = spec.general_function_ids()

    def link_name(self, link: int) -> str | None:
        """Ability link name of a link index in this build (None when unknown)."""
        return self.links.get(int(link))

    def map(self, abil: dict | None, kind: str) -> tuple[int, int] | None:
        """Raw function of one ``SCmdEvent``.

        Args:
            abil: the event's ``m_abil`` (``m_abilLink``, ``m_abilCmdIndex``) or None.
            kind: ``quick``, ``pt`` or ``unit`` (from ``m_data``).

        Returns:
            ``(specific_function, general_function)`` ids, or None when unmapped.
        """
        if abil is None:
            fid = {"pt": SMART_PT, "unit": SMART_UNIT}.get(kind)
            return None if fid is None else (fid, fid)
        name = self.link_name(abil["m_abilLink"])
        if name is None:
            return None
        index = int(abil["m_abilCmdIndex"])
        fid = None
        ids = self.stable.get((name, index))
        if ids is not None:
            ability_id, remap = ids
            fid = self._by_kind(ability_id, kind)
            if fid is None and remap:
                fid = self._by_kind(remap, kind)
        if fid is None:
            commands = _command_names().get(name, [])
            if index < len(commands) and commands[index]:
                fid = _functions_by_name().get((_norm(commands[index]), kind))
                if fid is None and kind == "quick":
                    fid = _functions_by_name().get((_norm(commands[index]), "autocast"))
        if fid is None:
            return None
        return fid, int(self.general[fid])

    def _by_kind(self, ability_id: int, kind: str) -> int | None:
        fid = self.by_ability.get((ability_id, kind))
        if fid is None and kind == "quick":
            fid = self.by_ability.get((ability_id, "autocast"))
        return fid


def command_kind(event: dict) -> str:
    """Target kind of an ``SCmdEvent``: ``pt``, ``unit`` or ``quick``."""
    data = event.get("m_data") or {}
    if "TargetPoint" in data:
        return "pt"
    if "TargetUnit" in data:
        return "unit"
    return "quick"


def read_stableid_units(path: str | os.PathLike | None = None) -> dict[str, int]:
    """Unit name -> game unit id from stableid.json (tracker events name units by string)."""
    return _named_ids(str(path or default_stableid_path()), "Units")


def read_stableid_upgrades(path: str | os.PathLike | None = None) -> dict[str, int]:
    """Upgrade name -> game upgrade id from stableid.json."""
    return _named_ids(str(path or default_stableid_path()), "Upgrades")


@functools.lru_cache(maxsize=8)
def _named_ids(path: str, key: str) -> dict[str, int]:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"stableid.json not found at {path!r}; set SC2_ENVS_SHARED_DATA or pass the path")
    return {e["name"]: int(e["id"]) for e in _read_json(p)[key]}


__all__ = [
    "AbilityMapper",
    "command_kind",
    "datapack_for_build",
    "default_stableid_path",
    "load_stableid",
    "read_stableid_units",
    "read_stableid_upgrades",
]
