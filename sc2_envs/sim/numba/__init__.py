"""The compiled mirror of the torch rules (Numba, CPU), bit-equal to them.

Each module mirrors the ``sim.rules`` module of the same name, function for function, in float32 with
the reference's operation order and constants, so every state tensor and output comes out bit for bit
equal (``tests/test_kernel_{tick,observe,step,v2}.py``):

==================  =========================================  ==========================================
module              mirrors (torch reference)                  entry points
==================  =========================================  ==========================================
``actions``         ``rules.actions``                          ``check_actions``, ``apply_actions``,
                                                               ``orders_env`` (actions, then the enemy AI)
``enemy_ai``        ``rules.enemy_ai.EnemyAI.act``             ``act``
``dynamics``        ``rules.dynamics.Dynamics.advance``        ``advance``, ``TickKernel``
``features``        ``rules.features.SMACFeatures`` and the    ``step_env``, ``observe_env``, ``ObserveKernel``
                    rules of ``rules.features_v2`` (one code
                    path, the roster switch in the tables)
``features_v2``     ``rules.features_v2.SMACv2Features``       ``v2_consts``, ``ObserveKernelV2``
                    (a scenario's tables)
``reset``           ``rules.reset``                            ``reset_envs``, ``ScenarioResetKernel``
``rng``             ``sim.rng``                                ``mix_hash``, ``absorb``, ``uniform``
``state``           ``sim.state`` (the unit tables, flattened)  ``CF_*``/``CI_*``/``FL_*`` rows,
                                                               ``env_tables``, the argument groups
``step``            ``SMACSim.step``                           ``StepKernel``
==================  =========================================  ==========================================

The kernels take their arrays in named groups (``typing.NamedTuple``), with ``WorldState``'s and the
torch objects' names: ``state.UnitState``, ``EpisodeState``, ``SeedState``, ``UnitTables``,
``KindTables``, ``MapTables``, ``dynamics.TickScratch``, ``features.ObserveTables`` and
``step.StepOutputs``. Python passes each group as a plain tuple, made once where the kernel is set up
(the state views while the tensors stay), and the compiled code names it where no reference is
counted (``_nrt=False``); see ``state``.

The runtime around these kernels (on-disk cache, threaded chunks, schedule, background compile) is
``sim.runtime``; importing it here installs the cache locators before any kernel is decorated (Numba
picks a function's locator when the decorator runs).
"""

from __future__ import annotations

from sc2_envs.sim.runtime import numba_available

if numba_available() is None:
    from sc2_envs.sim.runtime.cache import install

    install()
