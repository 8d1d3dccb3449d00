"""What one controller run leaves behind: per-interaction arrays and the final state (``RunTrace``).

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); ``docs/collab.md``, Method.
Both loops fill the same record: the compiled one (``engines.collab.loop_fast``) array by array,
the reference one (``engines.collab.loop_reference``) with ``RunTrace.record`` per interaction;
``engines.collab.simulate.summarise`` turns it into rates, bounds and accuracies.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from engines.collab.controller import ControllerState, InteractionErrors


@dataclass
class RunTrace:
    """Per-interaction record of one controller run (arrays of length T) and its final state."""

    err_harm: np.ndarray  # bool
    err_comp: np.ndarray  # bool
    fired_harm: np.ndarray  # bool: the protect rule fired on the truth in some round
    fired_comp: np.ndarray  # bool
    q_harm: np.ndarray  # thresholds used in interaction t
    q_comp: np.ndarray
    answer_first: np.ndarray  # int: round-1 answer (human alone)
    answer_final: np.ndarray  # int: answer after the last revision
    rounds: np.ndarray  # int: rounds played (sets shown)
    stabilise: np.ndarray  # int: round in which the final answer was first given (rounds+1: after the last set)
    set_size: np.ndarray  # int: sum over rounds of |C_{t,k}|
    covered: np.ndarray  # int: rounds with Y in C_{t,k}
    final_state: ControllerState

    @classmethod
    def empty(cls, T: int, state: ControllerState) -> RunTrace:
        b, f, i = (lambda: np.zeros(T, dtype=np.bool_)), (lambda: np.zeros(T)), (lambda: np.zeros(T, dtype=np.int64))
        return cls(b(), b(), b(), b(), f(), f(), i(), i(), i(), i(), i(), i(), state)

    def record(self, t: int, errors: InteractionErrors, sequence: list[int], label: int, q_harm: float,
               q_comp: float) -> None:
        """Store interaction t: its errors and sets, the thresholds it used, and its answers a_1..a_{n+1}
        (one per set shown, then the final one)."""
        changes = [i for i in range(1, len(sequence)) if sequence[i] != sequence[i - 1]]
        self.err_harm[t], self.err_comp[t] = errors.err_harm, errors.err_comp
        self.fired_harm[t], self.fired_comp[t] = errors.fired_harm, errors.fired_comp
        self.q_harm[t], self.q_comp[t] = q_harm, q_comp
        self.answer_first[t], self.answer_final[t] = sequence[0], sequence[-1]
        self.rounds[t] = len(sequence) - 1
        self.stabilise[t] = (changes[-1] if changes else 0) + 1
        self.set_size[t] = int(errors.sets.sum())
        self.covered[t] = int(errors.sets[:, label].sum())

    def arrays(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "final_state"}

