"""How we say it: terminal tables, JSON, HTML reports and the web UI."""
