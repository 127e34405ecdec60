"""``LiteEngine``: B lite games on one map, advanced together.

The engine owns the state arrays (``GameState``), the catalog tables and the map's navigation
graph, and exposes three operations: ``reset`` (copy the loop-0 state into chosen games),
``apply`` (one command per game, as ``sc2_envs.lite.layout.CMD_*`` arrays; returns ActionResult
codes) and ``advance`` (run game loops); ``save`` and ``load`` copy one game's state out and back
(a game continued from a save). Observations are built by ``sc2_envs.lite.observe``;
the scripted opponent by ``sc2_envs.lite.bot``.
"""

from __future__ import annotations

import sys

import numpy as np

from sc2_envs.lite import kernels
from sc2_envs.lite.catalog import Catalog, build_catalog
from sc2_envs.lite.layout import CK_KIND, CMD_NONE, GI_LOOP, GI_RESULT, NCK
from sc2_envs.lite.maps import LiteMap, load_map
from sc2_envs.lite.navigation import Navigation, cached_navigation
from sc2_envs.lite.state import GameState, initial_game

DEFAULT_CAPACITY = 384
"""Unit slots per game: Simple64's 40 resources, and room for both players' armies and bases."""

_compile_checked = False


def compile_notice() -> bool:
    """Say on stderr, once per process, when the first game will compile the engine's kernels.

    With no machine code of the game-loop kernel in Numba's on-disk cache (a fresh install, an edit of
    ``sc2_envs.lite``, another CPU), the first step compiles the engine: about 50 CPU seconds
    (docs/full_game.md), which would otherwise pass with no output. Reads Numba's cache index (a
    private Numba interface: any failure to read it prints nothing).

    Returns:
        True when the notice was printed.
    """
    global _compile_checked
    if _compile_checked:
        return False
    _compile_checked = True
    kernel = kernels.advance_serial
    try:
        cached = bool(kernel.signatures) or bool(kernel._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - Numba's cache layout is not public; no notice rather than a wrong one
        return False
    if not cached:
        print(
            "sc2_envs.lite: compiling the engine's kernels for the first game (about 50 CPU seconds; "
            "Numba's cache keeps them for later processes)",
            file=sys.stderr,
            flush=True,
        )
    return not cached


class LiteEngine:
    """B independent lite games on one map.

    Args:
        num_games: B, >= 1.
        map_name: a map of ``sc2_envs.lite.maps.SERVED_MAPS``, or a ``LiteMap``.
        profile: data profile name (``"3.16.1"``).
        capacity: unit slots per game.

    Raises:
        ValueError: a bad count, map or profile.
    """

    def __init__(
        self,
        num_games: int = 1,
        map_name: str | LiteMap = "Simple64",
        profile: str = "3.16.1",
        capacity: int = DEFAULT_CAPACITY,
    ):
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise ValueError(f"num_games={num_games!r}; expected an int >= 1")
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)):  # int() would drop .5 of a slot
            raise ValueError(f"capacity={capacity!r}; expected an int")
        self.catalog: Catalog = build_catalog(profile)
        self.map: LiteMap = map_name if isinstance(map_name, LiteMap) else load_map(map_name)
        grid = np.ascontiguousarray(self.map.pathing, dtype=np.uint8)
        self.nav: Navigation = cached_navigation(self.map.name + str(id(self.map)), grid.tobytes(), grid.shape)
        self.placement = np.ascontiguousarray(self.map.placement, dtype=np.uint8)
        self.template, self.first_free = initial_game(self.catalog, self.map, int(capacity))
        h, w = grid.shape
        self.state = GameState.zeros(int(num_games), int(capacity), h, w)
        b = int(num_games)
        self._ck = np.zeros((b, NCK), np.int64)
        self._cf = np.zeros((b, 2), np.float32)
        self._result = np.zeros(b, np.int32)
        compile_notice()
        self.reset()

    @property
    def num_games(self) -> int:
        return self.state.num_games

    def reset(self, games=None) -> None:
        """Put games (all when None; else an index array or a ``(B,)`` bool mask) back to loop 0.

        Raises:
            ValueError: a mask of another length than B, or an index that is not an int in [0, B) (a negative
                one would reset a game counted from the end).
        """
        b = self.num_games
        if games is None:
            idx = np.arange(b)
        else:
            g = np.asarray(games)
            if g.dtype == bool:
                if g.shape != (b,):
                    raise ValueError(f"games={games!r}: a bool mask of shape {g.shape}; expected ({b},)")
                idx = np.flatnonzero(g)
            elif not np.issubdtype(g.dtype, np.integer) or ((g < 0) | (g >= b)).any():
                raise ValueError(f"games={games!r}; expected game indices (ints) in [0, {b - 1}] or a ({b},) bool mask")
            else:
                idx = g.reshape(-1)
        for i in idx:
            self.state.copy_game(self.template, 0, int(i))

    def save(self, game: int) -> GameState:
        """A copy of one game's state: a one-game ``GameState`` that :meth:`load` puts back.

        Raises:
            ValueError: ``game`` not an int in [0, B).
        """
        g = self.game_index(game)
        s = self.state
        saved = GameState.zeros(1, s.capacity, *s.occ.shape[1:])
        saved.copy_game(s, g, 0)
        return saved

    def check_save(self, saved: GameState) -> None:
        """Refuse a state this engine cannot load (:meth:`load`), before anything is written.

        Raises:
            ValueError: ``saved`` not a one-game ``GameState`` of this engine's unit slots and map size (both named).
        """
        s = self.state
        if not isinstance(saved, GameState) or saved.num_games != 1:
            raise ValueError(f"saved={type(saved).__name__}; expected a one-game GameState from LiteEngine.save")
        if saved.uf.shape[1:] != s.uf.shape[1:] or saved.occ.shape[1:] != s.occ.shape[1:]:
            raise ValueError(
                f"a game saved with {saved.capacity} unit slots on a {saved.occ.shape[2]} x {saved.occ.shape[1]} map; "
                f"this engine has {s.capacity} unit slots on a {s.occ.shape[2]} x {s.occ.shape[1]} map"
            )

    def load(self, game: int, saved: GameState) -> None:
        """Overwrite one game with a state :meth:`save` returned (this engine's or another's on the same
        map and capacity); the game then runs on from that state's game loop.

        Raises:
            ValueError: ``game`` not an int in [0, B), or ``saved`` refused by :meth:`check_save`.
        """
        g = self.game_index(game)
        self.check_save(saved)
        self.state.copy_game(saved, 0, g)

    def game_index(self, game) -> int:
        """``game`` as a checked index into these B games.

        Raises:
            ValueError: ``game`` not an int (bools excluded) in [0, B).
        """
        if isinstance(game, bool) or not isinstance(game, (int, np.integer)) or not 0 <= game < self.num_games:
            raise ValueError(f"game={game!r}; expected an int in [0, {self.num_games - 1}]")
        return int(game)

    def apply(self, ck: np.ndarray, cf: np.ndarray, cs: np.ndarray) -> np.ndarray:
        """Apply one command per game.

        Args:
            ck: ``(B, NCK)`` int64 (``CK_*`` columns; ``CMD_NONE`` rows do nothing).
            cf: ``(B, 2)`` float32 target points, cells.
            cs: ``(B, K)`` int64 selected slots ended by -1.

        Returns:
            ``(B,)`` int32 ActionResult codes (0 where there was no command).
        """
        result = np.zeros(self.num_games, np.int32)
        if not np.any(ck[:, CK_KIND] != CMD_NONE):
            return result
        s = self.state
        kernels.apply_commands(
            ck, cf, cs, result, s.uf, s.ui, s.oi, s.of, s.pq, s.pf, s.gi, s.occ, s.ghost, s.vis,
            self.placement, self.catalog.ti, self.catalog.tf, self.catalog.ec, self.first_free,
        )  # fmt: skip
        return result

    def advance(self, loops) -> None:
        """Run ``loops`` game loops in every game (an int, or ``(B,)`` per game); finished games stay.

        Raises:
            ValueError: ``loops`` not integer, of another shape than ``()`` / ``(B,)``, or negative.
        """
        s = self.state
        raw = np.asarray(loops)
        if raw.dtype == bool or not np.issubdtype(raw.dtype, np.integer):  # 1.5 would run 1 loop
            raise ValueError(f"loops={loops!r}; expected integer game loops")
        if raw.shape not in ((), (self.num_games,)):
            raise ValueError(f"loops has shape {raw.shape}; expected () or ({self.num_games},)")
        if (raw < 0).any():  # the kernel would run nothing
            raise ValueError(f"loops={loops!r}; expected game loops >= 0")
        per_game = np.broadcast_to(raw.astype(np.int64), (self.num_games,)).copy()
        n = self.nav
        kernels.advance(
            per_game, s.uf, s.ui, s.oi, s.of, s.pq, s.pf, s.gi, s.occ, s.ghost, s.vis, self.placement,
            self.catalog.ti, self.catalog.tf, self.catalog.ec, n.node, n.next_hop, n.x, n.y, self.first_free, s.err,
        )  # fmt: skip

    @property
    def game_loop(self) -> np.ndarray:
        """``(B,)`` int64 game loop of each game."""
        return self.state.gi[:, GI_LOOP]

    @property
    def result(self) -> np.ndarray:
        """``(B,)`` int64 ``RESULT_*`` of each game (0 while running)."""
        return self.state.gi[:, GI_RESULT]
