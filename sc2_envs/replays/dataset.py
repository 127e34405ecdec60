"""Convert a folder of ``.SC2Replay`` files into a sharded on-disk dataset.

Layout of ``out_dir`` (documented in ``docs/full_game.md``):
    ``dataset.json``   sizes, sampling, feature/column names, function names, format version.
    ``index.json``     one entry per input file: status (``ok`` or the error class and
                       message), version, map, players, per-player sample ranges and stats.
    ``shard_00000.npz`` ... ``np.savez_compressed`` files; every array has one row per
                       sample (see ``extract.extract_player``) plus ``replay_index (T,) int32``
                       and ``player_id (T,) int8``. A player's stream is never split across
                       shards.

Per-file errors (corrupt file, unsupported build, AI-only game) are recorded and printed;
they never stop the run. ``python -m sc2_envs.replays --help`` runs it from a shell.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import traceback
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from sc2_envs.full_game import spec
from sc2_envs.full_game._deps import require
from sc2_envs.replays.decode import ReplayError, decode_replay
from sc2_envs.replays.extract import StreamConfig, extract_player

FORMAT_VERSION = 1


@dataclass
class ConvertSummary:
    """What a conversion run did.

    Attributes:
        files: input files seen.
        converted: files with at least one converted player stream.
        errors: ``{error class: count}``.
        samples: rows written.
        commands, mapped: player commands seen / mapped to raw functions (coverage =
            mapped / commands).
        function_counts: ``{function name: rows}`` over written rows (no_op included).
        unmapped: ``{link:index:kind: count}``.
        selection_errors: remove masks that did not fit the tracked selection.
        observer_files: files that had observers (handled, their events ignored).
        coverage_by_folder: ``{parent folder name: [mapped, commands]}``.
    """

    files: int = 0
    converted: int = 0
    errors: dict = field(default_factory=dict)
    samples: int = 0
    commands: int = 0
    mapped: int = 0
    function_counts: dict = field(default_factory=dict)
    unmapped: dict = field(default_factory=dict)
    selection_errors: int = 0
    observer_files: int = 0
    coverage_by_folder: dict = field(default_factory=dict)

    @property
    def coverage(self) -> float:
        """Share of commands mapped to a raw function (1.0 when there were none)."""
        return self.mapped / self.commands if self.commands else 1.0

    @property
    def no_op_share(self) -> float:
        """Share of written rows labelled no_op."""
        return self.function_counts.get("no_op", 0) / self.samples if self.samples else 0.0

    def report(self, top: int = 15) -> str:
        """Human-readable summary: errors, coverage, action-type distribution."""
        lines = [
            (
                f"files: {self.files}, converted: {self.converted}, errors: {self.errors or 'none'}, "
                f"observer games: {self.observer_files}"
            ),
            f"mapping coverage: {self.mapped}/{self.commands} commands = {100 * self.coverage:.2f}%",
            *(
                f"  {folder}: {m}/{c} = {100 * m / max(c, 1):.2f}%"
                for folder, (m, c) in sorted(self.coverage_by_folder.items())
            ),
            f"samples: {self.samples}, no_op share: {100 * self.no_op_share:.2f}%, selection errors: {self.selection_errors}",
            "action-type distribution:",
        ]
        for name, c in sorted(self.function_counts.items(), key=lambda kv: -kv[1])[:top]:
            lines.append(f"  {name:40s} {c:8d} {100 * c / max(self.samples, 1):6.2f}%")
        if self.unmapped:
            miss = sorted(self.unmapped.items(), key=lambda kv: -kv[1])[:10]
            lines.append("most frequent unmapped commands: " + ", ".join(f"{k} x{v}" for k, v in miss))
        return "\n".join(lines)


def find_replays(root: str | Path) -> list[Path]:
    """All ``*.SC2Replay`` files under ``root`` (recursive, sorted).

    Raises:
        FileNotFoundError: ``root`` does not exist.
    """
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"replay folder {str(root)!r} does not exist")
    if root.is_file():
        return [root]
    return sorted(root.rglob("*.SC2Replay"))


class _RowShards:
    """Buffers converted streams and writes them as ``shard_<NNNNN>.npz`` files of about ``shard_rows`` rows."""

    def __init__(self, out: Path | None, shard_rows: int):
        self.out, self.shard_rows = out, shard_rows
        self.buffer: list[dict] = []
        self.buffered = 0  # rows in the buffer: the next stream's row_start in shard `shard_id`
        self.shard_id = 0

    def add(self, arrays: dict) -> tuple[int, int]:
        """Buffer one stream (whole: a stream never spans two shards); returns its ``(shard, row_start)``."""
        t = len(arrays["game_loop"])
        if self.buffered and self.buffered + t > self.shard_rows:
            self.flush()
        where = (self.shard_id, self.buffered)
        self.buffer.append(arrays)
        self.buffered += t
        return where

    def flush(self) -> None:
        """Write the buffer as one shard (nothing is written when there is no output folder)."""
        if self.buffer and self.out is not None:
            merged = {k: np.concatenate([b[k] for b in self.buffer]) for k in self.buffer[0]}
            np.savez_compressed(self.out / f"shard_{self.shard_id:05d}.npz", **merged)
            self.shard_id += 1
        self.buffer, self.buffered = [], 0


def _convert_file(path: Path, i: int, cfg, players: str, stableid_path, shards: _RowShards, tally: dict, entry: dict) -> str:
    """Convert one replay's chosen players into ``shards``, filling its ``index.json`` ``entry``; returns its log line.

    ``tally`` holds the running ``summary``, function-name ``counts``, ``unmapped`` counter and ``names``.
    ``entry`` is filled as the conversion goes, so a file that fails part-way keeps what was written
    (streams already in a shard stay listed).

    Raises:
        ReplayError: the file cannot be decoded or has no player to convert.
    """
    summary = tally["summary"]
    entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    replay = decode_replay(path)
    entry.update(
        version=replay.version,
        base_build=replay.base_build,
        map=replay.map_title,
        map_size=list(replay.map_size),
        game_loops=replay.game_loops,
        players=[asdict(p) for p in replay.players],
        observers=len(replay.observer_user_ids),
        streams=[],
    )
    summary.observer_files += int(bool(replay.observer_user_ids))
    chosen = [p for p in replay.players if p.control == "human" and (players == "humans" or p.result == "Win")]
    if not chosen:
        raise ReplayError(f"{path}: no {'human' if players == 'humans' else 'winning human'} player to convert")
    for p in chosen:
        arrays, st = extract_player(replay, p.player_id, cfg, stableid_path)
        t = len(arrays["game_loop"])
        arrays["replay_index"] = np.full(t, i, np.int32)
        arrays["player_id"] = np.full(t, p.player_id, np.int8)
        shard, row_start = shards.add(arrays)
        entry["streams"].append(
            {
                "player_id": p.player_id,
                "shard": shard,
                "row_start": row_start,
                "rows": t,
                "commands": st.commands,
                "mapped": st.mapped,
                "selection_errors": st.selection_errors,
                "empty_selection": st.empty_selection,
            }
        )
        summary.samples += t
        summary.commands += st.commands
        summary.mapped += st.mapped
        folder = summary.coverage_by_folder.setdefault(path.parent.name, [0, 0])
        folder[0] += st.mapped
        folder[1] += st.commands
        summary.selection_errors += st.selection_errors
        tally["unmapped"].update(st.unmapped)
        tally["counts"].update(tally["names"][f] for f in arrays["function"].tolist())
    summary.converted += 1
    desc = ", ".join(f"P{s['player_id']} {s['rows']} rows {s['mapped']}/{s['commands']} cmds" for s in entry["streams"])
    return f"ok    {path.name}: {replay.version} {replay.map_title!r} {desc}"


def _dataset_meta(cfg: StreamConfig, players: str, shards: int, names: list[str], summary: ConvertSummary) -> dict:
    """``dataset.json``: the format, the configuration, the feature and id tables, the summary."""
    return {
        "format_version": FORMAT_VERSION,
        "config": asdict(cfg),
        "players": players,
        "shards": shards,
        "entity_features": list(spec.REPLAY_ENTITY_FEATURES),
        "entity_encoding": "int16; build_progress x100; x, y on the raw grid (top-left origin)",
        "scalar_features": list(spec.REPLAY_SCALAR_FEATURES),
        "unit_type_ids": spec.unit_type_ids().tolist(),
        "upgrade_ids": spec.upgrade_ids().tolist(),
        "function_names": names,
        "summary": {
            "files": summary.files,
            "converted": summary.converted,
            "errors": summary.errors,
            "samples": summary.samples,
            "coverage": summary.coverage,
            "coverage_by_folder": summary.coverage_by_folder,
            "no_op_share": summary.no_op_share,
            "function_counts": summary.function_counts,
        },
    }


def convert_replays(
    paths,
    out_dir: str | Path | None,
    cfg: StreamConfig | None = None,
    players: str = "humans",
    shard_rows: int = 20000,
    stableid_path=None,
    progress: bool = True,
    log=print,
) -> ConvertSummary:
    """Convert replays to a sharded dataset (or only measure, when ``out_dir`` is None).

    Args:
        paths: replay files.
        out_dir: output folder (created); None to skip writing.
        cfg: sizes and sampling (``StreamConfig``).
        players: ``"humans"`` (every human player) or ``"winners"`` (human winners only).
        shard_rows: start a new shard once this many rows are buffered.
        stableid_path: ``stableid.json`` (default ``abilities.default_stableid_path()``).
        progress: show a tqdm progress bar.
        log: called with one line per file and the final report (``print`` by default).

    Returns:
        ``ConvertSummary``.

    Raises:
        ValueError: unknown ``players`` value or non-positive ``shard_rows``.
    """
    if players not in ("humans", "winners"):
        raise ValueError(f"players={players!r}; expected 'humans' or 'winners'")
    if shard_rows <= 0:
        raise ValueError(f"shard_rows={shard_rows!r}; expected a positive row count")
    tqdm = require("tqdm", "the progress bar").tqdm
    cfg = cfg or StreamConfig()
    names = [f.name for f in spec.raw_functions()]
    summary = ConvertSummary()
    tally = {"summary": summary, "counts": collections.Counter(), "unmapped": collections.Counter(), "names": names}
    index = []
    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    shards = _RowShards(out, shard_rows)
    for i, path in enumerate(tqdm([Path(p) for p in paths], desc="replays", unit="file", disable=not progress)):
        summary.files += 1
        entry = {"file": str(path), "status": "ok"}
        try:
            log(_convert_file(path, i, cfg, players, stableid_path, shards, tally, entry))
        except ReplayError as e:
            entry.update(status=type(e).__name__, error=str(e))
            summary.errors[type(e).__name__] = summary.errors.get(type(e).__name__, 0) + 1
            log(f"error {path.name}: {type(e).__name__}: {e}")
        except Exception as e:  # noqa: BLE001 - one bad file never ends the run; it is recorded with its traceback
            entry.update(status="UnexpectedError", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc(limit=5))
            summary.errors["UnexpectedError"] = summary.errors.get("UnexpectedError", 0) + 1
            log(f"error {path.name}: unexpected {type(e).__name__}: {e}")
        index.append(entry)
        if shards.buffered >= shard_rows:
            shards.flush()
    shards.flush()
    summary.function_counts = dict(tally["counts"])
    summary.unmapped = dict(tally["unmapped"])
    if out is not None:
        (out / "dataset.json").write_text(json.dumps(_dataset_meta(cfg, players, shards.shard_id, names, summary), indent=1))
        (out / "index.json").write_text(json.dumps(index, indent=1))
    log(summary.report())
    return summary


@functools.lru_cache(maxsize=1)
def _argument_masks() -> np.ndarray:
    """``spec.argument_masks()`` as bool ``[n_functions, 6]`` (cached: every batch reads it)."""
    return spec.argument_masks().astype(bool)


def load_shard(path: str | Path) -> dict[str, np.ndarray]:
    """Load one shard as a dict of arrays (see ``extract.extract_player`` for shapes).

    Raises:
        ValueError: the file is not a readable ``.npz`` (truncated, corrupt), naming it.
    """
    try:
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        reason = " ".join(str(e).split())
        raise ValueError(f"shard {str(path)!r} cannot be read ({type(e).__name__}: {reason:.200}); expected an .npz") from None


def check_dataset_meta(root: str | Path, meta: object) -> None:
    """Refuse a ``dataset.json`` whose shard count or sampling cannot be what ``convert_replays`` wrote.

    Args:
        root: the dataset folder, named in errors.
        meta: the parsed ``dataset.json``.

    Raises:
        ValueError: not an object; ``shards`` not an int >= 0; ``config`` not an object; ``config.sample``
            other than ``actions`` / ``every_k``; for ``every_k``, ``config.k`` not an int >= 1 (game loops).
    """
    where = f"{root}/dataset.json"
    if not isinstance(meta, dict):
        raise ValueError(f"{where} is a JSON {type(meta).__name__}; expected an object (sc2_envs.replays)")
    n = meta.get("shards")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"{where}: shards is {n!r}; expected the number of shard files, an int >= 0")
    cfg = meta.get("config")
    if not isinstance(cfg, dict):
        raise ValueError(f"{where}: config is {cfg!r:.60}; expected an object (extract.StreamConfig's fields)")
    if cfg.get("sample") not in ("actions", "every_k"):
        raise ValueError(f"{where}: config.sample is {cfg.get('sample')!r}; expected 'actions' or 'every_k'")
    k = cfg.get("k")
    if cfg["sample"] == "every_k" and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"{where}: config.k is {k!r} with sample every_k; expected a stride in game loops, an int >= 1")


def shard_paths(root: str | Path, count: int) -> list[Path]:
    """The shard files ``shard_00000.npz`` .. ``shard_{count-1:05d}.npz`` of ``root``, checked to be exactly
    those in the folder (``convert_replays`` numbers them from 0).

    Raises:
        ValueError: naming the missing files and the extra ``shard_*.npz`` files.
    """
    root_p = Path(root)
    expected = [f"shard_{i:05d}.npz" for i in range(count)]
    present = {p.name for p in root_p.glob("shard_*.npz")}
    missing = [n for n in expected if n not in present]
    extra = sorted(present - set(expected))
    if missing or extra:
        parts = [f"missing {', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}"] if missing else []
        parts += [f"extra {', '.join(extra[:8])}{' ...' if len(extra) > 8 else ''}"] if extra else []
        raise ValueError(
            f"{root}: dataset.json lists {count} shards, shard_00000.npz .. shard_{max(count - 1, 0):05d}.npz; "
            f"the folder has {'; '.join(parts)}"
        )
    return [root_p / n for n in expected]


class ReplayData:
    """The replay dataset (``sc2_envs.replays``) as fixed-length sequences of one player's stream.

    Streams are split by replay file (``val_fraction`` of the converted files held out, drawn with
    ``seed``). Two copies of one replay file would put the same game in both splits: ``index.json``
    records each file's ``sha256``, and a dataset whose files repeat a hash is not split safely (the
    split does not check). Each stream is cut into consecutive windows of ``seq_len`` rows; the last
    window is padded and its padding masked.

    Attributes:
        a: the shards' columns concatenated, one row per sample (``extract.extract_player``).
        files: ``[(shard path, rows)]`` of the shards used; available: shard files in the folder.
        train_windows, val_windows: ``[(first row, end row)]`` half-open row ranges, one per sequence.
        counts: ``[n_functions]`` int64 action-type label counts over the training rows.
        names: the ``n_functions`` raw function names; R, E, K: raw grid side, entity rows and
            selection length on disk; step_mul: the sampling stride ``k`` (``every_k``), else None.

    Raises:
        FileNotFoundError: ``root`` does not exist, or ``dataset.json`` / ``index.json`` is missing (named).
        ValueError: ``dataset.json`` or ``index.json`` not valid JSON, a bad shard count or sampling
            (:func:`check_dataset_meta`), shard files other than ``shard_00000.npz`` .. the count's last
            (:func:`shard_paths`, naming the missing and extra ones), a corrupt shard (named), or no shard
            selected (an empty dataset).
    """

    def __init__(self, root: str, num_files: int | None, seq_len: int, val_fraction: float, seed: int):
        root_p = Path(root)
        if not root_p.is_dir():
            raise FileNotFoundError(
                f"replay dataset {str(root)!r} does not exist; expected a folder written by sc2_envs.replays"
            )
        try:
            self.meta = json.loads((root_p / "dataset.json").read_text())
            index = json.loads((root_p / "index.json").read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{root}: dataset.json or index.json is not valid JSON ({e})") from None
        except FileNotFoundError as e:  # a copy cut short: say which file and who writes it
            raise FileNotFoundError(
                f"{root}: {Path(e.filename).name} is missing; expected a dataset written by sc2_envs.replays "
                "(dataset.json, index.json and its shard_*.npz)"
            ) from None
        check_dataset_meta(root, self.meta)
        shards = shard_paths(root, self.meta["shards"])
        self.available = len(shards)
        use = shards if num_files is None else shards[:num_files]
        if not use:  # before: IndexError from arrays[0] below
            raise ValueError(
                f"{root}: no shards selected (num_files={num_files!r}, the dataset has {len(shards)}); "
                "expected a dataset written by sc2_envs.replays with at least one shard_*.npz"
            )
        self.files = []
        arrays = []
        for p in use:
            arrays.append(load_shard(p))
            self.files.append((str(p), len(arrays[-1]["function"])))
        self.a = {k: np.concatenate([x[k] for x in arrays]) for k in arrays[0]}
        self.index = index
        cfg = self.meta["config"]
        # the experts' commands per sampled row: a policy trained on them decides at the same stride
        self.step_mul = int(cfg["k"]) if cfg.get("sample") == "every_k" else None
        self.R, self.E, self.K = cfg["raw_resolution"], cfg["max_entities"], cfg["max_selected"]
        self.names = self.meta["function_names"]
        # streams: contiguous (replay_index, player_id) runs
        key = self.a["replay_index"].astype(np.int64) * 100 + self.a["player_id"]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        ends = np.r_[starts[1:], len(key)]
        replays = np.unique(self.a["replay_index"])
        rng = np.random.default_rng(seed)
        n_val = max(1, round(val_fraction * len(replays))) if len(replays) > 1 else 0
        val_rep = set(rng.permutation(replays)[:n_val].tolist())
        self.train_windows, self.val_windows = [], []
        for s, e in zip(starts, ends, strict=False):
            wins = [(w, min(w + seq_len, e)) for w in range(s, e, seq_len)]
            (self.val_windows if int(self.a["replay_index"][s]) in val_rep else self.train_windows).extend(wins)
        self.val_replays, self.n_replays = len(val_rep), len(replays)
        self.seq_len = seq_len
        self.train_rows = (
            np.concatenate([np.arange(s, e) for s, e in self.train_windows]) if self.train_windows else np.zeros(0, int)
        )
        self.counts = np.bincount(self.a["function"][self.train_rows].astype(np.int64), minlength=len(self.names))
        self.spec = spec

    @property
    def rows(self) -> int:
        return len(self.a["function"])

    def describe(self, k_model: int) -> str:
        """Files, frames, frames per replay and selections longer than the model's pointer steps."""
        rep = self.a["replay_index"]
        lines = [
            (
                f"replay dataset: {len(self.files)} of {self.available} shard files, {self.rows} frames, "
                f"{self.n_replays} replays, sampling {self.meta['config'].get('sample')}"
                + (f" (k = {self.step_mul} game loops per row)" if self.step_mul else "")
            )
        ]
        for p, n in self.files:
            lines.append(f"  {p}: {n} frames")
        per = np.bincount(rep.astype(np.int64))
        names = {i: Path(e["file"]).name for i, e in enumerate(self.index)}
        items = [f"{names.get(i, i)} {c}" for i, c in enumerate(per) if c]
        lines.append(f"  frames per replay ({len(items)}): " + ", ".join(items[:12]) + (" ..." if len(items) > 12 else ""))
        long_sel = int((self.a["selected_count"] > k_model).sum())
        lines.append(
            f"  selections longer than the model's {k_model} pointer steps (trained on their first {k_model} "
            f"picks, no end-of-selection label): {long_sel} frames"
        )
        return "\n".join(lines)

    def check_labels(self, rows: np.ndarray, E_model: int, K_model: int) -> None:
        """Refuse a label that the model's pointer heads mask out, or a location off the raw grid.

        ``models.alphastar`` gives a masked entry the finite logit ``MASKED_LOGIT`` (-1e10), so a masked
        label forced as a teacher target costs about 1e10 in the loss instead of failing. For the heads
        the label's action type uses (``spec.argument_masks()``): each of the first ``min(selected_count,
        K_model)`` picks of ``selected`` is an entity row below ``min(entity_count, E_model)``, of
        alliance 1 (self: the selected-units head points at own units) and not picked before;
        ``target_unit`` (when >= 0) is an entity row below ``min(entity_count, E_model)``;
        ``target_location`` (when both >= 0) lies on the ``R x R`` grid.

        Args:
            rows: dataset row ids (any shape), int.
            E_model, K_model: the model's entity rows and pointer steps.

        Raises:
            ValueError: naming the first offending row, its replay file and game loop, and the label.
        """
        rows = np.unique(np.asarray(rows, np.int64).ravel())
        a = self.a
        argm = _argument_masks()[a["function"][rows].astype(np.int64)]
        n_ent = np.minimum(a["entity_count"][rows].astype(np.int64), E_model)
        K = min(K_model, a["selected"].shape[1])
        sel = a["selected"][rows, :K].astype(np.int64)
        picks = argm[:, 3, None] & (np.arange(K) < a["selected_count"][rows, None])
        alliance = a["entities"][rows, :, self.spec.REPLAY_ENTITY_FEATURES.index("alliance")]
        own = np.take_along_axis(alliance, np.clip(sel, 0, alliance.shape[1] - 1), 1) == 1
        repeat = ((sel[:, :, None] == sel[:, None, :]) & np.tri(K, k=-1, dtype=bool)).any(-1)
        bad_sel = picks & ~((sel >= 0) & (sel < n_ent[:, None]) & own & ~repeat)
        tu = a["target_unit"][rows].astype(np.int64)
        bad_tu = argm[:, 4] & (tu >= n_ent)
        loc = a["target_location"][rows].astype(np.int64)
        bad_loc = argm[:, 5] & (loc >= 0).all(-1) & (loc >= self.R).any(-1)
        bad = bad_sel.any(1) | bad_tu | bad_loc
        if not bad.any():
            return
        i = int(np.flatnonzero(bad)[0])
        row = int(rows[i])
        rep = int(a["replay_index"][row])
        file = Path(self.index[rep]["file"]).name if rep < len(self.index) else f"replay {rep}"
        where = f"row {row} ({file}, player {int(a['player_id'][row])}, game loop {int(a['game_loop'][row])})"
        func = self.names[int(a["function"][row])]
        if bad_sel[i].any():
            k = int(np.flatnonzero(bad_sel[i])[0])
            what = (
                f"selected[{k}] = {int(sel[i, k])} is not a selectable unit (expected an unpicked row below "
                f"min(entity_count {int(a['entity_count'][row])}, model rows {E_model}) of alliance 1; "
                f"alliance {int(alliance[i, min(max(int(sel[i, k]), 0), alliance.shape[1] - 1)])})"
            )
        elif bad_tu[i]:
            what = (
                f"target_unit = {int(tu[i])} is not an entity row (expected below min(entity_count "
                f"{int(a['entity_count'][row])}, model rows {E_model}))"
            )
        else:
            what = f"target_location = {loc[i].tolist()} is off the {self.R}x{self.R} raw grid"
        raise ValueError(f"{where}: action {func}: {what}; the model masks this label out")

    def batch(self, windows, device, E_model: int, K_model: int):
        """Model inputs/labels ``[B, T, ...]`` and the step mask ``[B, T]`` for a list of windows.

        Raises:
            ValueError: a label the model's pointer heads mask out (:meth:`check_labels`).
        """
        T = self.seq_len
        rows = np.full((len(windows), T), -1, np.int64)
        for i, (s, e) in enumerate(windows):
            rows[i, : e - s] = np.arange(s, e)
        valid = rows >= 0
        self.check_labels(rows[valid], E_model, K_model)
        r = np.where(valid, rows, 0)  # padded steps read row 0; ``valid`` masks them out of every loss

        def g(k, dtype=np.float32):
            return torch.as_tensor(self.a[k][r].astype(dtype), device=device)

        ent = g("entities")[:, :, :E_model]
        bp = self.spec.REPLAY_ENTITY_FEATURES.index("build_progress")
        ent[..., bp] = ent[..., bp] / 100.0  # stored x100 on disk
        obs = {
            "entities": ent,
            "entity_count": g("entity_count", np.int64).clamp(max=E_model),
            "scalars": g("scalars"),
            "upgrades": g("upgrades"),
            "unit_counts": g("unit_counts"),
            "build_order": g("build_order", np.int64),
        }
        loc = self.a["target_location"][r].astype(np.int64)
        loc_idx = np.where((loc[..., 0] >= 0) & (loc[..., 1] >= 0), loc[..., 1] * self.R + loc[..., 0], -1)
        sel = self.a["selected"][r][..., :K_model].astype(np.int64)
        labels = {
            "action_type": g("function", np.int64),
            "delay": g("delay", np.int64).clamp(0, self.spec.MAX_DELAY),
            "queued": g("queued", np.int64),
            "selected": torch.as_tensor(sel, device=device),
            "selected_count": g("selected_count", np.int64),
            "target_unit": g("target_unit", np.int64),
            "target_location": torch.as_tensor(loc_idx, device=device),
        }
        return obs, labels, torch.as_tensor(valid, device=device)
