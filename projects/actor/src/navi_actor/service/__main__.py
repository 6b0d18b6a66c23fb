"""``python -m navi_actor.service``: the brain service (same as ``navi-actor serve``)."""

from navi_actor.service.command import serve

serve(prog_name="navi-actor serve")
