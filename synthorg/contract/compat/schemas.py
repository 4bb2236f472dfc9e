"""Comparing two schemas: does what the sender writes fit what the receiver reads?"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from synthorg.contract.compat.document import (
    Document,
    Unresolvable,
    allowed_values,
    const_of,
    is_closed,
    properties_of,
    ref_name,
    required_of,
    schema_types,
    shown_values,
    unfit_types,
    union_variants,
)
from synthorg.contract.compat.report import Finding, Severity

_RANGES = (
    ("minLength", "maxLength", "characters"),
    ("minItems", "maxItems", "items"),
    ("minProperties", "maxProperties", "members"),
    ("minimum", "maximum", ""),
)
_MAX_DEPTH = 64
_MAX_COMPARISONS = 20000


@dataclass(frozen=True)
class Direction:
    """Who writes and who reads: in a request we send and the peer reads; in a result the
    reverse. `sender` and `receiver` are "we" or "the peer"."""

    sender: str
    receiver: str

    @staticmethod
    def says(subject: str, verb: str) -> str:
        if subject == "we":
            return f"we {verb}"
        return f"{subject} {'does' if verb == 'do' else verb + 's'}"

    @staticmethod
    def whose(subject: str) -> str:
        return "our" if subject == "we" else f"{subject}'s"


REQUEST = Direction("we", "the peer")
RESULT = Direction("the peer", "we")


class Comparison:
    def __init__(self, sender: Document, receiver: Document, direction: Direction) -> None:
        self.sender, self.receiver, self.direction = sender, receiver, direction
        self.findings: list[Finding] = []
        # Pairs being compared further up: a recursive schema (Message -> TaskStatus ->
        # Message) is compared once per path; the budget bounds pathological documents.
        self._stack: set[tuple[object, object]] = set()
        self._budget = [_MAX_COMPARISONS]

    def add(self, severity: Severity, where: str, message: str) -> None:
        self.findings.append(Finding(severity, where, message))

    def compare(self, sent: Any, accepted: Any, where: str, depth: int = 0) -> None:
        try:
            s, s_ref = self.sender.resolve(sent)
        except Unresolvable as exc:
            whose = self.direction.whose(self.direction.sender)
            self.add("error", where, f"cannot resolve {whose} $ref {exc.ref!r}")
            return
        try:
            r, r_ref = self.receiver.resolve(accepted)
        except Unresolvable as exc:
            whose = self.direction.whose(self.direction.receiver)
            self.add("error", where, f"cannot resolve {whose} $ref {exc.ref!r}")
            return
        if r is False:
            self.add(
                "error",
                where,
                f"{self.direction.says(self.direction.receiver, 'accept')} nothing here",
            )
            return
        if s is True or r is True or not isinstance(r, Mapping) or not r:
            return  # the receiver accepts anything
        if not isinstance(s, Mapping):
            return
        key = (s_ref or id(s), r_ref or id(r))
        if key in self._stack or depth > _MAX_DEPTH or self._budget[0] <= 0:
            return
        self._budget[0] -= 1
        self._stack.add(key)
        try:
            sent_variants, accepted_variants = union_variants(s), union_variants(r)
            if sent_variants is None and accepted_variants is None:
                self._compare_one(s, r, where, depth)
            else:
                self._compare_union(
                    s, sent_variants or [s], r, accepted_variants or [r], where, depth
                )
        finally:
            self._stack.discard(key)

    def _trial(self, sent: Any, accepted: Any, where: str, depth: int) -> list[Finding]:
        trial = Comparison(self.sender, self.receiver, self.direction)
        trial._stack = set(self._stack)
        trial._budget = self._budget
        trial.compare(sent, accepted, where, depth)
        return trial.findings

    def _compare_union(
        self,
        s: Mapping[str, Any],
        sent: list[Any],
        r: Mapping[str, Any],
        accepted: list[Any],
        where: str,
        depth: int,
    ) -> None:
        """Each variant we (or the peer) may send must match one the other side accepts: by
        the discriminator's const when there is one, else the closest fit."""
        prop = _discriminator(s) or _discriminator(r)
        unmatched: list[str] = []
        for index, variant in enumerate(sent):
            tag = const_of(variant, self.sender, prop) if prop else None
            candidates = accepted
            if tag is not None and prop is not None:
                candidates = [
                    a for a in accepted if const_of(a, self.receiver, prop) in (tag, None)
                ]
            label = f"{prop}={tag}" if tag else ref_name(_raw_ref(variant)) or f"variant {index}"
            if not candidates:
                unmatched.append(label)
                continue
            trials = [self._trial(variant, candidate, where, depth + 1) for candidate in candidates]
            best = min(trials, key=_badness)
            if len(sent) > 1 and any(f.severity == "error" for f in best):
                unmatched.append(label)
            else:
                self.findings.extend(best)
        if not unmatched:
            return
        if len(unmatched) == len(sent):
            self.add(
                "error",
                where,
                f"{self.direction.says(self.direction.receiver, 'accept')} none of the forms "
                f"{self.direction.says(self.direction.sender, 'send')} ({', '.join(unmatched)})",
            )
        else:
            for label in unmatched:
                self.add(
                    "warning",
                    where,
                    f"{self.direction.says(self.direction.receiver, 'do')} not accept the form "
                    f"{label}",
                )

    def _compare_one(
        self, s: Mapping[str, Any], r: Mapping[str, Any], where: str, depth: int
    ) -> None:
        d = self.direction
        sent_types, accepted_types = schema_types(s), schema_types(r)
        if accepted_types is not None:
            if sent_types is None:
                self.add(
                    "warning",
                    where,
                    f"{d.says(d.receiver, 'accept')} only {'/'.join(sorted(accepted_types))}; "
                    f"{d.whose(d.sender)} schema does not limit the type",
                )
            else:
                refused = unfit_types(sent_types, accepted_types)
                if refused == sent_types:
                    self.add(
                        "error",
                        where,
                        f"{d.says(d.sender, 'send')} {'/'.join(sorted(sent_types))}; "
                        f"{d.says(d.receiver, 'accept')} only {'/'.join(sorted(accepted_types))}",
                    )
                    return
                if refused:
                    self.add(
                        "warning",
                        where,
                        f"{d.says(d.receiver, 'do')} not accept {'/'.join(sorted(refused))}",
                    )
        self._compare_values(s, r, where)
        self._compare_ranges(s, r, where)
        pattern = r.get("pattern")
        if isinstance(pattern, str) and s.get("pattern") != pattern and allowed_values(s) is None:
            self.add("warning", where, f"{d.says(d.receiver, 'require')} the pattern {pattern}")
        self._compare_object(s, r, where, depth)
        if "items" in s and "items" in r:
            self.compare(s["items"], r["items"], f"{where}[]", depth + 1)

    def _compare_values(self, s: Mapping[str, Any], r: Mapping[str, Any], where: str) -> None:
        d = self.direction
        accepted = allowed_values(r)
        if accepted is None:
            return
        sent = allowed_values(s)
        if sent is None:
            self.add(
                "warning",
                where,
                f"{d.says(d.receiver, 'accept')} only {shown_values(accepted)}; "
                f"{d.whose(d.sender)} schema allows other values",
            )
            return
        refused = sent - accepted
        if refused == sent:
            self.add(
                "error",
                where,
                f"{d.says(d.sender, 'send')} {shown_values(sent)}; "
                f"{d.says(d.receiver, 'accept')} only {shown_values(accepted)}",
            )
        elif refused:
            self.add(
                "warning", where, f"{d.says(d.receiver, 'do')} not accept {shown_values(refused)}"
            )

    def _compare_ranges(self, s: Mapping[str, Any], r: Mapping[str, Any], where: str) -> None:
        d = self.direction
        for low_key, high_key, unit in _RANGES:
            suffix = f" {unit}" if unit else ""
            high, sent_high = _number(r.get(high_key)), _number(s.get(high_key))
            if high is not None and (sent_high is None or sent_high > high):
                bound = f"up to {_fmt(sent_high)}" if sent_high is not None else "any size"
                self.add(
                    "warning",
                    where,
                    f"{d.says(d.receiver, 'accept')} at most {_fmt(high)}{suffix}; "
                    f"{d.whose(d.sender)} schema allows {bound}",
                )
            low, sent_low = _number(r.get(low_key)), _number(s.get(low_key))
            if low is not None and low > 0 and (sent_low is None or sent_low < low):
                bound = f"down to {_fmt(sent_low)}" if sent_low is not None else "any size"
                self.add(
                    "warning",
                    where,
                    f"{d.says(d.receiver, 'require')} at least {_fmt(low)}{suffix}; "
                    f"{d.whose(d.sender)} schema allows {bound}",
                )

    def _compare_object(
        self, s: Mapping[str, Any], r: Mapping[str, Any], where: str, depth: int
    ) -> None:
        d = self.direction
        sent_props, accepted_props = properties_of(s), properties_of(r)
        sent_required, accepted_required = required_of(s), required_of(r)
        if not (sent_props or accepted_props or accepted_required):
            return
        for name in sorted(accepted_required):
            if name not in sent_props:
                if not is_closed(s) and not sent_props:
                    continue  # a free-form object on the sending side: nothing to compare
                self.add(
                    "error",
                    _join(where, name),
                    f"{d.says(d.receiver, 'require')} it; {d.whose(d.sender)} schema never has it",
                )
            elif name not in sent_required:
                self.add(
                    "warning",
                    _join(where, name),
                    f"{d.says(d.receiver, 'require')} it; "
                    f"{d.whose(d.sender)} schema makes it optional",
                )
        for name in sent_props:
            if name in accepted_props:
                self.compare(sent_props[name], accepted_props[name], _join(where, name), depth + 1)
            elif is_closed(r):
                always = name in sent_required
                sends = d.says(d.sender, "send").replace(" send", " always send", 1)
                self.add(
                    "error" if always else "warning",
                    _join(where, name),
                    f"{sends if always else d.sender + ' may send'} it; "
                    f"{d.says(d.receiver, 'reject')} unknown members",
                )


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _fmt(number: float) -> str:
    return str(int(number)) if number.is_integer() else str(number)


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _discriminator(schema: Mapping[str, Any]) -> str | None:
    found = schema.get("discriminator")
    if isinstance(found, Mapping) and isinstance(found.get("propertyName"), str):
        return str(found["propertyName"])
    return None


def _raw_ref(node: Any) -> str | None:
    return node.get("$ref") if isinstance(node, Mapping) else None


def _badness(findings: list[Finding]) -> tuple[int, int]:
    return (
        sum(f.severity == "error" for f in findings),
        sum(f.severity == "warning" for f in findings),
    )

