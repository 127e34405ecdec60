"""Tests of models/: masked categorical, entity parsing (against SMAC golden vectors), GNN transfer, checkpoints."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import sc2_envs
from models import (
    GNNActor,
    MaskedCategorical,
    ObsParser,
    StateParser,
    ValueNorm,
    build_models,
    heal_target_rows,
    load_checkpoint,
    save_checkpoint,
)
from models.entities import Entities


def env_info(map_name):
    return sc2_envs.make_batched(map_name, num_envs=1, seed=0).get_env_info()


def golden(map_name):
    path = Path(__file__).resolve().parent / "data" / "smac_golden" / f"{map_name}.json"
    assert path.is_file(), f"SMAC golden file {path} is missing from the repository (tests/data/smac_golden)"
    return json.loads(path.read_text())


# ---------------------------------------------------------------- masked categorical
def test_masked_categorical_hand_checked_probs_entropy_kl():
    logits = torch.tensor([0.0, math.log(2.0), 5.0])
    avail = torch.tensor([True, True, False])
    d = MaskedCategorical(logits, avail)
    assert torch.allclose(d.probs, torch.tensor([1 / 3, 2 / 3, 0.0]))
    assert d.probs[2].item() == 0.0
    assert d.log_prob(torch.tensor(1)).item() == pytest.approx(math.log(2 / 3), abs=1e-6)
    assert d.entropy().item() == pytest.approx(-(1 / 3 * math.log(1 / 3) + 2 / 3 * math.log(2 / 3)), abs=1e-6)
    q = MaskedCategorical(torch.tensor([0.0, math.log(3.0), -7.0]), avail)  # [1/4, 3/4, 0]
    p2 = MaskedCategorical(torch.tensor([0.0, 0.0, 9.0]), avail)  # [1/2, 1/2, 0]
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert p2.kl(q).item() == pytest.approx(expected, abs=1e-6)
    assert p2.kl(p2).item() == pytest.approx(0.0, abs=1e-7)
    assert d.mode().item() == 1  # the masked action has the largest raw logit but is never chosen


def test_masked_categorical_single_available_action_is_deterministic_without_nan():
    logits = torch.tensor([[0.3, -2.0, 4.0, 1.0]], requires_grad=True)
    avail = torch.tensor([[False, True, False, False]])
    d = MaskedCategorical(logits, avail)
    lp, ent = d.log_prob(torch.tensor([1])), d.entropy()
    assert lp.item() == 0.0 and ent.item() == 0.0
    (lp + ent).sum().backward()
    assert torch.equal(logits.grad, torch.zeros_like(logits))
    assert d.sample().item() == 1


def test_masked_categorical_never_samples_unavailable_actions():
    torch.manual_seed(0)
    avail = torch.rand(2000, 7) > 0.5
    avail[:, 3] = True
    d = MaskedCategorical(torch.randn(2000, 7) * 3, avail)
    a = d.sample()
    assert avail.gather(1, a[:, None]).all()


def test_value_norm_normalises_and_roundtrips():
    vn = ValueNorm()
    x = torch.tensor([1.0, 3.0, 5.0, 7.0])
    vn.update(x)
    assert vn.normalize(x).mean().item() == pytest.approx(0.0, abs=1e-5)
    assert torch.allclose(vn.denormalize(vn.normalize(x)), x, atol=1e-5)
    assert set(vn.state_dict()) == {"running_mean", "running_mean_sq", "debiasing_term"}


# ---------------------------------------------------------------- entity parsing
def test_obs_parser_matches_smac_golden_rows_and_aligns_enemy_type_bits():
    g, info = golden("2s3z"), env_info("2s3z")
    parser = ObsParser(info)
    vocab = info["ally_type_order"]
    assert info["enemy_type_order"] == ["zealot", "stalker"]  # SMAC's swapped enemy bits on this map
    for case in g["feature_cases"][:5]:
        obs = torch.tensor(case["obs"], dtype=torch.float32)  # [N, 80]
        ent = parser(obs)
        for i, me in enumerate(case["allies"]):
            alive = me["health"] > 0
            for j, e in enumerate(case["enemies"]):
                visible = alive and e["health"] > 0 and math.hypot(e["x"] - me["x"], e["y"] - me["y"]) < 9
                assert bool(ent.enemy_mask[i, j]) == visible
                row = ent.enemies[i, j]
                raw = obs[i, 4 + 8 * j : 4 + 8 * (j + 1)]
                assert torch.equal(row[:6], raw[:6])  # attackable, distance, dx, dy, health, shield
                if visible:
                    one_hot = [float(t == e["type"]) for t in vocab]  # ally order: stalker=0, zealot=1
                    assert row[6:].tolist() == one_hot
            others = [a for k, a in enumerate(case["allies"]) if k != i]
            for r, a in enumerate(others):
                if bool(ent.ally_mask[i, r]):
                    assert ent.allies[i, r, 6:].tolist() == [float(t == a["type"]) for t in vocab]
            if alive:
                assert ent.own[i, -2:].tolist() == [float(t == me["type"]) for t in vocab]
            else:
                assert torch.equal(ent.own[i], torch.zeros_like(ent.own[i]))


def test_state_parser_matches_smac_golden_and_compresses_last_actions():
    g, info = golden("2s3z"), env_info("2s3z")
    parser = StateParser(info)
    case = g["feature_cases"][0]
    se = parser(torch.tensor(case["state"], dtype=torch.float32))
    vocab = info["ally_type_order"]
    for j, e in enumerate(case["enemies"]):
        if e["health"] > 0:
            assert se.enemies[j, 4:6].tolist() == [float(t == e["type"]) for t in vocab]
    for i, a in enumerate(case["last_action"]):
        compressed = se.allies[i, -7:].tolist()
        assert compressed == [float(a == k) for k in range(6)] + [float(a >= 6)]
    attackers = [a - 6 for a in case["last_action"] if a >= 6]  # no medivac on 2s3z: every agent counts
    for j in range(len(case["enemies"])):
        assert se.enemies[j, -1].item() == pytest.approx(attackers.count(j) / len(case["allies"]))


def test_layout_that_does_not_add_up_is_rejected_with_the_sizes():
    info = env_info("2s3z")
    bad = dict(info, obs_layout=dict(info["obs_layout"], enemy_feats=7))
    with pytest.raises(ValueError, match="obs_shape is 80"):
        ObsParser(bad)


def test_heal_target_rows_skip_self_and_missing_agents():
    rows = heal_target_rows(torch.tensor([2, 0]), n_agents=4, n_targets=5)
    assert rows.tolist() == [[0, 1, -1, 2, -1], [-1, 0, 1, 2, -1]]


# ---------------------------------------------------------------- count invariance and transfer
def _random_entities(R=6, na=3, ne=4, d=8):
    return (torch.randn(R, d), torch.randn(R, na, d), torch.rand(R, na) > 0.3, torch.randn(R, ne, d), torch.rand(R, ne) > 0.3)


def test_gnn_actor_is_permutation_equivariant_over_enemies_and_invariant_over_allies():
    torch.manual_seed(0)
    actor = GNNActor(own_dim=8, ally_dim=8, enemy_dim=8, hidden=32, heads=4)
    own, allies, am, enemies, em = _random_entities()
    base = actor(Entities(own, allies, am, enemies, em))
    pe, pa = torch.tensor([2, 0, 3, 1]), torch.tensor([1, 2, 0])
    perm = actor(Entities(own, allies[:, pa], am[:, pa], enemies[:, pe], em[:, pe]))
    assert torch.allclose(base[:, :6], perm[:, :6], atol=1e-5)
    assert torch.allclose(base[:, 6:][:, pe], perm[:, 6:], atol=1e-5)


def test_gnn_actor_ignores_masked_entities_whatever_their_number_or_content():
    torch.manual_seed(0)
    actor = GNNActor(own_dim=8, ally_dim=8, enemy_dim=8, hidden=32, heads=4)
    own, allies, am, enemies, em = _random_entities()
    base = actor(Entities(own, allies, am, enemies, em))
    extra_a, extra_e = torch.randn(6, 5, 8), torch.randn(6, 7, 8)  # e.g. a bigger map's out-of-sight units
    big = actor(
        Entities(
            own,
            torch.cat([allies, extra_a], 1),
            torch.cat([am, torch.zeros(6, 5, dtype=torch.bool)], 1),
            torch.cat([enemies, extra_e], 1),
            torch.cat([em, torch.zeros(6, 7, dtype=torch.bool)], 1),
        )
    )
    assert big.shape == (6, 6 + 4 + 7)
    assert torch.allclose(base, big[:, :10], atol=1e-5)


@pytest.mark.parametrize("target_map", ["3s5z", "3s5z_vs_3s6z"])
def test_class_actor_built_for_2s3z_runs_unchanged_on_bigger_maps(target_map):
    torch.manual_seed(0)
    policy, critic = build_models(env_info("2s3z"), "gnn", hidden=32)
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    env = sc2_envs.make_batched(target_map, num_envs=4, seed=1)
    info = env.get_env_info()
    policy.bind(info)
    critic.bind(info)
    out = env.reset(seed=1)
    for _ in range(3):
        with torch.no_grad():
            actions, logp = policy.act(out["obs"], out["avail_actions"])
            value = critic(out["state"])
        assert actions.shape == (4, info["n_agents"]) and torch.isfinite(logp).all() and value.shape == (4,)
        out = env.step(actions)  # raises if an action were unavailable
    logits = policy.class_logits("zealot", out["obs"][:, policy.agent_ids("zealot")])
    assert logits.shape[-1] == info["n_actions"]
    assert all(torch.equal(before[k], v) for k, v in policy.state_dict().items())


def test_mlp_actor_refuses_another_team_size_with_a_clear_error():
    policy, _ = build_models(env_info("2s3z"), "mlp", hidden=16)
    with pytest.raises(ValueError, match="obs_size"):
        policy.bind(env_info("3s5z"))


# ---------------------------------------------------------------- checkpoints
def test_mlp_checkpoint_refuses_the_same_sizes_with_other_columns(tmp_path):
    # found by a tester: an MLP trained on 3m with obs_pathing_grid (no health columns) loaded silently on
    # 3m with obs_all_health + obs_timestep_number: both observations have 32 columns, meaning other things
    off = dict.fromkeys(("obs_own_health", "obs_all_health", "obs_last_action", "obs_timestep_number"), False)
    a = sc2_envs.make_batched("3m", num_envs=1, **off, obs_pathing_grid=True).get_env_info()
    b = sc2_envs.make_batched("3m", num_envs=1, **dict(off, obs_all_health=True, obs_timestep_number=True)).get_env_info()
    assert a["obs_shape"] == b["obs_shape"] and a["n_actions"] == b["n_actions"]
    policy, critic = build_models(a, "mlp", hidden=8)
    path = str(tmp_path / "mlp.pt")
    save_checkpoint(path, policy, critic, a, {"map": "3m"}, global_step=1)
    with pytest.raises(
        ValueError, match=r"the sizes match but the obs_layout differs \(checkpoint vs env: ally_feats: 4 vs 5"
    ):
        load_checkpoint(path, b, with_critic=False)
    load_checkpoint(path, a)  # its own layout (actor and critic) still loads


def test_checkpoint_carries_config_loads_weights_only_and_transfers(tmp_path):
    torch.manual_seed(0)
    info = env_info("2s3z")
    policy, critic = build_models(info, "gnn", hidden=32)
    path = str(tmp_path / "ckpt.pt")
    save_checkpoint(path, policy, critic, info, {"map": "2s3z", "seed": 1}, global_step=123)
    raw = torch.load(path, weights_only=True)
    assert raw["config"]["map_name"] == "2s3z" and raw["config"]["classes"] == ["stalker", "zealot"]
    assert raw["config"]["obs_layout"] == info["obs_layout"] and raw["args"]["seed"] == 1 and raw["global_step"] == 123
    pol2, _, _ = load_checkpoint(path, info)
    obs = sc2_envs.make_batched("2s3z", num_envs=2, seed=3).reset(seed=3)["obs"]
    ids = policy.agent_ids("stalker")
    assert torch.equal(policy.class_logits("stalker", obs[:, ids]), pol2.class_logits("stalker", obs[:, ids]))
    pol3, _, _ = load_checkpoint(path, env_info("3s5z"))
    assert pol3.class_agents == {"stalker": [0, 1, 2], "zealot": [3, 4, 5, 6, 7]}


def test_checkpoint_extra_records_are_in_the_same_file_and_writes_are_atomic(tmp_path, monkeypatch):
    """Found in review: a BC checkpoint was written at 0 env steps and its ``bc`` record added by a second
    write, so a crash between the two left a file that read as an RL checkpoint at 0 env steps."""
    info = env_info("3m")
    policy, critic = build_models(info, "mlp", hidden=16)
    path = tmp_path / "bc.pt"
    save_checkpoint(str(path), policy, critic, info, {}, extra={"bc": {"epoch": 3}})
    assert torch.load(path, weights_only=True)["bc"] == {"epoch": 3}
    with pytest.raises(ValueError, match=r"extra keys \['global_step'\] would replace"):
        save_checkpoint(str(path), policy, critic, info, {}, extra={"global_step": 5})
    with pytest.raises(ValueError, match=r"extra keys \['algorithm'\] would replace"):
        save_checkpoint(str(path), policy, critic, info, {}, extra={"algorithm": "x"}, algorithm="bc_reweight")
    for bad in ("", 3, None.__class__):
        with pytest.raises(ValueError, match=r"algorithm=.*expected the training script's name"):
            save_checkpoint(str(path), policy, critic, info, {}, algorithm=bad)
    # found in review: a NumPy value was written and the file then failed every weights_only load
    for odd in (np.float64(0.5), np.zeros(3), Path("x")):
        with pytest.raises(ValueError, match=r"extra\['bc'\] cannot be read back with torch.load\(weights_only=True\)"):
            save_checkpoint(str(path), policy, critic, info, {}, extra={"bc": {"acc": odd}})

    def crash(obj, f):
        f.write(b"half a checkpoint")
        raise OSError("disk full, for the test")

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(str(path), policy, critic, info, {}, global_step=9)
    monkeypatch.undo()
    assert torch.load(path, weights_only=True)["bc"] == {"epoch": 3}  # the previous file, intact
    assert [p.name for p in tmp_path.iterdir()] == ["bc.pt"]  # no temporary file left behind


def test_checkpoint_for_a_mismatched_map_names_both_maps(tmp_path):
    info = env_info("2s3z")
    policy, critic = build_models(info, "mlp", hidden=16)
    path = str(tmp_path / "mlp.pt")
    save_checkpoint(path, policy, critic, info, {})
    with pytest.raises(ValueError, match=r"trained on 2s3z.*does not fit 3s5z"):
        load_checkpoint(path, env_info("3s5z"))
    policy, critic = build_models(info, "gnn", hidden=16)
    save_checkpoint(path, policy, critic, info, {})
    with pytest.raises(ValueError, match="no actor"):
        load_checkpoint(path, env_info("3m"))


def test_checkpoint_missing_parts_are_named(tmp_path):
    info = env_info("2s3z")
    policy, critic = build_models(info, "gnn", hidden=16)
    path = str(tmp_path / "ckpt.pt")
    save_checkpoint(path, policy, critic, info, {})
    raw = torch.load(path, weights_only=True)
    del raw["critic"], raw["config"]["critic_hparams"]
    torch.save(raw, path)
    with pytest.raises(ValueError, match=r"lacks critic, config\.critic_hparams"):
        load_checkpoint(path, info)
    with pytest.raises(ValueError, match=r"lacks config\.critic_hparams$|lacks config\.critic_hparams:"):
        load_checkpoint(path, info, with_critic=False)


def test_medivac_heal_logits_are_keyed_by_ally_not_by_enemy_rows():
    torch.manual_seed(0)
    actor = GNNActor(own_dim=8, ally_dim=8, enemy_dim=8, hidden=32, heads=4, healer=True)
    own, allies, am, enemies, em = _random_entities(R=3, na=3, ne=5)
    heal = heal_target_rows(torch.tensor([2, 2, 2]), n_agents=4, n_targets=5)  # agent 2 of 4: targets 0, 1, 3
    base = actor(Entities(own, allies, am, enemies, em), heal)
    swap = torch.tensor([1, 0, 2])
    swapped = actor(Entities(own, allies[:, swap], am[:, swap], enemies, em), heal)
    assert base.shape == (3, 6 + 5)
    assert torch.allclose(base[:, :6], swapped[:, :6], atol=1e-5)
    assert torch.allclose(base[:, 6 + 0], swapped[:, 6 + 1], atol=1e-5)  # "heal agent 0" follows agent 0's row
    assert torch.allclose(base[:, 6 + 3], swapped[:, 6 + 3], atol=1e-5)


def test_gnn_models_act_on_every_map_including_medivacs_and_colossi():
    for map_name in ("MMM2", "1c3s5z", "bane_vs_bane", "corridor"):
        env = sc2_envs.make_batched(map_name, num_envs=2, seed=0)
        policy, critic = build_models(env.get_env_info(), "gnn", hidden=16)
        out = env.reset(seed=0)
        for _ in range(2):
            with torch.no_grad():
                actions, _ = policy.act(out["obs"], out["avail_actions"])
                assert torch.isfinite(critic(out["state"])).all()
            out = env.step(actions)  # raises if any sampled action were unavailable
