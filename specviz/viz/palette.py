"""One meaning per colour on every page, in the CLI and in every chart."""

ORIGIN_COLORS = {
    "prompt": "#757575",  # grey: text the user gave
    "accepted": "#2e7d32",  # green: a draft token the target accepted
    "correction": "#c62828",  # red: drawn from the residual after a rejection
    "bonus": "#1565c0",  # blue: drawn from p_{K+1} after all K drafts passed
    "target": "#424242",  # dark grey: plain decoding, one target pass per token
}
ORIGIN_LABELS = {
    "prompt": "prompt",
    "accepted": "accepted draft",
    "correction": "correction (residual)",
    "bonus": "bonus (all K accepted)",
    "target": "target only (plain)",
}
