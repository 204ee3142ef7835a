"""Properties: layering, typed getters, the profile layer they define, category throttles."""

from __future__ import annotations

import pytest

from sheaf.errors import ValidationError
from sheaf.model import Properties


def test_layers_later_wins() -> None:
    props = Properties.layered(("base", {"a": "1", "b": "1"}), ("conf", {"b": "2"}))
    assert dict(props.with_overrides({"c": "3"})) == {"a": "1", "b": "2", "c": "3"}
    assert props.with_overrides({}).sources == ("base", "conf", "-D")


def test_typed_getters() -> None:
    props = Properties({"t": " yes ", "f": "off", "n": "12", "bad": "x", "neg": "-1"})
    assert props.get_bool("t") is True and props.get_bool("f") is False and props.get_bool("zz", True)
    assert props.get_int("n") == 12 and props.get_int("zz", 5) == 5
    with pytest.raises(ValidationError, match="must be an integer"):
        props.get_int("bad")
    with pytest.raises(ValidationError, match=">= 0"):
        props.get_int("neg", minimum=0)
    with pytest.raises(ValidationError, match="true or false"):
        props.get_bool("bad")


def test_profile_layer_keeps_only_profiles() -> None:
    props = Properties({
        "pegasus.clusters.size": "3", "pegasus.clusters_num": "2", "pegasus.clusterer.preference": "Runtime",
        "condor.Request_Memory": "2048", "dagman.retry": "3", "dagman.stage-in.maxjobs": "4",
        "env.JAVA_HOME": "/opt/java", "sheaf.engine.slots": "4", "globus.maxwalltime": "60",
    })
    assert props.profiles() == {
        "pegasus": {"clusters.size": "3", "clusters.num": "2"}, "condor": {"request_memory": "2048"},
        "dagman": {"retry": "3"}, "env": {"JAVA_HOME": "/opt/java"}, "globus": {"maxwalltime": "60"},
    }
    assert props.category_maxjobs() == {"stage-in": 4}
