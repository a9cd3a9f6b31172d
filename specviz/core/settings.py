"""The settings of one run, validated at construction so that nothing downstream meets an impossible value."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from specviz import methods
from specviz.core import schedule, verify
from specviz.core.dyntree import DynamicTree, parse_dynamic
from specviz.core.quantize import QuantOptions
from specviz.core.sampling import SamplingSettings
from specviz.core.suffix_tree import SuffixOptions
from specviz.errors import SettingsError

MAX_K = 16
MAX_BRANCHING = 16  # children of one node
MAX_TREE_NODES = 256  # nodes of one draft tree (one target pass reads them all)
DEFAULT_EXIT_LAYER = 4  # early exit's E: 4 of the bundled target's 10 layers
FORWARDS = FORWARD_AUTO, FORWARD_LEAN, FORWARD_HF = ("auto", "lean", "hf")
MAX_EXIT_LAYER = 1000  # beyond any model here; the run checks E against its model's own L


@dataclass(frozen=True)
class RunSettings:
    """Who proposes (method), how many (k), how to sample, how long, and the seed that fixes every random draw."""

    method: str = methods.DRAFT  # a method the engine runs (specviz.methods.ENGINE_METHODS): a proposer or plain
    k: int = 4
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    max_new_tokens: int = 64
    seed: int = 0
    ngram_min: int = 1  # n-gram lookup matches the last n tokens, n from ngram_max down to ngram_min
    ngram_max: int = 3
    stop_at_eos: bool = True
    tree: tuple[int, ...] = ()  # the tree method: children per depth, e.g. (3, 2, 1, 1); empty for chain methods
    #                              (plain ignores one: it is the baseline of a tree run's measurement)
    draft_vocab: int = (
        0  # the draft proposes only from this many most frequent tokens (engine/loading/vocab.py); 0 = all
    )
    #                       (methods without a draft model ignore it, as plain ignores a tree shape)
    suffix: SuffixOptions = field(default_factory=SuffixOptions)  # the suffix method's options (others ignore them)
    k_schedule: str = schedule.CONSTANT  # how K varies per round (core/schedule.py): constant, heuristic, confidence
    confidence_threshold: float = schedule.DEFAULT_THRESHOLD  # the confidence schedule's stop (its start if fitted)
    fit_threshold: bool = False  # the confidence schedule refits its threshold after every round
    exit_layer: int = DEFAULT_EXIT_LAYER  # early exit: the draft is the target's first E layers (1..L-1, checked
    #                                       against the model's L when the run starts); other methods ignore it
    forward: str = FORWARD_AUTO  # whose forward pass runs the models (engine/forward/lean.py): auto (lean where the
    #                              architecture is supported), lean, or hf (Hugging Face's, the reference)
    dynamic: DynamicTree | None = None  # a dynamic (EAGLE-2) tree instead of a static shape (core/dyntree.py): the
    #                                     tree method and the EAGLE-1 / EAGLE-3 heads grow one per round
    quant: QuantOptions = field(default_factory=QuantOptions)  # the quantized self-draft's bits, group size and
    #                                                           head precision (core/quantize.py); others ignore it
    verifier: str = verify.TOKEN  # how a chain's drafts are judged (core/verify.py): token by token, or as a block

    def __post_init__(self) -> None:
        if self.method not in methods.ENGINE_METHODS:
            raise SettingsError(f"method must be one of {', '.join(methods.ENGINE_METHODS)}; got {self.method!r}.")
        if isinstance(self.dynamic, dict):  # JSON gives a dict
            known = {"budget", "depth", "topk"}
            if set(self.dynamic) - known:
                raise SettingsError(f"A dynamic tree has budget, depth and topk; got {sorted(self.dynamic)}.")
            object.__setattr__(self, "dynamic", DynamicTree(**self.dynamic))
        check_dynamic(self)
        _require_int("K (draft length)", self.k, 1, MAX_K)
        _require_int("max new tokens", self.max_new_tokens, 1, 100_000)
        _require_int("seed", self.seed, 0, 2**63 - 1)
        _require_int("n-gram minimum n", self.ngram_min, 1, 32)
        _require_int("n-gram maximum n", self.ngram_max, self.ngram_min, 32)
        object.__setattr__(self, "tree", tuple(self.tree))  # JSON gives a list
        methods.get(self.method).check(self)
        check_tree_shape(self.tree)
        _require_int("draft vocabulary (0 = all tokens)", self.draft_vocab, 0, 10_000_000)
        if isinstance(self.suffix, dict):  # JSON gives a dict
            object.__setattr__(self, "suffix", SuffixOptions(**self.suffix))
        if isinstance(self.quant, dict):  # JSON gives a dict
            object.__setattr__(self, "quant", QuantOptions.from_dict(self.quant))
        if not isinstance(self.quant, QuantOptions):
            raise SettingsError(f"quant holds the quantized draft's bits, group and head_bits; got {self.quant!r}.")
        check_schedule(self)
        _require_int("exit layer E (the target's first E layers draft)", self.exit_layer, 1, MAX_EXIT_LAYER)
        if self.forward not in FORWARDS:
            raise SettingsError(f"forward must be one of {', '.join(FORWARDS)}; got {self.forward!r}.")
        check_verifier(self)

    @property
    def is_tree(self) -> bool:
        """Whether this run drafts a tree: a shape, and a method that takes one (plain ignores a shape)."""
        return bool(self.tree or self.dynamic) and methods.get(self.method).takes_tree

    @property
    def tree_label(self) -> str:
        """The tree as typed: '3,2,1,1', or 'dynamic:16,5,4'; empty for a chain."""
        if self.dynamic is not None:
            return self.dynamic.text
        return ",".join(map(str, self.tree))

    @property
    def draft_length(self) -> int:
        """Tokens proposed per round: K, or 0 for plain decoding; for a tree, its depth (the longest acceptable run)."""
        if self.is_tree:
            return self.dynamic.depth if self.dynamic else len(self.tree)
        return self.k if methods.get(self.method).speculative else 0

    @property
    def draft_slots(self) -> int:
        """Draft tokens one round can hold: K for a chain, every node for a tree, 0 for plain decoding."""
        if self.is_tree:
            return self.dynamic.budget if self.dynamic else verify.tree_size(self.tree)
        if self.adaptive == schedule.HEURISTIC:
            return MAX_K  # the heuristic may grow K up to the ceiling
        return self.draft_length

    @property
    def adaptive(self) -> str:
        """The draft-length schedule this run really follows: constant for plain decoding (which drafts nothing and
        ignores one, as it ignores a tree shape: it is the baseline of an adaptive run's measurement)."""
        return self.k_schedule if methods.get(self.method).speculative else schedule.CONSTANT

    def to_dict(self) -> dict:
        body = asdict(self)
        if not self.draft_vocab:
            del body["draft_vocab"]  # runs with the full vocabulary keep the settings JSON they always had
        if self.suffix == SuffixOptions():
            del body["suffix"]  # runs with the default suffix options keep the settings JSON they always had
        if not self.tree:
            del body["tree"]  # chain runs keep the settings JSON they always had
        else:
            body["tree"] = list(self.tree)
        if self.dynamic is None:
            del body["dynamic"]  # static trees and chains keep the settings JSON they always had
        if not methods.get(self.method).exits_early:
            del body["exit_layer"]  # runs of other methods keep the settings JSON they always had
        if not methods.get(self.method).quantizes:
            del body["quant"]  # likewise
        if self.verifier == verify.TOKEN:
            del body["verifier"]  # token-by-token runs keep the settings JSON they always had
        if self.forward == FORWARD_AUTO:
            del body["forward"]  # runs with the default forward too (the trace's meta names the forwards that ran)
        if self.k_schedule == schedule.CONSTANT:  # constant-K runs too
            for key in ("k_schedule", "confidence_threshold", "fit_threshold"):
                del body[key]
        elif self.k_schedule != schedule.CONFIDENCE:
            del body["confidence_threshold"], body["fit_threshold"]
        return body

    @classmethod
    def from_dict(cls, data: dict) -> RunSettings:
        data = dict(data)
        sampling = SamplingSettings(**data.pop("sampling", {}))
        return cls(sampling=sampling, **data)


def _require_int(name: str, value: object, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise SettingsError(f"{name} must be a whole number from {low} to {high}; got {value!r}.")


def check_tree_shape(tree: tuple[int, ...]) -> None:
    """A tree shape (empty for chains) must be a small tree with at least one child per depth."""
    if not tree:
        return
    if len(tree) > MAX_K:
        raise SettingsError(f"The tree is {len(tree)} levels deep; at most {MAX_K} levels (the longest K).")
    for depth, children in enumerate(tree, start=1):
        if not isinstance(children, int) or isinstance(children, bool) or not 1 <= children <= MAX_BRANCHING:
            raise SettingsError(
                f"Each depth of the tree needs 1 to {MAX_BRANCHING} children per node; depth {depth} has {children!r}."
            )
    nodes = verify.tree_size(tree)
    if nodes > MAX_TREE_NODES:
        raise SettingsError(
            f"The tree {','.join(map(str, tree))} has {nodes} nodes; at most {MAX_TREE_NODES} fit in one verify pass. "
            "Use fewer children per depth or fewer levels."
        )


def check_verifier(settings: RunSettings) -> None:
    """A known verifier; block verification judges a chain (a tree's drafts are judged along its walk)."""
    if settings.verifier not in verify.VERIFIERS:
        raise SettingsError(f"The verifier must be one of {', '.join(verify.VERIFIERS)}; got {settings.verifier!r}.")
    if settings.verifier == verify.BLOCK and settings.is_tree:
        raise SettingsError(
            f"Block verification judges a chain of drafts as one block; a tree ({settings.tree_label}) is judged "
            "along its walk. Drop the tree shape, or use the token-by-token verifier."
        )


def check_dynamic(settings: RunSettings) -> None:
    """A dynamic tree in range, not together with a static shape, and for a method that can grow one."""
    d = settings.dynamic
    if d is None:
        return
    if not isinstance(d, DynamicTree):
        raise SettingsError(f"dynamic must be a dynamic tree (budget, depth, top-k); got {d!r}.")
    d.check(MAX_TREE_NODES, MAX_K, MAX_BRANCHING)
    if settings.tree:
        raise SettingsError(
            f"Give a static tree shape or a dynamic tree, not both (got {','.join(map(str, settings.tree))} and "
            f"{d.text})."
        )
    refusal = methods.get(settings.method).refuses_dynamic
    if refusal:
        raise SettingsError(refusal)


def for_method(settings: RunSettings, method: str, **changes) -> RunSettings:
    """These settings for another method (a race or workload lane): a K schedule it cannot take (lookup, a tree) is
    dropped for the constant one, so one sidebar's heuristic applies to the lanes where K means a chain of drafts."""
    if not methods.get(method).adaptive:
        changes.setdefault("k_schedule", schedule.CONSTANT)
    return replace(settings, method=method, **changes)


def check_schedule(settings: RunSettings) -> None:
    """A known schedule, a threshold that is a probability, and a method whose K means a chain of drafts."""
    name = settings.k_schedule
    if name not in schedule.SCHEDULES:
        raise SettingsError(f"The K schedule must be one of {', '.join(schedule.SCHEDULES)}; got {name!r}.")
    t = settings.confidence_threshold
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 1:
        raise SettingsError(
            f"The confidence threshold is a probability from 0 to 1 (e.g. 0.4) or {schedule.FITTED!r}; got {t!r}."
        )
    if not isinstance(settings.fit_threshold, bool):
        raise SettingsError(f"fit_threshold must be true or false; got {settings.fit_threshold!r}.")
    method = methods.get(settings.method)
    if name != schedule.CONSTANT and settings.is_tree and method.branches:  # a head's tree (the tree method: below)
        raise SettingsError(
            f"The {name} K schedule changes how many tokens a chain drafter drafts per round; a tree of a fixed shape "
            f"({settings.tree_label}) sets its depth itself. Drop the tree shape, or use the constant "
            "schedule."
        )
    if name != schedule.CONSTANT and method.speculative and not method.adaptive:
        able = ", ".join(m.name for m in methods.REGISTRY.values() if m.adaptive)
        raise SettingsError(
            f"The {name} K schedule changes how many tokens a chain drafter drafts per round; {method.label} "
            f"({method.name}) {method.refuses_schedule or 'does not draft such a chain'}. Use it with {able}, "
            "or use the constant schedule."
        )


def parse_tree(text: str) -> tuple[int, ...]:
    """'2,2,1,1' -> (2, 2, 1, 1): a tree shape as typed (the sidebar, a URL); RunSettings then checks its size."""
    try:
        shape = tuple(int(part) for part in str(text).replace(" ", "").split(",") if part)
    except ValueError:
        raise SettingsError(
            f"A tree shape is children per depth as whole numbers separated by commas, e.g. 2,2,1,1; got {text!r}."
        ) from None
    return shape


TreeSpec = tuple[int, ...] | DynamicTree  # a static shape or a dynamic tree, as the CLI and the bench take them


def parse_tree_spec(text: str) -> TreeSpec:
    """'3,2,1,1' -> (3, 2, 1, 1); 'dynamic:16,5,4' -> DynamicTree(16, 5, 4): a tree as typed anywhere."""
    dynamic = parse_dynamic(text)
    return parse_tree(text) if dynamic is None else dynamic


def tree_fields(spec: TreeSpec) -> dict:
    """RunSettings fields for a tree spec (its K is its depth, capped at MAX_K)."""
    if isinstance(spec, DynamicTree):
        return {"tree": (), "dynamic": spec, "k": min(spec.depth, MAX_K)}
    return {"tree": tuple(spec), "dynamic": None, "k": min(max(len(spec), 1), MAX_K)}


def spec_label(spec: TreeSpec) -> str:
    """How a tree spec is written: '3,2,1,1' or 'dynamic:16,5,4'."""
    return spec.text if isinstance(spec, DynamicTree) else ",".join(map(str, spec))


def check_prompt(prompt: object) -> str:
    """The prompt must be some non-blank text."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise SettingsError("The prompt is empty: type some text for the model to continue.")
    return prompt


# torch's threads on a CPU (engine/forward/threads.py applies them)
THREADS_ENV = "SPECVIZ_THREADS"  # the app's setting (the CLI's --threads): auto or a number
AUTO_THREADS = "auto"
NARROW_WIDTH = 1024  # hidden sizes up to this run on one thread under auto


def parse_threads(text: str | int | None) -> str | int:
    """auto or a whole number of threads from 1 up, from the CLI or the environment; anything else is refused."""
    if text is None or str(text).strip().lower() in ("", AUTO_THREADS):
        return AUTO_THREADS
    try:
        count = int(str(text).strip())
    except ValueError:
        count = 0
    if count < 1:
        raise SettingsError(f"threads must be auto or a whole number from 1 up; got {text!r}.")
    return count
