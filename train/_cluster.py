"""Where a cluster run places its work: GPUs per role, vLLM engines, colocation.

Only the OpenRLHF backend reads this block; the TRL backend runs on one process and refuses
a recipe that asks for more than one node or GPU here (``spade.train.openrlhf`` explains the
placement in its dry run).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ClusterSettings"]


class ClusterSettings(BaseModel):
    """Placement of an OpenRLHF run (Ray + vLLM + DeepSpeed).

    The default is OpenRLHF's single-node "hybrid engine": the actor, the reference model
    (only when ``grpo.kl_coef > 0``) and ``vllm_engines`` engines share every GPU of one
    node, taking turns (sleep/wake) between generation and the update.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: int = Field(default=1, ge=1)
    gpus_per_node: int = Field(default=8, ge=1)
    #: vLLM engines (default: one per GPU of the run).
    vllm_engines: int | None = Field(default=None, ge=1)
    vllm_tensor_parallel: int = Field(default=1, ge=1)
    #: Share GPUs between training and generation (OpenRLHF's hybrid engine).
    colocate: bool = True
    vllm_gpu_memory_utilization: float = Field(default=0.5, gt=0, le=1)
    zero_stage: int = Field(default=3, ge=0, le=3)
    #: Context bound of one training sequence: prompt plus every turn (tokens).
    max_len: int = Field(default=32768, ge=256)
    #: Pack a micro-batch's sequences into one row (no padding; flash-attention varlen).
    packing: bool = True
    #: Per-GPU token cap of one micro-batch (OpenRLHF's dynamic batching, which packs
    #: sequences up to the cap; a longer sequence is a micro-batch of its own). None: no
    #: dynamic batching, ``grpo.micro_batch_size`` sequences per micro-batch.
    max_tokens_per_gpu: int | None = Field(default=16384, ge=256)
    #: Split each packed micro-batch's tokens over this many GPUs (ring attention; needs
    #: the ring-flash-attn package): divides the per-GPU logits of a long sequence.
    ring_attn_size: int = Field(default=1, ge=1)
    #: Keep the fp32 master weights and Adam moments in CPU memory (DeepSpeed offload).
    adam_offload: bool = False
    #: Memory of one GPU (GiB), for the dry run's per-GPU estimate.
    gpu_memory_gb: float = Field(default=80.0, gt=0)

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def engines(self) -> int:
        return self.vllm_engines or self.gpus // self.vllm_tensor_parallel

    @model_validator(mode="after")
    def _fits(self) -> ClusterSettings:
        if self.max_tokens_per_gpu is not None and not self.packing:
            raise ValueError("cluster.max_tokens_per_gpu (dynamic batching) packs sequences: "
                             "it needs cluster.packing: true")
        if self.engines * self.vllm_tensor_parallel > self.gpus:
            raise ValueError(f"{self.engines} vLLM engines x tensor parallel "
                             f"{self.vllm_tensor_parallel} need more than the {self.gpus} GPUs")
        if self.ring_attn_size > 1 and (self.gpus % self.ring_attn_size or not self.packing):
            raise ValueError(f"cluster.ring_attn_size {self.ring_attn_size} needs packing and "
                             f"must divide the {self.gpus} GPUs")
        if self.colocate and self.engines * self.vllm_tensor_parallel != self.gpus:
            raise ValueError(f"cluster.colocate shares every GPU between training and "
                             f"generation: vLLM engines x tensor parallel "
                             f"({self.engines} x {self.vllm_tensor_parallel}) must equal the "
                             f"{self.gpus} GPUs")
        return self
