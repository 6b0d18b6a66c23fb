"""The explorer: one drone flown from the terminal or by the autopilot, recorded as demonstrations.

Modules: ``keys`` (input parsing, manual pilot), ``terminal`` (raw TTY), ``view`` (depth drawing),
``autopilot`` (scripted pilot), ``session`` (drone + recorder + publisher), ``runner`` (the loop),
``command`` (the ``explore`` CLI). Nothing is imported here so the CLI starts without torch.
"""
