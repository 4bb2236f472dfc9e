"""The operator console at /console: server-rendered pages over the admin API.

sessions.py (sign-in, expiry, the CSRF token), admin_calls.py (the admin operations, called in
process), app.py (the pages and their forms), charts.py (SVG from the metrics samples),
templates/ (Jinja2, autoescaped) and static/ (the stylesheet and the one script).
"""
