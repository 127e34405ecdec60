"""Engine-free replay conversion, checked on real .SC2Replay files committed under tests/data/replays.

Five small public replays (sources and licences in ``tests/data/replays/manifest.json``) run in every
clone; the slow whole-set test reads the optional 93-replay set under ``$SC2_ENVS_SHARED_DATA/replays``.

Expected values were checked by hand against raw s2protocol output (game loops, ability
links/command indices resolved through sc2reader's datapack and stableid.json, TargetPoint
/ 4096 mapped to the 64x64 raw grid).
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from sc2_envs.full_game._deps import MissingDependencyError, require

try:  # an ImportError, or the old s2clientprotocol dist failing under protobuf >= 4, skips the module
    for _module in ("s2protocol.versions", "sc2reader", "mpyq", "pysc2_evolved.lib.actions"):
        require(_module, "the replay tests")
except MissingDependencyError as e:
    pytest.skip(f"the full-game extra is not usable here: {e}", allow_module_level=True)

from sc2_envs.full_game import spec
from sc2_envs.replays import (
    CorruptReplayError,
    ReplayError,
    UnsupportedBuildError,
    decode_replay,
)
from sc2_envs.replays.abilities import AbilityMapper, datapack_for_build
from sc2_envs.replays.dataset import convert_replays, find_replays, load_shard
from sc2_envs.replays.extract import StreamConfig, apply_remove_mask, extract_player, player_actions

REPLAYS = Path(__file__).resolve().parent / "data" / "replays"
SIMPLE64 = REPLAYS / "mas_simple64" / "Simple64_2021-11-21-11-55-57.SC2Replay"
LOST_AND_FOUND = REPLAYS / "ladder_misc" / "s2protocol_4.3.0.64469_LostAndFound_PvT.SC2Replay"
HARDWIRE = REPLAYS / "ladder_misc" / "pythonsc2_5.0.8.86383_Hardwire_TvT.SC2Replay"


NAMES = [f.name for f in spec.raw_functions()]


def _unit_name(index: int) -> str:
    from pysc2_evolved.lib import units

    gid = int(spec.unit_type_ids()[index - 1])
    for race in (units.Neutral, units.Protoss, units.Terran, units.Zerg):
        try:
            return race(gid).name
        except ValueError:
            pass
    raise AssertionError(f"unit id {gid} not in the vocabulary")


@pytest.fixture(scope="module")
def simple64():
    return decode_replay(SIMPLE64)


@pytest.fixture(scope="module")
def simple64_p1(simple64):
    return extract_player(simple64, 1, StreamConfig())


def test_simple64_header_players_and_outcome(simple64):
    assert simple64.version == "3.16.1.55958"
    assert simple64.map_title == "Simple Test Map 64x64"
    assert simple64.map_size == (88, 96)
    assert simple64.game_loops == 8797
    p1, p2 = simple64.players
    assert (p1.race, p1.result, p1.control, p1.user_id) == ("Protoss", "Win", "human", 0)
    assert (p2.race, p2.result, p2.control, p2.user_id) == ("Terran", "Loss", "ai", None)
    assert simple64.observer_user_ids == []


def test_simple64_command_count_and_coverage(simple64_p1):
    arrays, stats = simple64_p1
    assert stats.commands == 47
    assert stats.mapped == 47
    assert len(arrays["function"]) == 47
    assert stats.selection_errors == 0


def test_simple64_first_actions(simple64_p1):
    a, _ = simple64_p1
    got = [
        (int(a["game_loop"][i]), NAMES[a["function"][i]], int(a["queued"][i]), a["target_location"][i].tolist())
        for i in range(5)
    ]
    assert got == [
        (122, "Train_Probe_quick", 0, [-1, -1]),
        (508, "Smart_pt", 0, [17, 26]),  # TargetPoint (107128, 232468)/4096 on 88x96 -> (17, 26)
        (606, "Build_Pylon_pt", 0, [17, 26]),  # link 170 ProtossBuild, index 1 = Pylon (ability 881)
        (688, "Smart_pt", 0, [16, 24]),
        (990, "Build_Assimilator_unit", 0, [-1, -1]),
    ]
    assert a["delay"][:5].tolist() == [127, 98, 82, 127, 63]  # loops to the next action, capped at 127


def test_a_target_update_repeats_the_last_ability_for_its_own_target_kind(simple64):
    plain, _ = player_actions(simple64, 1, AbilityMapper(simple64.base_build))
    actions, _ = player_actions(simple64, 1, AbilityMapper(simple64.base_build), include_target_updates=True)
    assert len(actions) == 76 and len(plain) == 47
    by_loop = {a.game_loop: a for a in actions}
    # loop 688 is a right-click on the ground; 704 re-aims it at another point, 721 at a mineral field
    assert NAMES[by_loop[704].specific_function] == "Smart_pt" and by_loop[704].target_point is not None
    assert NAMES[by_loop[721].specific_function] == "Smart_unit" and by_loop[721].target_tag == 786433
    assert by_loop[721].target_point is None


def test_target_updates_the_stream_leaves_out_are_counted_not_dropped_silently():
    """Player 1 of LostAndFound re-aims an unmapped command (ability link 708) five times: those updates
    have no raw function, so they are left out of the actions, and the stats say how many."""
    replay = decode_replay(LOST_AND_FOUND)
    plain, plain_stats = player_actions(replay, 1, AbilityMapper(replay.base_build))
    actions, stats = player_actions(replay, 1, AbilityMapper(replay.base_build), include_target_updates=True)
    assert (plain_stats.target_updates, plain_stats.target_updates_mapped) == (0, 0)  # not read unless included
    assert (stats.target_updates, stats.target_updates_mapped) == (350, 345)
    assert len(actions) - len(plain) == stats.target_updates_mapped


@pytest.mark.parametrize("player_id", ["1", 1.0, True])
def test_a_player_id_that_is_not_an_int_is_refused_naming_it(simple64, player_id):
    """'1' was reported as "player_id=1 not in ...; players are [1, 2]"; 1.0 and True were player 1."""
    with pytest.raises(TypeError, match=re.escape(f"player_id={player_id!r}; expected an int player id, one of [1, 2]")):
        simple64.player(player_id)


def test_include_target_updates_must_be_a_bool(simple64):
    with pytest.raises(TypeError, match="include_target_updates='no'; expected a bool"):
        player_actions(simple64, 1, AbilityMapper(simple64.base_build), include_target_updates="no")


def test_simple64_selection_and_target_are_entity_rows(simple64_p1):
    a, _ = simple64_p1
    ent = a["entities"]
    assert [_unit_name(ent[0, j, 0]) for j in a["selected"][0] if j >= 0] == ["Nexus"]
    assert [_unit_name(ent[1, j, 0]) for j in a["selected"][1] if j >= 0] == ["Probe"]
    assert _unit_name(ent[4, a["target_unit"][4], 0]) == "VespeneGeyser"
    own = ent[0, : a["entity_count"][0], 1] == 1
    assert own[: own.sum()].all(), "own units come first in the entity order"


def test_simple64_scalars_come_from_player_stats(simple64_p1):
    a, _ = simple64_p1
    s = dict(zip(spec.REPLAY_SCALAR_FEATURES, a["scalars"][0].tolist(), strict=True))
    assert s["game_loop"] == 122
    assert (s["home_race"], s["away_race"]) == (3, 1)  # Protoss vs Terran
    assert (s["minerals"], s["food_used"], s["food_cap"], s["food_workers"]) == (50, 12, 15, 12)
    assert a["unit_counts"][0].sum() >= 13  # 12 probes and a nexus (plus map beacons)


def test_ladder_pvt_counts_and_first_actions():
    replay = decode_replay(LOST_AND_FOUND)
    assert (replay.version, replay.map_title, replay.map_size) == ("4.3.0.64469", "Lost and Found LE", (168, 168))
    assert [(p.race, p.result) for p in replay.players] == [("Protoss", "Win"), ("Terran", "Loss")]
    a, stats = extract_player(replay, 1, StreamConfig())
    assert (stats.commands, stats.mapped) == (350, 339)
    got = [(int(a["game_loop"][i]), NAMES[a["function"][i]], a["target_location"][i].tolist()) for i in range(5)]
    assert got == [
        (17, "Train_Probe_quick", [-1, -1]),
        (27, "Smart_unit", [-1, -1]),
        (266, "Train_Probe_quick", [-1, -1]),
        (283, "Smart_pt", [8, 48]),  # (96600, 167280)/4096 on 168x168 -> (8, 48)
        (392, "Build_Pylon_pt", [8, 48]),
    ]
    _, stats2 = extract_player(replay, 2, StreamConfig())
    assert (stats2.commands, stats2.mapped) == (369, 361)


def test_specific_harvest_maps_to_general_function():
    replay = decode_replay(HARDWIRE)
    a, _ = extract_player(replay, 1, StreamConfig())
    assert NAMES[a["specific_function"][2]] == "Harvest_Gather_SCV_unit"
    assert NAMES[a["function"][2]] == "Harvest_Gather_unit"


def test_game_with_observers_is_handled():
    replay = decode_replay(HARDWIRE)
    assert [(p.name, p.race, p.result, p.user_id) for p in replay.players] == [
        ("Maru", "Terran", "Win", 5),
        ("ByuN", "Terran", "Loss", 7),
    ]
    assert replay.observer_user_ids == [0, 1, 2, 3, 4, 6]
    counts = [extract_player(replay, pid, StreamConfig())[1].commands for pid in (1, 2)]
    assert counts == [137, 124]


def test_truncated_file_gives_corrupt_replay_error(tmp_path):
    bad = tmp_path / "truncated.SC2Replay"
    data = SIMPLE64.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptReplayError, match="truncated.SC2Replay.*truncated or not a StarCraft II replay"):
        decode_replay(bad)


def test_unsupported_build_gives_clear_error(tmp_path):
    # Rewrite the header's build varints 55958 -> 23925 (HotS 2.0.x, absent from s2protocol).
    data = SIMPLE64.read_bytes()
    patched = data[:200].replace(bytes.fromhex("acea06"), bytes.fromhex("eaf502")) + data[200:]
    bad = tmp_path / "old_build.SC2Replay"
    bad.write_bytes(patched)
    with pytest.raises(UnsupportedBuildError, match="old_build.SC2Replay: base build 23925 is not supported"):
        decode_replay(bad)
    with pytest.raises(UnsupportedBuildError, match="base build 30000 predates Legacy of the Void"):
        datapack_for_build(30000)


def test_builtin_ai_player_is_rejected(simple64):
    with pytest.raises(ReplayError, match="player 2 .*built-in AI"):
        extract_player(simple64, 2, StreamConfig())


def test_ability_mapping_fallbacks_and_datapacks():
    from sc2_envs.replays.abilities import AbilityMapper

    assert [datapack_for_build(b) for b in (55958, 64469, 89634, 97425)] == ["54724", "59587", "89720", "97364"]
    m = AbilityMapper(64469)
    assert m.link_name(155) == "OrbitalCommandTrain"  # absent from stableid.json: command-name fallback
    assert [NAMES[f] for f in m.map({"m_abilLink": 155, "m_abilCmdIndex": 0}, "quick")] == ["Train_SCV_quick"] * 2
    m = AbilityMapper(86383)
    flying = m.map({"m_abilLink": 149, "m_abilCmdIndex": 0}, "pt")  # BarracksFlyingBuild -> BuildBarracksTechLab
    assert [NAMES[f] for f in flying] == ["Build_TechLab_Barracks_pt", "Build_TechLab_pt"]
    assert NAMES[m.map({"m_abilLink": 75, "m_abilCmdIndex": 0}, "quick")[0]] == "Train_Baneling_quick"  # ZerglingTrain
    assert [NAMES[f] for f in m.map(None, "unit")] == ["Smart_unit", "Smart_unit"]
    assert m.map(None, "quick") is None


def test_remove_masks_follow_s2protocol_semantics():
    sel = [10, 11, 12, 13]
    assert apply_remove_mask(sel, {"None": None}) == (sel, False)
    assert apply_remove_mask(sel, {"Mask": (0b0101, 4)}) == ([11, 13], False)
    assert apply_remove_mask(sel, {"Mask": (0b0100, 13)}) == ([10, 11, 13], False)  # longer mask, no bit beyond
    assert apply_remove_mask(sel, {"Mask": (0b10001, 13)}) == ([11, 12, 13], True)  # bit 4 is beyond 4 items
    assert apply_remove_mask(sel, {"OneIndices": [1]}) == ([10, 12, 13], False)
    assert apply_remove_mask(sel, {"ZeroIndices": [0, 3]}) == ([10, 13], False)
    assert apply_remove_mask(sel, {"ZeroIndices": [5]}) == ([], True)


def test_fixed_stride_sampling_is_mostly_no_op(simple64):
    a, stats = extract_player(simple64, 1, StreamConfig(sample="every_k", k=8))
    assert len(a["function"]) == -(-simple64.game_loops // 8)
    labelled = int((a["function"] != 0).sum())
    assert 0 < labelled <= stats.mapped
    assert (a["function"] == 0).mean() > 0.95
    assert a["delay"][a["function"] == 0].tolist() == [8] * int((a["function"] == 0).sum())


def test_convert_writes_shards_and_reports_bad_files(tmp_path):
    bad = tmp_path / "in" / "broken.SC2Replay"
    bad.parent.mkdir()
    bad.write_bytes(b"not a replay")
    lines = []
    summary = convert_replays([SIMPLE64, HARDWIRE, bad], tmp_path / "out", progress=False, log=lines.append, shard_rows=100)
    assert (summary.files, summary.converted) == (3, 2)
    assert summary.errors == {"CorruptReplayError": 1}
    assert summary.samples == 47 + 137 + 124
    assert any(line.startswith("error broken.SC2Replay: CorruptReplayError") for line in lines)
    assert "mapping coverage: 308/308 commands" in lines[-1]
    assert summary.coverage_by_folder == {"mas_simple64": [47, 47], "ladder_misc": [261, 261]}
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert [e["status"] for e in index] == ["ok", "ok", "CorruptReplayError"]
    meta = json.loads((tmp_path / "out" / "dataset.json").read_text())
    shards = sorted((tmp_path / "out").glob("shard_*.npz"))
    assert len(shards) == meta["shards"] == 3  # 47 rows, then 137, then 124 (shard_rows=100)
    stream = index[1]["streams"][0]
    shard = load_shard(tmp_path / "out" / f"shard_{stream['shard']:05d}.npz")
    rows = slice(stream["row_start"], stream["row_start"] + stream["rows"])
    assert set(shard["player_id"][rows].tolist()) == {1}
    assert set(shard["replay_index"][rows].tolist()) == {1}
    assert shard["entities"].shape[1:] == (256, len(spec.REPLAY_ENTITY_FEATURES))
    assert shard["entities"].dtype == np.int16


@pytest.mark.slow  # converts all 93 replays of the optional set: 15-40 s on 2 cores; run with -m slow
def test_all_shared_replays_convert_with_high_coverage(shared_data_dir):
    paths = find_replays(shared_data_dir / "replays")
    assert len(paths) == 93
    summary = convert_replays(paths, None, progress=False, log=lambda line: None)
    assert summary.errors == {}
    assert summary.converted == 93
    assert summary.coverage > 0.985
    assert summary.observer_files >= 1


def test_enemy_units_option_hides_enemies(simple64):
    hidden, _ = extract_player(simple64, 1, StreamConfig(enemy_units="none"))
    shown, _ = extract_player(simple64, 1, StreamConfig(enemy_units="all"))
    alliance = spec.REPLAY_ENTITY_FEATURES.index("alliance")
    last = len(hidden["function"]) - 1
    assert not (hidden["entities"][last, : hidden["entity_count"][last], alliance] == 4).any()
    assert (shown["entities"][last, : shown["entity_count"][last], alliance] == 4).any()


def test_winners_only_keeps_the_winning_human(tmp_path):
    summary = convert_replays([LOST_AND_FOUND], tmp_path, players="winners", progress=False, log=lambda line: None)
    index = json.loads((tmp_path / "index.json").read_text())
    assert [s["player_id"] for s in index[0]["streams"]] == [1]
    assert summary.samples == 339
    with pytest.raises(ValueError, match="players='everyone'"):
        convert_replays([LOST_AND_FOUND], None, players="everyone", progress=False)


def test_command_line_prints_its_configuration_first(capsys):
    from sc2_envs.replays.__main__ import main

    assert main([str(HARDWIRE), "--no-progress", "--sample", "every_k", "--k", "16"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("replays: 1 .SC2Replay file(s) under") and "report only" in first and "k=16" in first


def _usage_error(capsys, argv) -> str:
    from sc2_envs.replays.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    return line


def test_a_missing_or_empty_replay_folder_is_one_usage_line_and_writes_nothing(tmp_path, capsys):
    """found by a tester: a missing folder was a FileNotFoundError traceback; an empty one (or one of other files)
    printed a report of 0 files and wrote a dataset.json with no shards that training then refused."""
    line = _usage_error(capsys, [str(tmp_path / "nope"), "--out", str(tmp_path / "out")])
    assert line.endswith(f"error: replay folder {str(tmp_path / 'nope')!r} does not exist")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("not a replay")
    line = _usage_error(capsys, [str(tmp_path / "notes"), "--out", str(tmp_path / "out")])
    assert line.endswith(f"error: no .SC2Replay files under {str(tmp_path / 'notes')!r} (1 other file); expected a "
                         "folder of replays (searched recursively) or one .SC2Replay file")  # fmt: skip
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--k", "0"], "--k 0: expected a positive stride in game loops"),
        (["--max-entities", "0"], "--max-entities 0: expected a positive integer"),
        (["--max-selected", "-1"], "--max-selected -1: expected a positive integer"),
        (["--raw-resolution", "0"], "--raw-resolution 0: expected a positive integer"),
        (["--shard-rows", "0"], "--shard-rows 0: expected a positive row count"),
        (
            ["--stableid", "/nonexistent/stableid.json"],
            "--stableid '/nonexistent/stableid.json': no such file; expected stableid.json or stableid.json.gz",
        ),
    ],
)
def test_bad_converter_flags_are_one_usage_line_before_any_file(tmp_path, capsys, flags, message):
    """found by a tester: these were tracebacks from StreamConfig or convert_replays, and a missing --stableid made
    every file fail as an UnexpectedError."""
    assert _usage_error(capsys, [str(HARDWIRE), "--no-progress", "--out", str(tmp_path / "out"), *flags]).endswith(
        f"error: {message}"
    )
    assert not (tmp_path / "out").exists()


def test_an_out_path_that_is_a_file_is_one_usage_line(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    line = _usage_error(capsys, [str(HARDWIRE), "--no-progress", "--out", str(tmp_path / "f")])
    assert line.endswith(f"error: --out {str(tmp_path / 'f')!r} is a file; expected a folder (new or existing)")


def test_a_run_that_converts_no_file_ends_with_an_error_line(tmp_path, capsys):
    from sc2_envs.replays.__main__ import main

    (tmp_path / "bad.SC2Replay").write_bytes(b"garbage")
    assert main([str(tmp_path), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "error: none of the 1 replay file(s) converted (errors: {'CorruptReplayError': 1}; one line per file above)" in err


# ------------------------------------------------------------------ loading a dataset (ReplayData)
@pytest.fixture(scope="module")
def three_shards(tmp_path_factory):
    """SIMPLE64 and HARDWIRE converted at 100 rows per shard: shard_00000 .. shard_00002."""
    out = tmp_path_factory.mktemp("ds") / "out"
    convert_replays([SIMPLE64, HARDWIRE], out, progress=False, log=lambda s: None, shard_rows=100)
    return out


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _load(root):
    from sc2_envs.replays.dataset import ReplayData

    return ReplayData(str(root), None, seq_len=16, val_fraction=0.5, seed=0)


def test_a_missing_shard_with_an_extra_file_in_its_place_is_refused_naming_both(three_shards, tmp_path):
    # before: only the number of shard_*.npz files was compared, so this loaded silently without shard_00001
    root = _copy(three_shards, tmp_path / "ds")
    (root / "shard_00001.npz").rename(root / "shard_00000_copy.npz")
    with pytest.raises(ValueError, match="the folder has missing shard_00001.npz; extra shard_00000_copy.npz"):
        _load(root)


@pytest.mark.parametrize(
    "config, message",
    [
        ({"sample": "every_k", "k": 0}, "config.k is 0 with sample every_k; expected"),
        ({"sample": "every_k", "k": "32"}, "config.k is '32' with sample every_k"),
        ({"sample": "every_k", "k": True}, "config.k is True with sample every_k"),
        ({"sample": "every_k", "k": 2.5}, "config.k is 2.5 with sample every_k"),
        ({"sample": "often"}, "config.sample is 'often'; expected 'actions' or 'every_k'"),
    ],
)
def test_a_bad_sampling_record_in_dataset_json_is_refused_at_load(three_shards, tmp_path, config, message):
    root = _copy(three_shards, tmp_path / "ds")
    meta = json.loads((root / "dataset.json").read_text())
    meta["config"].update(config)
    (root / "dataset.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=message):
        _load(root)


def test_an_every_k_dataset_loads_with_its_stride_as_step_mul(three_shards, tmp_path):
    root = _copy(three_shards, tmp_path / "ds")
    meta = json.loads((root / "dataset.json").read_text())
    meta["config"].update(sample="every_k", k=32)
    (root / "dataset.json").write_text(json.dumps(meta))
    data = _load(root)
    assert data.step_mul == 32 and _load(three_shards).step_mul is None
    assert "sampling every_k (k = 32 game loops per row)" in data.describe(8).splitlines()[0]


def test_a_corrupt_shard_is_named_in_the_error(three_shards, tmp_path):
    root = _copy(three_shards, tmp_path / "ds")
    (root / "shard_00002.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ValueError, match="shard_00002.npz' cannot be read"):
        _load(root)


def test_a_dataset_folder_that_does_not_exist_is_reported_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        _load(tmp_path / "nope")
