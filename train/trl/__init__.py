"""The single-machine backend: ``trl.GRPOTrainer`` (pinned ``trl==1.16.0``) with a
``rollout_func`` that executes SPADE tickets with the trainer's live model.

TRL sees one prompt per ticket repeated ``group_size`` times; the rollout returns one
completion per element (prompt ids, completion ids, ``env_mask`` = 0 on environment and
tool tokens) plus SPADE's per-role GRPO advantage of each sample as its reward. With
``scale_rewards="none"`` TRL's advantage is ``reward - mean(group)``, and a SPADE group's
advantages already have mean zero, so the advantages TRL applies ARE SPADE's.
"""

from __future__ import annotations

from spade.train.trl._backend import TRL_VERSION, build_trainer, train_with_trl

__all__ = ["TRL_VERSION", "build_trainer", "train_with_trl"]
