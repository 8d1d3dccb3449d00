"""Bot for the shape-counting study: a participant who follows the AI, one who ignores it, one screened out.

The bot reads the page it is on from ``self.view`` (the runners set it before each item is chosen)
and knows the truth of each image from its seed, so its answers are deterministic.
"""

from __future__ import annotations

from engines.collab import store
from engines.collab.study.cases import trial_case
from engines.collab.study.stored import participant_interactions
from engines.platform import runtime
from engines.platform.bots import Bot, BotFailure, Submission, SubmissionMustFail, expect


class PlayerBot(Bot):
    cases = ["follows_ai", "ignores_ai", "fails_comprehension"]
    expected_status = {"fails_comprehension": "screened_out"}

    def current_vars(self) -> dict:
        return self.view.template_vars

    def first_guess(self, index: int, truth: int) -> int:
        if self.case == "follows_ai" and index % 3 == 0:
            return min(truth + 1, 9)  # a miscount the AI's set may fix
        return truth

    def play(self):
        from studies.collab_shapes import (
            TASK_CHOICES,
            AttentionAfter,
            AttentionBefore,
            Comprehension,
            Consent,
            Instructions,
            Survey,
            Trial,
            rounds_choice,
        )

        yield SubmissionMustFail(Consent, {"agree": False}, error_fields=("agree",))
        yield Submission(Consent, {"agree": True})
        yield Submission(Instructions, {})
        wrong = {"task": "How many shapes are in the image", "rounds": "As many as I like"}
        if self.case == "fails_comprehension":
            yield SubmissionMustFail(Comprehension, wrong, error_fields=("task", "rounds"), check=True)
            yield Submission(Comprehension, wrong)
            return
        # The right number of rounds is the instance's (its constants may lower ROUNDS).
        rounds_now = self.current_vars()["rounds"]
        yield Submission(Comprehension, {"task": TASK_CHOICES[0], "rounds": rounds_choice(rounds_now)})
        yield Submission(AttentionBefore, {"answer": "Rarely"})
        first = self.current_vars()
        n, rounds = first["interactions"], first["rounds"]
        for index in range(n):
            tv = self.current_vars()
            expect(tv["interaction"], index + 1)
            mode = tv["mode"]
            truth = trial_case(tv["seed"], tv["difficulty"]).count
            answer = self.first_guess(index, truth)
            if index == 0:
                yield SubmissionMustFail(Trial, {"answer": 12, "confidence": 3}, error_fields=("answer",))
            if mode == "none":
                final_now = index % 2 == 0
                yield Submission(Trial, {"answer": answer, "confidence": 4 if final_now else 2, "final": final_now})
                if final_now:
                    continue
                yield Submission(Trial, {"answer": truth, "confidence": 4, "final": True})
                continue
            yield Submission(Trial, {"answer": answer, "confidence": 2 if answer != truth else 4})
            for rnd in range(2, rounds + 1):
                tv = self.current_vars()
                expect(tv["round"], rnd)
                shown = tv["ai_set"]
                if shown is None:
                    raise BotFailure(f"interaction {index + 1} round {rnd}: no AI set shown")
                if self.case == "follows_ai" and shown and answer not in shown:
                    answer = min(shown, key=lambda y: (abs(y - answer), y))
                last = rnd == rounds
                final = last or index % 4 != 1  # every fourth interaction goes to the last round
                if last and index == 1:
                    yield SubmissionMustFail(Trial, {"answer": answer, "confidence": 4, "final": False},
                                             error_fields=("final",))
                yield Submission(Trial, {"answer": answer, "confidence": 4, "final": final})
                if final:
                    break
        yield Submission(AttentionAfter, {"answer": "Rarely"})
        yield SubmissionMustFail(Survey, {"trust": 9, "workload": 3}, error_fields=("trust",))
        yield Submission(Survey, {"trust": 5, "workload": 3, "comments": "Clear."})

    def check_stored(self, responses):
        if self.final_status() != "completed":
            return
        view = runtime.current_view(self.participant_id)
        finals = [r for r in responses if "confidence" in r and r.get("final")]
        items = participant_interactions(self.participant_id)
        expect(len(finals), len(items))
        expect(len(items), ">", 0)
        expect(all(item.is_final for item in items), True)
        if view.condition == "no_ai":
            expect(all(r.ai_set is None for item in items for r in item.rounds), True)
            return
        mine = [u for u in store.history(f"{view.study_slug}:{view.condition}") if u.participant_id == self.participant_id]
        expect(len(mine), len(items))
        expect([u.interaction_key for u in mine], [f"{self.participant_id}:{i}" for i in range(len(items))])
        expect([u.seq for u in mine], [item.stream_seq for item in items])
        store.audit(f"{view.study_slug}:{view.condition}")
