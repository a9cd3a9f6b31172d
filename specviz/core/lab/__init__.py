"""The exactness lab: small models where speculative sampling's output distribution is known exactly.

- two_token: where each token's final probability comes from (accepted drafts + residual corrections).
- shop: the four-event shop model (view, click, cart, buy), a first-order Markov chain with a start row
  (core/toy.py's MarkovModel), and its editable tables.
- variants: bug switches, real variants of the sampler that shipped in real code, and their exact distributions.
- monte_carlo: plain and speculative sampling of the shop model, vectorised over runs, through the real `verify`.
- experiments: plain vs speculative, and every variant against the target, exactly and by a χ² test (core/chisq.py).
- trees: a draft tree per round, the real verify_tree on sampled trees next to the exact enumeration.
- exits: early exit's switches on the real target (with or without the final norm, for the drafts and for q).

Everything here is pure: numbers in, numbers out, randomness from an explicit torch.Generator. This package is the
lab's one namespace (`from specviz.core import lab`): the page, the charts and the tests read every name from here.
"""

from specviz.core.lab.exits import EXIT_EXACT, EXIT_MISMATCHED, EXIT_NO_NORM, EXIT_VARIANTS, ExitVariant
from specviz.core.lab.experiments import (
    DETECTED_VERDICT,
    EXACT_VERDICT,
    UNSEEN_VERDICT,
    BugCheck,
    ShopExperiment,
    bug_checks,
    pass_fail,
    shop_experiment,
    verdict,
)
from specviz.core.lab.monte_carlo import (
    RunStats,
    all_sequences,
    as_vector,
    sample_plain,
    sample_speculative,
    sequence_counts,
    sequence_labels,
)
from specviz.core.lab.shop import (
    EVENTS,
    POOR_DRAFT,
    ROWS,
    SHOP_DRAFT,
    SHOP_TARGET,
    START,
    chain_alpha,
    chain_from_rows,
    shop_models,
)
from specviz.core.lab.trees import (
    TREE_SHAPES,
    TREE_VARIANTS,
    TREE_VARIANTS_BY_KEY,
    TreeCheck,
    TreeVariant,
    sample_tree,
    tree_checks,
    tree_round,
    tree_variant,
    tree_variant_distribution,
)
from specviz.core.lab.two_token import TwoTokenFlow, two_token_flow
from specviz.core.lab.variants import (
    CLASSIC,
    EXACT_VARIANT,
    TYPICAL,
    VARIANTS,
    VARIANTS_BY_KEY,
    Variant,
    first_token_distribution,
    get_variant,
    greedy_proposal,
    top_k_proposal,
    variant_distribution,
)
from specviz.core.toy import target_distribution  # the target's exact distribution, next to the variants'
from specviz.core.verify import TOP_B  # the tree sampling whose soft-q switch the page offers

__all__ = [
    "BugCheck",
    "CLASSIC",
    "DETECTED_VERDICT",
    "EVENTS",
    "EXACT_VARIANT",
    "EXACT_VERDICT",
    "EXIT_EXACT",
    "EXIT_MISMATCHED",
    "EXIT_NO_NORM",
    "EXIT_VARIANTS",
    "ExitVariant",
    "POOR_DRAFT",
    "ROWS",
    "RunStats",
    "SHOP_DRAFT",
    "SHOP_TARGET",
    "START",
    "ShopExperiment",
    "TOP_B",
    "TREE_SHAPES",
    "TREE_VARIANTS",
    "TREE_VARIANTS_BY_KEY",
    "TreeCheck",
    "TreeVariant",
    "TwoTokenFlow",
    "TYPICAL",
    "UNSEEN_VERDICT",
    "VARIANTS",
    "VARIANTS_BY_KEY",
    "Variant",
    "all_sequences",
    "as_vector",
    "bug_checks",
    "chain_alpha",
    "chain_from_rows",
    "first_token_distribution",
    "get_variant",
    "greedy_proposal",
    "pass_fail",
    "sample_plain",
    "sample_speculative",
    "sample_tree",
    "sequence_counts",
    "sequence_labels",
    "shop_experiment",
    "shop_models",
    "target_distribution",
    "top_k_proposal",
    "tree_checks",
    "tree_round",
    "tree_variant",
    "tree_variant_distribution",
    "two_token_flow",
    "variant_distribution",
    "verdict",
]
