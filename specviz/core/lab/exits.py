"""Early exit's switches for the exactness lab: which exit the drafts come from and which q the verifier is told.

The real exit (engine/early_exit.py) reads layer E's residual through the target's final norm into its LM head. The
lab leaves the norm out for the drafts, for the verifier's q, or for both; `engine/lab.py exit_variants_at` computes
each one's first-token distribution exactly, and `two_token_samples` samples the real engine with it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExitVariant:
    """How the exit turns layer E's residual into the draft: with or without the target's final norm, for the tokens
    drafted and for the q the verifier is told (the exactness lab's switches; runs use EXIT_EXACT)."""

    key: str
    label: str
    explanation: str
    norm_drafts: bool = True  # the drafts are sampled from LM head(final norm(h_E)), else from LM head(h_E)
    norm_q: bool = True  # the q in min(1, p/q) and the residual is the normed exit's, else the raw one's

    @property
    def told_what_it_drew(self) -> bool:
        """The verifier is told the q the drafts were drawn from: exact, whatever that q is."""
        return self.norm_drafts == self.norm_q


EXIT_EXACT = ExitVariant(
    "exit_exact",
    "early exit (final norm)",
    "the drafts and q both from LM head(final norm(h_E)), as LayerSkip and transformers' assistant_early_exit exit",
)
EXIT_NO_NORM = ExitVariant(
    "exit_no_norm",
    "early exit without the final norm",
    "the exit reads the raw residual h_E into the LM head, for the drafts and for q alike: another draft (the head "
    "was trained on normed states; on the bundled target it is accepted less often at most positions, more often at "
    "a few), but the verifier is told the q each draft came from, so accept/reject keeps the output exact: only "
    "the acceptance rate moves",
    norm_drafts=False,
    norm_q=False,
)
EXIT_MISMATCHED = ExitVariant(
    "exit_mismatched_q",
    "drafted without the final norm, judged with the normed q",
    "the drafts come from the raw residual, but the ratio and the residual use the normed exit's q: a q the drafts "
    "were not drawn from (a q taken after a different norm than the drafts), so the output is no longer p's",
    norm_drafts=False,
    norm_q=True,
)
EXIT_VARIANTS = (EXIT_EXACT, EXIT_NO_NORM, EXIT_MISMATCHED)
EXIT_VARIANTS_BY_KEY = {v.key: v for v in EXIT_VARIANTS}
