"""Engine-free conversion of real ``.SC2Replay`` files into a training dataset.

Decoding uses s2protocol (imported lazily), ability names come from sc2reader's datapacks
and ``stableid.json``, and the features are the replay-observable subset of
``sc2_envs.full_game.spec``. Entry points: ``decode_replay``, ``extract_player``,
``convert_replays`` and ``python -m sc2_envs.replays``.
"""

from sc2_envs.replays.decode import CorruptReplayError, ReplayError, UnsupportedBuildError, decode_replay

__all__ = ["CorruptReplayError", "ReplayError", "UnsupportedBuildError", "decode_replay"]
