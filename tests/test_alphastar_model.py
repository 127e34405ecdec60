"""Tests of models/alphastar.py: preset size, shapes, masks of the autoregressive heads, teacher forcing, errors."""

import pytest
import torch

from models.alphastar import (
    AlphaStarConfig,
    AlphaStarPolicy,
    encode_entities,
    encode_minimap,
    load_alphastar,
    save_alphastar,
)
from sc2_envs.full_game import spec

pytest.importorskip("pysc2_evolved", reason="the raw-function table (argument masks) comes from pysc2_evolved")

MINI_AS_TOTAL = 2_664_028  # mini-AlphaStar v1.09 ArchModel(), measured (liuruoze/mini-AlphaStar)
MINI_AS_POLICY = 1_570_887  # the same without its 5 baselines


def make_obs(cfg, B=2, T=3, n_real=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    E, C = cfg.max_entities, len(cfg.entity_features)
    ent = torch.zeros(B, T, E, C)
    col = {n: i for i, n in enumerate(cfg.entity_features)}
    ent[..., :n_real, col["unit_type"]] = torch.randint(1, cfg.n_unit_types, (B, T, n_real), generator=g).float()
    alliance = torch.tensor([1, 1, 1, 4, 3] * (n_real // 5 + 1))[:n_real].float()
    ent[..., :n_real, col["alliance"]] = alliance
    ent[..., :n_real, col["x"]] = torch.randint(0, cfg.raw_resolution, (B, T, n_real), generator=g).float()
    ent[..., :n_real, col["y"]] = torch.randint(0, cfg.raw_resolution, (B, T, n_real), generator=g).float()
    obs = {
        "entities": ent,
        "entity_count": torch.full((B, T), n_real),
        "scalars": torch.zeros(B, T, len(cfg.scalar_features)),
        "upgrades": torch.zeros(B, T, cfg.n_upgrades),
        "unit_counts": torch.zeros(B, T, cfg.n_unit_types),
        "build_order": torch.zeros(B, T, spec.BUILD_ORDER_LENGTH, dtype=torch.long),
    }
    if cfg.minimap_features:
        obs["minimap"] = torch.zeros(B, T, len(cfg.minimap_features), cfg.minimap_size, cfg.minimap_size)
    if cfg.use_action_type_mask:
        m = torch.zeros(B, T, cfg.n_functions, dtype=torch.bool)
        m[..., [0, 1, 3, 12]] = True  # no_op, Smart_pt, Attack_unit (a *_unit command), and one more
        obs["action_type_mask"] = m
    return obs


def test_mini_preset_has_mini_alphastar_parameter_count():
    m = AlphaStarPolicy(AlphaStarConfig.mini())
    n = m.n_params()
    assert n["total"] == sum(v for k, v in n.items() if k != "total")
    assert abs(n["total"] - MINI_AS_TOTAL) / MINI_AS_TOTAL < 0.10, n
    assert abs(n["total"] - n["baselines"] - MINI_AS_POLICY) / MINI_AS_POLICY < 0.10, n


def test_forward_shapes_and_head_constraints_when_sampling():
    torch.manual_seed(0)
    cfg = AlphaStarConfig.tiny()
    m = AlphaStarPolicy(cfg)
    B, T, E, K = 2, 3, cfg.max_entities, cfg.max_selected
    obs = make_obs(cfg, B, T)
    out, (h, _) = m(obs)
    assert out["action_type"].shape == (B, T, cfg.n_functions)
    assert out["delay"].shape == (B, T, spec.MAX_DELAY + 1) and out["queued"].shape == (B, T, 2)
    assert out["selected_units"].shape == (B, T, K, E + 1) and out["target_unit"].shape == (B, T, E)
    assert out["target_location"].shape == (B, T, cfg.raw_resolution**2)
    assert set(out["value"]) == set(cfg.baselines) and out["value"]["winloss"].shape == (B, T)
    assert h.shape == (cfg.lstm_layers, B, cfg.lstm_hidden)
    acts = out["actions"]
    # only action types in the mask are chosen
    assert obs["action_type_mask"].gather(-1, acts["action_type"].unsqueeze(-1)).all()
    sel = acts["selected"]
    for b in range(B):
        for t in range(T):
            picks = [int(i) for i in sel[b, t] if int(i) != E]
            assert len(picks) == len(set(picks))  # a unit is picked at most once
            assert all(i < 3 for i in picks)  # only own units (rows 0-2 have alliance 1)
    # end of selection is masked at the first pick of unit commands
    assert not out["selected_mask"][..., 0, E].any()
    assert not torch.isnan(out["selected_units"]).any()


def test_teacher_forcing_uses_the_labels():
    cfg = AlphaStarConfig.tiny(use_action_type_mask=False)
    m = AlphaStarPolicy(cfg)
    B, T, E = 1, 2, cfg.max_entities
    obs = make_obs(cfg, B, T)
    labels = {
        "action_type": torch.full((B, T), 3),
        "delay": torch.tensor([[5, 7]]),
        "queued": torch.tensor([[1, 0]]),
        "selected": torch.tensor([[[1, 0, -1, -1], [2, -1, -1, -1]]]),
        "selected_count": torch.tensor([[2, 1]]),
        "target_unit": torch.tensor([[3, 4]]),
        "target_location": torch.tensor([[17, 200]]),
    }
    out, _ = m(obs, labels=labels)
    a = out["actions"]
    assert a["action_type"].tolist() == [[3, 3]] and a["delay"].tolist() == [[5, 7]]
    assert a["selected"].tolist() == [[[1, 0, E, E], [2, E, E, E]]]
    assert a["target_unit"].tolist() == [[3, 4]] and a["target_location"].tolist() == [[17, 200]]


def test_replay_config_runs_without_minimap_and_mask():
    cfg = AlphaStarConfig.replay(AlphaStarConfig.tiny())
    assert cfg.minimap_features == () and not cfg.use_action_type_mask
    m = AlphaStarPolicy(cfg)
    out, _ = m(make_obs(cfg, 2, 1))
    assert out["action_type"].shape == (2, 1, cfg.n_functions)


def test_a_preset_on_a_replay_dataset_takes_its_grid_and_entities_and_at_most_its_selection_length():
    cfg = AlphaStarConfig.for_replays("mini", max_entities=192, raw_resolution=64, max_selected=64)
    assert (cfg.max_entities, cfg.raw_resolution, cfg.minimap_size, cfg.max_selected) == (192, 64, 64, 12)
    assert cfg.entity_dim == AlphaStarConfig.mini().entity_dim and cfg == AlphaStarConfig.replay(cfg)
    assert AlphaStarConfig.for_replays("tiny", 32, 16, 2).max_selected == 2
    with pytest.raises(ValueError, match="preset 'huge'; expected one of \\['mini', 'tiny'\\]"):
        AlphaStarConfig.for_replays("huge", 32, 16, 8)


def test_empty_entity_list_gives_finite_outputs():
    cfg = AlphaStarConfig.tiny()
    m = AlphaStarPolicy(cfg)
    obs = make_obs(cfg, 1, 1)
    obs["entity_count"].zero_()
    out, _ = m(obs)
    for k in ("action_type", "selected_units", "target_unit", "target_location"):
        assert torch.isfinite(out[k]).all(), k
    assert (out["actions"]["selected"] == cfg.max_entities).all()  # nothing to select: end of selection


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="entity_features has unknown columns"):
        AlphaStarConfig.tiny(entity_features=("unit_type", "speed"))
    with pytest.raises(ValueError, match="raw_resolution"):
        AlphaStarConfig.tiny(raw_resolution=32)
    cfg = AlphaStarConfig.tiny()
    m = AlphaStarPolicy(cfg)
    obs = make_obs(cfg, 1, 1)
    obs["entities"] = obs["entities"][..., :5]
    with pytest.raises(ValueError, match="columns"):
        m(obs)
    obs = make_obs(cfg, 1, 1)
    obs["entities"][..., 0, 1] = 9  # alliance 9
    with pytest.raises(ValueError, match="'alliance'"):
        m(obs)


def test_checkpoint_round_trip(tmp_path):
    cfg = AlphaStarConfig.tiny()
    m = AlphaStarPolicy(cfg)
    save_alphastar(str(tmp_path / "a.pt"), m, {"bc": {"epoch": 1}})
    m2, ck = load_alphastar(str(tmp_path / "a.pt"))
    assert m2.cfg == cfg and ck["bc"]["epoch"] == 1
    for (k, v), (k2, v2) in zip(m.state_dict().items(), m2.state_dict().items(), strict=False):
        assert k == k2 and torch.equal(v, v2)


def random_entity_rows(cfg, rows=40, seed=0):
    """Entity rows with every column in its observed range (one-hot columns over all their classes)."""
    g = torch.Generator().manual_seed(seed)
    top = {"unit_type": cfg.n_unit_types, "alliance": 5, "owner": 17, "order_id_0": cfg.n_functions}
    top["order_id_1"] = cfg.n_functions
    top.update(x=cfg.raw_resolution, y=cfg.raw_resolution, display_type=5, cloak=5, cargo_space_taken=9)
    top.update(cargo_space_max=9, attack_upgrade_level=4, armor_upgrade_level=4, shield_upgrade_level=4)
    cols = []
    for name in cfg.entity_features:
        if name in top:
            cols.append(torch.randint(0, top[name], (3, rows), generator=g).float())
        elif name.startswith(("is_",)):
            cols.append(torch.randint(0, 2, (3, rows), generator=g).float())
        elif name in ("build_progress",) or name.startswith("order_progress"):
            cols.append(torch.rand(3, rows, generator=g) * 1.2 - 0.1)
        else:  # counts and amounts: health, minerals, cooldowns, buffs, ... past their caps too
            cols.append(torch.randint(0, 2500, (3, rows), generator=g).float())
    return torch.stack(cols, -1)


@pytest.mark.parametrize("preset", ["mini", "replay"])
def test_entity_embedding_is_the_first_layer_on_the_encoded_rows(preset):
    cfg = AlphaStarConfig.mini() if preset == "mini" else AlphaStarConfig.replay()
    torch.manual_seed(0)
    m = AlphaStarPolicy(cfg)
    ent = random_entity_rows(cfg)
    with torch.no_grad():
        want = m.entity_in(encode_entities(ent, cfg))
        got = m._entity_embedding(ent)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_spatial_input_is_the_1x1_conv_on_the_scatter_grid_and_encoded_planes():
    cfg = AlphaStarConfig.tiny()
    torch.manual_seed(0)
    m = AlphaStarPolicy(cfg)
    g = torch.Generator().manual_seed(1)
    BT, E, M, S = 3, cfg.max_entities, cfg.minimap_size, cfg.scatter_channels
    ent = random_entity_rows(cfg, rows=E)
    sc = torch.rand(BT, E, S, generator=g)
    sizes = {"height_map": 256, "visibility_map": 4, "player_relative": 5}
    mm = torch.stack([torch.randint(0, sizes.get(p, 2), (BT, M, M), generator=g) for p in cfg.minimap_features], 1).to(
        torch.uint8
    )
    col = {n: i for i, n in enumerate(cfg.entity_features)}
    cell = ent[..., col["y"]].long() * M + ent[..., col["x"]].long()  # raw_resolution == minimap_size
    grid = torch.zeros(BT, S, M * M).scatter_add_(2, cell.unsqueeze(1).expand(-1, S, -1), sc.transpose(1, 2))
    with torch.no_grad():
        want = m.spatial_in(torch.cat([grid.reshape(BT, S, M, M), encode_minimap(mm, cfg)], 1))
        got = m._spatial_input(sc, ent, mm.unsqueeze(1))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_minimap_plane_out_of_its_classes_is_named():
    cfg = AlphaStarConfig.tiny()
    m = AlphaStarPolicy(cfg)
    obs = make_obs(cfg, 1, 1)
    obs["minimap"][:, :, cfg.minimap_features.index("player_relative")] = 7
    with pytest.raises(ValueError, match="'player_relative'"):
        m(obs)


def test_encode_minimap_is_one_hot_per_plane_and_the_scaled_height():
    cfg = AlphaStarConfig.tiny(minimap_features=("height_map", "visibility_map"))
    mm = torch.tensor([[[[255, 0]], [[3, 1]]]], dtype=torch.uint8).expand(1, 2, 2, 2)
    out = encode_minimap(mm, cfg)
    assert out.shape == (1, 5, 2, 2)
    torch.testing.assert_close(out[0, :, 0, 0], torch.tensor([1.0, 0, 0, 0, 1]))
    torch.testing.assert_close(out[0, :, 0, 1], torch.tensor([0.0, 0, 1, 0, 0]))  # height 0, visibility 1
