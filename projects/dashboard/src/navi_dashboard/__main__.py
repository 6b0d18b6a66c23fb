"""``python -m navi_dashboard``: the same as the ``navi-dashboard`` command."""

from navi_dashboard.cli import main

if __name__ == "__main__":
    main()
