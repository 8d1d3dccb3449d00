"""The simulation loop compiled: T interactions over pre-drawn arrays in one function (``run_fast``).

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); ``docs/collab.md``, Method.
The same loop as ``engines.collab.loop_reference.run_parametric``, written over plain arrays so
numba can compile it (~3M interactions/s on one core; without numba the same function runs as
plain Python, ~45k/s). It knows the built-in rules only, by their ``rules.FAST_CODES``; custom
rules run on the reference path. The human's weights are multiplied and summed in the same order
as ``engines.collab.humans.ParametricHuman``, so both paths give bit-identical results (tested).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from engines.collab.ai_sources import AICases
from engines.collab.controller import ControllerState
from engines.collab.humans import ANCHOR_GAIN, HumanDraws, ParamTrack
from engines.collab.rules import Rule, fast_encoding
from engines.collab.trace import RunTrace
from engines.platform.progress import Progress

try:  # numba makes the fast path ~500x faster; without it the same function runs as plain Python
    from numba import njit

    COMPILED = True
except ImportError:  # pragma: no cover - exercised only where numba is absent
    COMPILED = False

    def njit(*args, **kwargs):
        return args[0] if args and callable(args[0]) else (lambda fn: fn)


@njit(cache=True)
def _rule_mask(code, param, hist, answers, confs, k, out):  # pragma: no cover - compiled
    # Mirrors the built-ins of engines.collab.rules (codes in rules.FAST_CODES).
    n_labels = out.shape[0]
    if code == 0:  # human_holds
        for j in range(n_labels):
            out[j] = hist[k, j]
    elif code == 1:  # human_lacks
        for j in range(n_labels):
            out[j] = not hist[k, j]
    elif code == 2:  # human_top_answer
        for j in range(n_labels):
            out[j] = j == answers[k]
    elif code == 3:  # held_for_rounds(r)
        r = int(param)
        for j in range(n_labels):
            held = k + 1 >= r
            if held:
                for i in range(k - r + 1, k + 1):
                    if not hist[i, j]:
                        held = False
                        break
            out[j] = held
    else:  # supply_when_low_confidence(threshold)
        low = confs[k] < param
        for j in range(n_labels):
            out[j] = low and not hist[k, j]


@njit(cache=True)
def _argmax_total(w, n_labels):  # pragma: no cover - compiled
    # First largest weight, its value and the sum, summed in label order like the reference path.
    best, best_w, total = 0, w[0], 0.0
    for j in range(n_labels):
        total += w[j]
        if w[j] > best_w:
            best_w = w[j]
            best = j
    return best, best_w, total


@njit(cache=True)
def _kernel(start, end, labels, scores, weights0, trust_f, attention, anchoring, belief_ratio, conf_bias,
            stop_conf, adversarial, u_attend, u_anchor, rounds, p_code, p_param, c_code, c_param,
            q_h, q_c, step_h, step_c, alpha_h, alpha_c, conditional, plain, ring_h, ring_c,
            o_err_h, o_err_c, o_fired_h, o_fired_c, o_q_h, o_q_c, o_first, o_final, o_rounds, o_stab,
            o_size, o_covered):  # pragma: no cover - compiled
    """Interactions start..end-1; returns the live thresholds after the last one. See ``loop_reference``.

    ``ring_h``/``ring_c`` (length P = overlap) keep the last P live thresholds, so interaction t uses
    the ones frozen when it started, P − 1 updates earlier (``frozen_index``); P = 1 is no overlap.
    ``plain``: show the rule-blind set {y : s(y) <= q^C} (the matched conformal baseline); errors
    are still counted against the protect/supply rules.
    """
    overlap = ring_h.shape[0]
    n_labels = scores.shape[1]
    hist = np.zeros((rounds, n_labels), dtype=np.bool_)
    answers = np.zeros(rounds, dtype=np.int64)
    confs = np.zeros(rounds)
    protect = np.zeros(n_labels, dtype=np.bool_)
    supply = np.zeros(n_labels, dtype=np.bool_)
    cset = np.zeros(n_labels, dtype=np.bool_)
    w = np.zeros(n_labels)
    for t in range(start, end):
        y = labels[t]
        ring_h[t % overlap] = q_h
        ring_c[t % overlap] = q_c
        f = max(t - overlap + 1, 0)
        qf_h = ring_h[f % overlap]  # frozen when interaction t started
        qf_c = ring_c[f % overlap]
        o_q_h[t] = qf_h
        o_q_c[t] = qf_c
        adv = adversarial[t]
        harm_possible = scores[t, y] > qf_h
        comp_possible = scores[t, y] > qf_c
        if not adv:
            for j in range(n_labels):
                w[j] = weights0[t, j]
        e_h = False
        e_c = False
        f_h = False
        f_c = False
        size_sum = 0
        covered = 0
        n_rounds = 0
        last_change = 0
        for k in range(rounds):
            # The human's answer, set and confidence in round k.
            if adv:
                if harm_possible and comp_possible:
                    hold = k < rounds - 1 or rounds == 1
                elif comp_possible:
                    hold = False
                else:
                    hold = True
                ans = y if hold else (y + 1) % n_labels
                for j in range(n_labels):
                    hist[k, j] = j == ans
                conf = 0.0
                wmax = 0.0
            else:
                ans, wmax, total = _argmax_total(w, n_labels)
                level = belief_ratio[t] * wmax
                for j in range(n_labels):
                    hist[k, j] = w[j] >= level
                conf = min(1.0, max(0.0, wmax / total + conf_bias[t]))
            answers[k] = ans
            confs[k] = conf
            if k == 0:
                o_first[t] = ans
            elif ans != answers[k - 1]:
                last_change = k
            # Rules, the two-threshold set, activated omissions.
            _rule_mask(p_code, p_param, hist, answers, confs, k, protect)
            _rule_mask(c_code, c_param, hist, answers, confs, k, supply)
            size = 0
            best = -1
            best_s = np.inf
            for j in range(n_labels):
                s = scores[t, j]
                if plain:
                    inside = s <= qf_c
                else:
                    inside = (protect[j] and s <= qf_h) or ((not protect[j] or supply[j]) and s <= qf_c)
                cset[j] = inside
                if inside:
                    size += 1
                    if s < best_s:
                        best_s = s
                        best = j
            size_sum += size
            if cset[y]:
                covered += 1
            else:
                if protect[y]:
                    e_h = True
                if supply[y]:
                    e_c = True
            if protect[y]:
                f_h = True
            if supply[y]:
                f_c = True
            n_rounds = k + 1
            if adv:
                continue
            # The human reads the set and revises.
            if u_attend[t, k] < attention[t] and size > 0:
                if u_anchor[t, k] < anchoring[t]:
                    w[best] = wmax * 2.0  # ANCHOR_GAIN
                else:
                    for j in range(n_labels):
                        if cset[j]:
                            w[j] *= trust_f[t]
            new_ans, new_max, total = _argmax_total(w, n_labels)
            if new_ans == ans and new_max / total >= stop_conf[t]:
                break
        if adv:
            final = answers[n_rounds - 1]
        else:
            final = 0
            wmax = w[0]
            for j in range(n_labels):
                if w[j] > wmax:
                    wmax = w[j]
                    final = j
        if final != answers[n_rounds - 1]:
            last_change = n_rounds
        o_final[t] = final
        o_rounds[t] = n_rounds
        o_stab[t] = last_change + 1
        o_size[t] = size_sum
        o_covered[t] = covered
        o_err_h[t] = e_h
        o_err_c[t] = e_c
        o_fired_h[t] = f_h
        o_fired_c[t] = f_c
        # Quantile tracking; same expression as engines.collab.controller.step.
        if f_h or not conditional:
            q_h = q_h + step_h * ((1.0 if e_h else 0.0) - alpha_h)
        if f_c or not conditional:
            q_c = q_c + step_c * ((1.0 if e_c else 0.0) - alpha_c)
    return q_h, q_c


def run_fast(cases: AICases, draws: HumanDraws, params: ParamTrack, protect: Rule, supply: Rule,
             state: ControllerState, rounds: int, chunks: int = 1, progress: Progress | None = None,
             overlap: int = 1, plain: bool = False) -> RunTrace:
    """The compiled loop over pre-drawn arrays (built-in rules only); identical to ``loop_reference.run_parametric``.
    ``progress(done, T)`` after each of the ``chunks`` pieces of the T interactions."""
    assert ANCHOR_GAIN == 2.0  # hard-coded in _kernel
    p_code, p_param = fast_encoding(protect)
    c_code, c_param = fast_encoding(supply)
    T = len(cases.labels)
    out = RunTrace.empty(T, state)
    labels = np.ascontiguousarray(cases.labels, dtype=np.int64)
    scores = np.ascontiguousarray(cases.scores)
    cfg = state.config
    q_h, q_c = state.q_harm, state.q_comp
    ring_h, ring_c = np.zeros(overlap), np.zeros(overlap)  # kept across chunks
    bounds = np.linspace(0, T, max(1, min(chunks, T)) + 1).astype(np.int64)
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        q_h, q_c = _kernel(
            int(start), int(end), labels, scores, draws.weights, draws.trust_factor, params.attention,
            params.anchoring, params.belief_ratio, params.confidence_bias, params.stop_confidence,
            params.adversarial, draws.u_attend, draws.u_anchor, rounds, p_code, p_param, c_code, c_param,
            q_h, q_c, state.step_harm, state.step_comp, cfg.alpha_harm, cfg.alpha_comp, cfg.conditional, plain,
            ring_h, ring_c, out.err_harm, out.err_comp, out.fired_harm, out.fired_comp, out.q_harm, out.q_comp,
            out.answer_first, out.answer_final, out.rounds, out.stabilise, out.set_size, out.covered)
        if progress is not None:
            progress(int(end), T)
    out.final_state = dataclasses.replace(
        state, q_harm=float(q_h), q_comp=float(q_c), t=state.t + T,
        n_err_harm=state.n_err_harm + int(out.err_harm.sum()), n_err_comp=state.n_err_comp + int(out.err_comp.sum()),
        n_fired_harm=state.n_fired_harm + int(out.fired_harm.sum()),
        n_fired_comp=state.n_fired_comp + int(out.fired_comp.sum()))
    return out

