"""Bot for the HOI-Edit arena: votes on every pair, each of the four buttons in turn, and reads each reveal.

It reads the page it is on from ``self.view`` (the runners set it before each item is chosen): the
pair number from the vote page, and on the reveal page the two names, which the vote page must
not have shown.
"""

from __future__ import annotations

from engines.hoi import arena
from engines.platform.bots import Bot, BotFailure, Submission, SubmissionMustFail, expect


class PlayerBot(Bot):
    cases = ["votes_every_pair"]

    def play(self):
        from studies.hoi_arena import Battle, Consent, Instructions

        yield SubmissionMustFail(Consent, {"agree": False}, error_fields=("agree",))
        yield Submission(Consent, {"agree": True})
        yield Submission(Instructions, {})
        self.votes: list[tuple[int, str]] = []
        buttons = list(arena.CHOICES)
        while self.view.step is not None and self.view.step.step is Battle:
            page = self.view.template_vars
            number = page["pair"]
            if page["phase"] == "vote":
                if {"name_a", "name_b"} & set(page):
                    raise BotFailure(f"pair {number}: the vote page names the methods")
                if not self.votes:
                    yield SubmissionMustFail(Battle, {"pair": number}, error_fields=("choice",))
                    yield SubmissionMustFail(Battle, {"pair": number + 1, "choice": "Tie"}, error_fields=("pair",))
                choice = buttons[len(self.votes) % len(buttons)]
                self.votes.append((number, choice))
                yield Submission(Battle, {"pair": number, "choice": choice})
            else:
                expect(page["phase"], "reveal")
                expect(number, self.votes[-1][0])
                expect(bool(page["name_a"] and page["name_b"]), True)
                yield Submission(Battle, {"pair": number})

    def check_stored(self, responses):
        # Through a page the button pressed is the page's (AppTest presses the form's first button),
        # so what every runner can check is the order: each pair's vote, then its reveal.
        battles = [(r["pair"], r.get("choice") is not None) for r in responses if "pair" in r]
        expect(battles, [(number, vote) for number, _ in self.votes for vote in (True, False)])
