"""A card as text for people. The document may come from anyone, so every value shown is
made printable (no terminal control sequences) and bounded in length."""

from __future__ import annotations

from typing import Any

MAX_TEXT = 200
MAX_SKILLS_SHOWN = 100


def clean(value: Any, limit: int = MAX_TEXT) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _get(document: dict[str, Any], key: str, kind: type) -> Any:
    value = document.get(key)
    return value if isinstance(value, kind) else None


def _modes(value: Any) -> str:
    if not isinstance(value, list) or not value:
        return "-"
    return ", ".join(clean(v, 60) for v in value[:10])


def _auth(document: dict[str, Any]) -> str:
    schemes = _get(document, "securitySchemes", dict) or {}
    requirements = _get(document, "security", list) or []

    def label(name: str) -> str:
        scheme = schemes.get(name)
        if isinstance(scheme, dict) and scheme.get("type") == "apiKey":
            return clean(scheme.get("name", name), 60)
        if isinstance(scheme, dict) and scheme.get("type") == "http":
            return f"Authorization: {clean(str(scheme.get('scheme', '')).title(), 30)}"
        return clean(name, 60)

    alternatives = [" + ".join(label(str(n)) for n in req) for req in requirements[:8]
                    if isinstance(req, dict)]
    return ", or ".join(alternatives) or "none declared"


def _capabilities(document: dict[str, Any]) -> tuple[str, list[str]]:
    caps = _get(document, "capabilities", dict) or {}

    def flag(key: str) -> str:
        return "yes" if caps.get(key) is True else "no"

    summary = (f"streaming {flag('streaming')}, push notifications {flag('pushNotifications')}, "
               f"state history {flag('stateTransitionHistory')}")
    declared = _get(caps, "extensions", list) or []
    extensions = [
        f"{clean(ext.get('uri'))} ({'required' if ext.get('required') is True else 'optional'})"
        for ext in declared[:16]
        if isinstance(ext, dict)
    ]
    return summary, extensions


def render_card(document: Any) -> str:
    if not isinstance(document, dict):
        return f"(not a JSON object: {clean(document, 80)})"
    lines = [f"{clean(document.get('name', '(no name)'), 120)}"]
    description = _get(document, "description", str)
    if description:
        lines.append(f"  {clean(description, 400)}")
    provider = _get(document, "provider", dict)
    capabilities, extensions = _capabilities(document)
    rows = [
        ("url", clean(document.get("url", "-"))),
        ("version", f"{clean(document.get('version', '-'), 60)} "
                    f"(A2A {clean(document.get('protocolVersion', '?'), 20)}, "
                    f"{clean(document.get('preferredTransport', 'JSONRPC'), 20)})"),
        ("provider", f"{clean(provider.get('organization', '-'), 80)} "
                     f"<{clean(provider.get('url', '-'))}>" if provider else "-"),
        ("input modes", _modes(document.get("defaultInputModes"))),
        ("output modes", _modes(document.get("defaultOutputModes"))),
        ("capabilities", capabilities),
        ("extensions", "; ".join(extensions) or "-"),
        ("authentication", _auth(document)),
    ]
    lines += [f"  {key:<15}{value}" for key, value in rows]
    skills = _get(document, "skills", list) or []
    lines.append(f"  skills ({len(skills)})")
    for skill in skills[:MAX_SKILLS_SHOWN]:
        if not isinstance(skill, dict):
            lines.append(f"    {clean(skill, 80)}")
            continue
        tags = _get(skill, "tags", list) or []
        tag_text = f"  [{', '.join(clean(t, 40) for t in tags[:20])}]" if tags else ""
        lines.append(f"    {clean(skill.get('id', '?'), 60):<20} "
                     f"{clean(skill.get('name', ''), 80)}{tag_text}")
    if len(skills) > MAX_SKILLS_SHOWN:
        lines.append(f"    ... and {len(skills) - MAX_SKILLS_SHOWN} more")
    return "\n".join(lines)
