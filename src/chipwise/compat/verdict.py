"""From hits to findings to one verdict per platform. Pure functions; the rules:

1. Each hit is looked up in the knowledge: a distribution or conda name, an import (longest
   dotted prefix), or a signal id. Unknown distributions are listed as unclassified; unknown
   imports are the project's own or the standard library and are dropped.
2. A finding's status on a platform gives its verdict there (``STATUS_VERDICT``: yes /
   via-backend / n/a -> runs; partial, fork, plugin, experimental, preview, unknown ->
   runs-with-changes; no, planned -> does-not-run).
3. A finding does not count on a platform when it is optional (an extra, a dev group, a
   guarded import, a non-Linux marker), when it is a TPU route (``tpu_path``) seen from a GPU,
   when its rule never lowers verdicts (``affects_verdict = false``), or when the project
   already contains a rule named in its ``satisfied_by`` (torch + torch-xla on TPU).
4. A platform's verdict is the worst verdict among the findings that count there, ``runs``
   when none does. Its issues group those findings by rule; its effort is their largest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from chipwise.compat.hits import Hit
from chipwise.compat.knowledge import (
    EFFORT_ORDER,
    PLATFORM_NAMES,
    PLATFORMS,
    STATUS_VERDICT,
    VERDICT_ORDER,
    Effort,
    Knowledge,
    Platform,
    Rule,
    Verdict,
)
from chipwise.compat.result import Finding, Impact, Issue, PlatformVerdict

# Declared names that say nothing about accelerators (conda's interpreter and installer).
_IGNORED_NAMES = frozenset({"python", "pip", "setuptools", "wheel"})


def _subject(hit: Hit, rule: Rule) -> str:
    if hit.kind == "signal":
        return hit.detail or rule.title
    return hit.name


def _rules_for(hit: Hit, knowledge: Knowledge) -> tuple[Rule, ...]:
    if hit.kind == "dist":
        return knowledge.for_dist(hit.name)
    if hit.kind == "conda":
        return knowledge.for_conda(hit.name)
    if hit.kind == "import":
        return knowledge.for_import(hit.name)
    return (knowledge.rule(hit.name),)


def _finding(hit: Hit, rule: Rule, present: frozenset[str]) -> Finding:
    impacts = []
    for p in PLATFORMS:
        status = rule.support[p]
        satisfied = bool(set(rule.satisfied_by.get(p, ())) & present)
        counts = (
            not hit.optional
            and rule.affects_verdict
            and not (rule.tpu_path and p != "google-tpu")
            and not satisfied
        )
        impacts.append(
            Impact(
                platform=p,
                status=status,
                verdict=STATUS_VERDICT[status],
                counts=counts,
                porting=rule.porting_for(p),
                effort=rule.effort_for(p),
            )
        )
    return Finding(
        kind=rule.kind,
        key=rule.id,
        title=rule.title,
        subject=_subject(hit, rule),
        via=hit.kind,
        file=hit.file,
        line=hit.line,
        evidence=hit.evidence,
        why=rule.why,
        optional=hit.optional,
        condition=hit.condition,
        tpu_path=rule.tpu_path,
        impacts=tuple(impacts),
    )


def classify(
    hits: Iterable[Hit], knowledge: Knowledge
) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    """Findings (one per rule per file:line, required beats optional) and unclassified names."""
    matched: list[tuple[Hit, Rule]] = []
    unclassified: set[str] = set()
    for hit in hits:
        rules = _rules_for(hit, knowledge)
        if not rules and hit.kind in {"dist", "conda"} and hit.name.lower() not in _IGNORED_NAMES:
            unclassified.add(hit.name.lower())
        matched.extend((hit, r) for r in rules)
    present = frozenset(r.id for _, r in matched)
    best: dict[tuple[str, str, int], Finding] = {}
    for hit, rule in matched:
        f = _finding(hit, rule, present)
        key = (rule.id, f.file, f.line)
        if key not in best or (best[key].optional and not f.optional):
            best[key] = f
    findings = sorted(best.values(), key=lambda f: (f.file, f.line, f.key))
    return tuple(findings), tuple(sorted(unclassified))


def _worst(verdicts: Iterable[Verdict]) -> Verdict:
    return max(verdicts, key=VERDICT_ORDER.index, default="runs")


def _largest(efforts: Iterable[Effort | None]) -> Effort | None:
    real = [e for e in efforts if e is not None]
    return max(real, key=EFFORT_ORDER.index) if real else None


def judge_platform(
    platform: Platform, findings: Sequence[Finding], knowledge: Knowledge
) -> PlatformVerdict:
    """The verdict, issues and notes of one platform (rules 2-4 above)."""
    counted = [f for f in findings if f.impact(platform).counts]
    issues: list[Issue] = []
    for key in dict.fromkeys(f.key for f in counted if f.impact(platform).verdict != "runs"):
        group = [f for f in counted if f.key == key]
        imp = group[0].impact(platform)
        issues.append(
            Issue(
                key=key,
                title=group[0].title,
                status=imp.status,
                verdict=imp.verdict,
                why=group[0].why,
                porting=imp.porting,
                effort=imp.effort,
                locations=tuple(sorted({f.location for f in group})),
            )
        )
    issues.sort(key=lambda i: (-VERDICT_ORDER.index(i.verdict), i.key))
    notes: dict[str, str] = {}  # note text by its dedup key (one per caveat text)
    required = {f.key for f in findings if not f.optional}
    present = {f.key for f in findings}
    for f in findings:
        imp = f.impact(platform)
        rule = knowledge.rule(f.key)
        caveat = rule.caveats.get(platform)
        if caveat and (imp.counts or f.optional or (f.tpu_path and platform == "google-tpu")):
            notes.setdefault(caveat, f"{f.title}: {caveat}")
        if (
            f.optional
            and imp.verdict != "runs"
            and f.key not in required
            and not f.condition.startswith("marker:")
        ):
            text = f"{f.title} is optional here ({f.condition}); it {_phrase(imp.verdict)}"
            notes.setdefault(text, text)
        done = set(rule.satisfied_by.get(platform, ())) & present
        if done and not f.optional:
            text = f"{f.title}: already handled by {', '.join(sorted(done))}"
            notes.setdefault(text, text)
    return PlatformVerdict(
        platform=platform,
        name=PLATFORM_NAMES[platform],
        verdict=_worst(i.verdict for i in issues),
        effort=_largest(i.effort for i in issues),
        issues=tuple(issues),
        notes=tuple(notes.values()),
    )


def _phrase(verdict: Verdict) -> str:
    return {"runs": "runs", "runs-with-changes": "needs changes", "does-not-run": "does not run"}[
        verdict
    ]


def judge(findings: Sequence[Finding], knowledge: Knowledge) -> tuple[PlatformVerdict, ...]:
    """One ``PlatformVerdict`` per platform, in PLATFORMS order."""
    return tuple(judge_platform(p, findings, knowledge) for p in PLATFORMS)


def frameworks(findings: Sequence[Finding], knowledge: Knowledge) -> tuple[str, ...]:
    """ML frameworks the project requires (optional findings excluded)."""
    names = {knowledge.rule(f.key).framework for f in findings if not f.optional}
    return tuple(sorted(n for n in names if n))


def cuda_specific_libs(findings: Sequence[Finding]) -> tuple[str, ...]:
    """Required packages that run on NVIDIA but not on a TPU: the article's 'CUDA-specific'."""
    return tuple(
        sorted(
            {
                f.key
                for f in findings
                if f.kind == "package"
                and not f.optional
                and not f.tpu_path
                and f.impact("nvidia-cuda").verdict == "runs"
                and f.impact("google-tpu").verdict == "does-not-run"
            }
        )
    )


def custom_kernels(findings: Sequence[Finding], knowledge: Knowledge) -> tuple[str, ...]:
    """Kernel signals (CUDA C++, Triton, CuPy raw kernels) that a TPU cannot run."""
    return tuple(
        sorted(
            {
                f.key
                for f in findings
                if f.kind == "signal"
                and not f.optional
                and knowledge.rule(f.key).category == "kernel"
                and f.impact("google-tpu").verdict == "does-not-run"
            }
        )
    )


def has_required(findings: Sequence[Finding], key: str) -> bool:
    return any(f.key == key and not f.optional for f in findings)


def tpu_ready(findings: Sequence[Finding]) -> tuple[str, ...]:
    """Rule ids of TPU routes already in the project (optional ones included)."""
    return tuple(sorted({f.key for f in findings if f.tpu_path}))
