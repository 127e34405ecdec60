"""Engine-free decoding of ``.SC2Replay`` files with s2protocol (Blizzard).

A replay is an MPQ archive (read with ``mpyq``) whose streams are decoded by the
s2protocol module of the replay's base build: header, ``replay.details`` (players, races,
results, map title), ``replay.initData`` (lobby slots, map size), ``replay.game.events``
(commands, selections) and ``replay.tracker.events`` (unit births/deaths, player stats,
upgrades; builds >= 2.0.8).

Sources: Blizzard/s2protocol ``s2protocol/versions/protocol*.py`` and its README.
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path

from sc2_envs.full_game._deps import require


class ReplayError(Exception):
    """A replay file cannot be converted; the message names the file and the reason."""


class CorruptReplayError(ReplayError):
    """The file is truncated, not an MPQ archive, or a stream fails to decode."""


class UnsupportedBuildError(ReplayError):
    """The installed s2protocol/sc2reader have no tables for the replay's base build."""


# Race names as stored in replay.details, including the localized ones found in the
# shared replays (zh-CN: 星灵/人类/异虫, ko-KR: 프로토스/테란/저그).
_RACE_NAMES = {
    "protoss": "Protoss",
    "terran": "Terran",
    "zerg": "Zerg",
    "星灵": "Protoss",
    "人类": "Terran",
    "异虫": "Zerg",
    "神族": "Protoss",
    "人族": "Terran",
    "虫族": "Zerg",
    "프로토스": "Protoss",
    "테란": "Terran",
    "저그": "Zerg",
}
_WORKER_RACE = {"Probe": "Protoss", "SCV": "Terran", "Drone": "Zerg"}


@dataclass
class Player:
    """One playing slot (observers are not players).

    Attributes:
        player_id: 1-based id used by tracker events and the live API.
        user_id: game-event user id, or None for a built-in AI.
        name: player name (decoded UTF-8, replacement characters for bad bytes).
        race: ``Protoss``, ``Terran`` or ``Zerg``.
        result: ``Win``, ``Loss``, ``Tie`` or ``Undecided``.
        control: ``human`` or ``ai``.
    """

    player_id: int
    user_id: int | None
    name: str
    race: str
    result: str
    control: str


@dataclass
class DecodedReplay:
    """Decoded streams of one replay.

    Attributes:
        path: source file.
        version: game version string, e.g. ``"3.16.1.55958"``.
        base_build: protocol base build.
        game_loops: ``m_elapsedGameLoops`` from the header (22.4 per real second at "faster").
        map_title: map name from details.
        map_size: ``(W, H)`` in cells from initData.
        players: the playing slots, by player id.
        observer_user_ids: user ids of observers/referees (their events are ignored).
        game_events, tracker_events: decoded event dicts, in stream order.
    """

    path: str
    version: str
    base_build: int
    game_loops: int
    map_title: str
    map_size: tuple[int, int]
    players: list[Player]
    observer_user_ids: list[int]
    game_events: list[dict] = field(repr=False)
    tracker_events: list[dict] = field(repr=False)

    def player(self, player_id: int) -> Player:
        """The player with ``player_id``.

        Raises:
            TypeError: ``player_id`` is not an int (a bool, a float or a string such as ``"1"``).
            KeyError: no such player (message lists the ids present).
        """
        if isinstance(player_id, bool) or not isinstance(player_id, numbers.Integral):  # np.int64 is Integral
            raise TypeError(
                f"player_id={player_id!r}; expected an int player id, one of {[p.player_id for p in self.players]}"
            )
        for p in self.players:
            if p.player_id == player_id:
                return p
        raise KeyError(f"player_id={player_id!r} not in {self.path}; players are {[p.player_id for p in self.players]}")


def load_protocol(base_build: int):
    """The s2protocol module for ``base_build``.

    Raises:
        UnsupportedBuildError: the installed s2protocol has no module for that build.
    """
    versions = require("s2protocol.versions", "decoding replays")
    try:
        return versions.build(int(base_build))
    except ImportError as e:
        latest = versions.latest().__name__.rsplit("protocol", 1)[-1]
        raise UnsupportedBuildError(
            f"base build {base_build} is not supported by the installed s2protocol (newest known build {latest}); "
            "upgrade s2protocol or drop this replay"
        ) from e


def _text(b) -> str:
    return b.decode("utf-8", errors="replace") if isinstance(b, bytes) else str(b)


def decode_replay(path: str | os.PathLike) -> DecodedReplay:
    """Decode every stream of one ``.SC2Replay`` file.

    Args:
        path: the replay file.

    Returns:
        ``DecodedReplay``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CorruptReplayError: truncated or damaged file; the message names the stream.
        UnsupportedBuildError: no s2protocol module for the replay's base build.
    """
    path = str(path)
    if not Path(path).is_file():
        raise FileNotFoundError(f"replay {path!r} does not exist")
    mpyq = require("mpyq", "reading replay archives")
    versions = require("s2protocol.versions", "decoding replays")
    stage = "archive"
    try:
        archive = mpyq.MPQArchive(path)
        stage = "header"
        header = versions.latest().decode_replay_header(archive.header["user_data_header"]["content"])
    except Exception as e:  # mpyq/s2protocol raise assorted errors on damaged archives
        raise CorruptReplayError(
            f"{path}: cannot read the {stage} ({type(e).__name__}: {e}); the file is truncated or not a StarCraft II replay"
        ) from e
    v = header["m_version"]
    base_build = int(v["m_baseBuild"])
    try:
        protocol = load_protocol(base_build)
    except UnsupportedBuildError as e:
        raise UnsupportedBuildError(f"{path}: {e}") from e.__cause__

    def read(name: str, decoder, required: bool = True):
        try:
            data = archive.read_file(name)
            if data is None:
                if required:
                    raise ValueError("stream missing from the archive")
                return None
            return decoder(data)
        except Exception as e:
            raise CorruptReplayError(
                f"{path}: cannot decode {name} ({type(e).__name__}: {e}); the file is truncated or damaged"
            ) from e

    details = read("replay.details", protocol.decode_replay_details)
    init = read("replay.initData", protocol.decode_replay_initdata)
    game_events = read("replay.game.events", lambda d: list(protocol.decode_replay_game_events(d)))
    tracker_events = (
        read("replay.tracker.events", lambda d: list(protocol.decode_replay_tracker_events(d)), required=False) or []
    )

    desc = init["m_syncLobbyState"]["m_gameDescription"]
    slots = init["m_syncLobbyState"]["m_lobbyState"]["m_slots"]
    user_of_player = {e["m_playerId"]: e["m_userId"] for e in tracker_events if e["_event"].endswith("SPlayerSetupEvent")}
    if not user_of_player:  # no tracker stream: playing slots in lobby order
        playing = [s for s in slots if s["m_observe"] == 0 and s["m_control"] in (2, 3)]
        user_of_player = {i + 1: s["m_userId"] for i, s in enumerate(playing)}
    results = {1: "Win", 2: "Loss", 3: "Tie"}
    players = []
    for i, p in enumerate(details["m_playerList"]):
        pid = i + 1
        race = _RACE_NAMES.get(_text(p["m_race"]).strip().lower(), _RACE_NAMES.get(_text(p["m_race"]).strip(), ""))
        players.append(
            Player(
                player_id=pid,
                user_id=user_of_player.get(pid),
                name=_text(p["m_name"]),
                race=race or _race_from_workers(tracker_events, pid),
                result=results.get(p["m_result"], "Undecided"),
                control="ai" if p["m_control"] == 3 else "human",
            )
        )
    player_users = {p.user_id for p in players if p.user_id is not None}
    observers = sorted({s["m_userId"] for s in slots if s["m_userId"] is not None and s["m_userId"] not in player_users})
    return DecodedReplay(
        path=path,
        version=f"{v['m_major']}.{v['m_minor']}.{v['m_revision']}.{v['m_build']}",
        base_build=base_build,
        game_loops=int(header["m_elapsedGameLoops"]),
        map_title=_text(details["m_title"]),
        map_size=(int(desc["m_mapSizeX"]), int(desc["m_mapSizeY"])),
        players=players,
        observer_user_ids=observers,
        game_events=game_events,
        tracker_events=tracker_events,
    )


def _race_from_workers(tracker_events: list[dict], player_id: int) -> str:
    for e in tracker_events:
        if e["_event"].endswith("SUnitBornEvent") and e["m_controlPlayerId"] == player_id:
            race = _WORKER_RACE.get(_text(e["m_unitTypeName"]))
            if race:
                return race
    return "Unknown"
