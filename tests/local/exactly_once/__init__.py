"""Workflows the exactly-once explorer checks: the project's flow in every form (``forms``) and
known-bad workflows it must catch (``known_bad``). Plain builders on a LocalCloud, with no test
framework: the installed tier runs them from the wheel too."""
