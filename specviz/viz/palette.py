"""One meaning per colour on every page, in the CLI and in every chart.

Okabe-Ito colours (safe for the common colour-vision deficiencies), and never colour alone: every origin also has a
mark (a symbol in legends and chart labels) and an underline style in the text, so a grey-scale projector or a
colour-blind student still tells them apart.
"""

ORIGIN_COLORS = {
    "prompt": "#757575",  # grey: text the user gave
    "accepted": "#0072B2",  # Okabe-Ito blue: a draft token the target accepted
    "rejected": "#E69F00",  # Okabe-Ito orange: a draft token the target rejected (never committed)
    "correction": "#D55E00",  # Okabe-Ito vermillion: drawn from the residual after a rejection
    "bonus": "#009E73",  # Okabe-Ito bluish green: drawn from p_{K+1} after all K drafts passed
    "target": "#424242",  # dark grey: plain decoding, one target pass per token
}
ORIGIN_MARKS = {  # the second cue besides colour: a symbol in legends, chart labels and the caption line
    "prompt": "",
    "accepted": "✓",
    "rejected": "✗",
    "correction": "!",
    "bonus": "+",
    "target": "",
}
ORIGIN_UNDERLINES = {  # the second cue in the coloured text: the underline's style
    "accepted": "solid",
    "rejected": "dotted",
    "correction": "wavy",
    "bonus": "double",
}
ORIGIN_LABELS = {
    "prompt": "prompt",
    "accepted": "accepted draft",
    "rejected": "rejected draft",
    "correction": "correction (residual)",
    "bonus": "bonus (all K accepted)",
    "target": "target only (plain)",
}
Q_COLOR = "#CC79A7"  # Okabe-Ito reddish purple: q, the draft's distribution
P_COLOR = "#333333"  # near black: p, the target's distribution
