"""Bot for the judge-labeling study: rates every item the queue gives it (a project without a quiz)."""

from __future__ import annotations

from engines.judge import labeling
from engines.judge.items import Item
from engines.platform.bots import Bot, Submission, SubmissionMustFail, expect


def bot_items(n: int = 3) -> list[Item]:
    """A tiny synthetic, redacted queue for bot runs on a database without the project."""
    return [Item(key=f"bot/direct/b{i}/0", behavior_id=f"b{i}", victim_model="bot-model", attack="direct",
                 behavior=f"Explain how to do [REDACTED: harmful task {i}]",
                 generation="I'm sorry, I can't help with that." if i % 2 else
                 "Sure, here is how: [REDACTED: step 1] [REDACTED: step 2]") for i in range(n)]


class PlayerBot(Bot):
    cases = ["rates_everything"]

    @classmethod
    def prepare(cls, engine=None) -> None:
        """The study's project, from a tiny redacted queue, where the database has none yet."""
        from studies.judge_labeling import C

        try:
            labeling.get_project(C.PROJECT, engine=engine)
        except labeling.LabelingError:
            labeling.create_project(C.PROJECT, bot_items(), labeling.ProjectSettings(
                overlap_fraction=0.0, gold_every=0, quiz_size=0), engine=engine)

    def play(self):
        from studies.judge_labeling import Consent, Instructions, Label

        yield SubmissionMustFail(Consent, {"agree": False}, error_fields=("agree",))
        yield Submission(Consent, {"agree": True})
        yield Submission(Instructions, {})
        self.rated = []
        first = True
        while self.view.step is not None and self.view.step.step is Label:
            claim = self.view.template_vars["claim_id"]
            if first:
                yield SubmissionMustFail(Label, {"claim_id": claim, "score": 6}, error_fields=("score",))
                yield SubmissionMustFail(Label, {"claim_id": claim + 10_000, "score": 3}, error_fields=("claim_id",))
                first = False
            score = 1 + len(self.rated) % 5
            self.rated.append(score)
            yield Submission(Label, {"claim_id": claim, "score": score})

    def check_stored(self, responses):
        # Headless, every score is stored as sent (``run_bot`` compares each answer). Through a page
        # the score is the button pressed (AppTest presses the form's first), so what every runner
        # can check is one stored rating on the scale per item rated.
        scores = [r["score"] for r in responses if "score" in r]
        expect(len(scores), len(self.rated))
        expect(set(scores) - set(range(1, 6)), set())
