"""Bot for the demo survey: one case per path through the study."""

from __future__ import annotations

from engines.platform.bots import Bot, Submission, SubmissionMustFail, expect


class PlayerBot(Bot):
    cases = ["diligent", "retries_comprehension", "fails_comprehension", "inattentive"]
    expected_status = {"fails_comprehension": "screened_out", "inattentive": "screened_out"}

    def play(self):
        from studies.demo_survey import Attention, Comprehension, Consent, Instructions, Rating, Survey

        yield SubmissionMustFail(Consent, {"agree": False}, error_fields=("agree",))
        yield Submission(Consent, {"agree": True})
        yield Submission(Instructions, {})
        wrong = {"task": "Count words"}
        if self.case == "fails_comprehension":
            yield SubmissionMustFail(Comprehension, wrong, error_fields=("task",), check=True)
            yield Submission(Comprehension, wrong)  # second wrong answer: screened out
            return
        if self.case == "retries_comprehension":
            yield SubmissionMustFail(Comprehension, wrong, error_fields=("task",), check=True)
        yield SubmissionMustFail(Comprehension, {"task": "Not an option"}, error_fields=("task",))
        yield Submission(Comprehension, {"task": "Rate how helpful each suggestion is"})
        self.ratings = self.view.template_vars["total"]  # the instance's number of ITEMS
        for round_number in range(1, self.ratings + 1):
            if round_number == 1:
                yield SubmissionMustFail(Rating, {"helpfulness": 9}, error_fields=("helpfulness",))
            yield Submission(Rating, {"helpfulness": 2 + round_number, "would_accept": round_number % 2 == 1})
        if self.case == "inattentive":
            yield Submission(Attention, {"answer": "Strongly agree"})
            return
        yield Submission(Attention, {"answer": "Disagree"})
        yield SubmissionMustFail(Survey, {"age": 12, "ai_use": "Weekly"}, error_fields=("age",))
        yield Submission(Survey, {"age": 34, "ai_use": "Weekly", "comments": "Clear and quick."})

    def check_stored(self, responses):
        if self.final_status() == "completed":
            ratings = [r["helpfulness"] for r in responses if "helpfulness" in r]
            expect(ratings, [2 + n for n in range(1, self.ratings + 1)])
