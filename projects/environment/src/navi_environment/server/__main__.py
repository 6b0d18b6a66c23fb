"""``python -m navi_environment.server [serve options]``: the server's own ``serve`` command.

The same click command as ``navi-environment serve`` once the package CLI registers
:mod:`navi_environment.server.command`; usable directly by launchers and tests meanwhile.
"""

from navi_environment.server.command import serve_command

if __name__ == "__main__":
    serve_command(prog_name="python -m navi_environment.server")
