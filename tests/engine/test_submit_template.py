"""A shared description expanded through its memoised template gives, node after node, exactly what a
fresh expansion gives: argv, environment, paths, the whole job ad (values and the spelling of names),
or the same error."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sheaf.condor import _submit_template as template_module
from sheaf.condor._submit_lang import parse_submit_lines
from sheaf.condor._submit_macros import Macros
from sheaf.condor._submit_template import memoised_macros
from sheaf.engine import _jobad as jobad
from sheaf.engine._submit import JobSpec, render

NAMES = ["m1", "m2", "sheaf_a", "Sheaf_B", "JOB", "RETRY", "Cluster", "dag_node_name", "Process", "nope"]
TEXT = st.sampled_from(["a", "b c", "=", ";", "'", '"', '""', "\\", "{", "}", "{0}", "/", "..", " ",
                        "é", "日本", "x=y", ",", "(", ")", ":", "\x01"])
PLAIN = st.sampled_from(NAMES).map(lambda n: f"$({n})")
REFERENCE = st.one_of(
    PLAIN, PLAIN, PLAIN,  # the references a template takes, most often
    st.sampled_from(NAMES).map(lambda n: f"$({n}:dflt)"),
    st.sampled_from(["$$(Memory)", "$$([1 + 2])", "$(DOLLAR)", "$(", "$", "$$("]),
    # function macros read their argument's value: the template must not take them
    st.sampled_from(NAMES).map(lambda n: f"$INT({n},%d)"),
    st.sampled_from(NAMES).map(lambda n: f"$CHOICE(0, $({n}), z)"),
    st.sampled_from(NAMES).map(lambda n: f"$Fn({n})"),
    st.sampled_from(NAMES).map(lambda n: f"$SUBSTR({n}, 1)"),
)
VALUE = st.lists(st.one_of(TEXT, REFERENCE), max_size=5).map("".join)
PLAIN_VALUE = st.lists(st.one_of(TEXT, PLAIN), max_size=4).map("".join)
KEYS = ["executable", "arguments", "args", "environment", "env", "output", "error", "input", "initialdir",
        "m1", "m2", "+Tag", "MY.Other", "request_memory", "batch_name", "requirements"]
VAR_KEYS = ["m1", "m2", "sheaf_a", "Sheaf_B", "SHEAF_A", "+Tag", "+Node", "MY.Other", "output"]


def _description(lines: dict[str, str]) -> list[tuple[int, str]]:
    body = [(i + 1, f"{k} = {v}") for i, (k, v) in enumerate(lines.items()) if "\n" not in v]
    return [(0, "executable = /bin/echo"), *body, (len(body) + 1, "queue")]


def _quoted(layer: dict[str, str]) -> dict[str, str]:
    ad = ("+", "my.", "requirements")
    return {k: '"' + v.replace('"', "") + '"' if k.lower().startswith(ad) else v for k, v in layer.items()}


def _outcome(desc: object, node: str, attempt: int, layers: tuple[dict[str, str], dict[str, str]],
             memo: bool) -> object:
    try:
        job = render(desc, node, attempt, attempt + 7, "/sub", layers[0], layers[1],  # type: ignore[arg-type]
                     memo=memo)
    except ValueError as exc:
        return (type(exc), str(exc))
    return _fields(job)


def _fields(job: JobSpec) -> tuple[object, ...]:
    return (job.argv, job.env, job.cwd, job.stdout, job.stderr, job.stdin, job.universe, job.site,
            job.transfer, job.ad.unparse(), list(job.ad), job.ad)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.dictionaries(st.sampled_from(KEYS), st.one_of(PLAIN_VALUE, VALUE), max_size=7),
       nodes=st.lists(st.tuples(st.dictionaries(st.sampled_from(VAR_KEYS), VALUE, max_size=4),
                                st.dictionaries(st.sampled_from(VAR_KEYS), VALUE, max_size=3)),
                      min_size=1, max_size=4),
       quote=st.booleans())
def test_template_render_equals_fresh_render(lines: dict[str, str],
                                             nodes: list[tuple[dict[str, str], dict[str, str]]],
                                             quote: bool) -> None:
    if quote:  # ad attributes as string literals, so that most examples get past the ClassAd parser
        lines = _quoted(lines)
        nodes = [(_quoted(a), _quoted(p)) for a, p in nodes]
    try:
        desc = parse_submit_lines(_description(lines), "/sub/x.sub", "/sub", need_queue=False)
    except ValueError:
        return
    # the same keys with several nodes' values: the template made by the first node serves the others
    keys = (list(nodes[0][0]), list(nodes[0][1]))
    for index, (appended, prepended) in enumerate(nodes):
        values = (dict(zip(keys[0], [*appended.values(), *["v"] * len(keys[0])], strict=False)),
                  dict(zip(keys[1], [*prepended.values(), *["w"] * len(keys[1])], strict=False)))
        for attempt in (0, 1):
            node = f"node{index}"
            assert _outcome(desc, node, attempt, values, True) == _outcome(desc, node, attempt, values, False)


@settings(max_examples=200, deadline=None)
@given(file=st.dictionaries(st.sampled_from(["m1", "m2", "m3", "output"]), VALUE, max_size=4),
       rows=st.lists(st.dictionaries(st.sampled_from(["m1", "M2", "x", "output"]), VALUE, max_size=4),
                     min_size=1, max_size=3),
       asked=st.lists(st.one_of(st.sampled_from(["m1", "m2", "m3", "x", "output"]), VALUE), max_size=4))
def test_template_macros_equal_macros(file: dict[str, str], rows: list[dict[str, str]],
                                      asked: list[str]) -> None:
    """The Macros level alone, each answer (or error) compared, the template reused across rows."""
    values = {k: (v, i) for i, (k, v) in enumerate(file.items())}
    keys = list(rows[0])
    for row in rows:
        layer = dict(zip(keys, [*row.values(), *["v"] * len(keys)], strict=False))
        fresh = Macros("/x.sub", values, appended=layer, predefined={"JOB": "n"})
        memo = memoised_macros("/x.sub", values, appended=layer, prepended={}, predefined={"JOB": "n"})
        for text in asked:
            for ask in ((lambda m, t=text: m.get(t, "d")), (lambda m, t=text: m.expand(t))):
                assert _answer(ask, memo) == _answer(ask, fresh)


def _answer(ask: object, macros: object) -> object:
    try:
        return ask(macros)  # type: ignore[operator]
    except ValueError as exc:
        return (type(exc), str(exc))


def test_shared_description_values_differ_per_node() -> None:
    """The benchmark's shape: one description, each node's values in VARS."""
    lines = [(1, "executable = /bin/true"), (2, "arguments = $(sheaf_args)"),
             (3, "output = /o/$(sheaf_dir)/$(JOB).out"), (4, '+task = "$(sheaf_task)"'), (5, "queue")]
    desc = parse_submit_lines(lines, "/d/x.sub", "/d", need_queue=False)
    for i, args in enumerate(["a b", "'c d'", '"\'e f\' g"', ""]):
        vars_ = {"JOB": f"n{i}", "+DAGNodeRetry": '"$(RETRY)"', "sheaf_dir": f"jobs/{i}", "sheaf_args": args,
                 "sheaf_task": f"ID{i}"}
        job = render(desc, f"n{i}", i, 10 + i, "/d", {}, vars_)
        assert _fields(job) == _fields(render(desc, f"n{i}", i, 10 + i, "/d", {}, vars_, memo=False))
        assert job.stdout == f"/o/jobs/{i}/n{i}.out"
        assert job.ad["task"] == f"ID{i}"
        assert job.ad["DAGNodeRetry"] == i


def test_a_template_is_made_for_a_shape_met_twice(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Nodes whose ``$`` values all differ (each its own shape) are expanded afresh, with no template
    made for them; the second node of a shape makes one, which the third uses."""
    made: list[object] = []
    original = template_module._new_template

    def counting(*args: object) -> object:
        made.append(args)
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(template_module, "_new_template", counting)
    lines = [(1, "executable = /bin/true"), (2, "arguments = $(a)"), (3, "queue")]
    desc = parse_submit_lines(lines, "/d/y.sub", "/d", need_queue=False)
    for i in range(5):  # a $ value is part of the shape: five shapes, each met once
        render(desc, "n", 0, 1, "/d", {}, {"a": f"$(Cluster)x{i}"})
    assert made == []
    jobs = [render(desc, f"m{i}", 0, 1 + i, "/d", {}, {"a": f"w{i}"}) for i in range(3)]
    assert len(made) == 1 and [job.argv[1:] for job in jobs] == [("w0",), ("w1",), ("w2",)]


def _shared_description() -> object:
    lines = [(1, "executable = /bin/true"), (2, "output = /o/$(JOB).out"), (3, '+site = "local"'),
             (4, '+job_id = "$(JOB)"'), (5, '+Tag = "file"'), (6, "notification = $(note)"), (7, "queue")]
    return parse_submit_lines(lines, "/d/r.sub", "/d", need_queue=False)


def test_a_recipe_sets_per_node_only_what_differs_per_node() -> None:
    """The nodes of a template share a base ad with the constant +Attr expressions in place; only the
    attributes whose text differs per node are set per node, and an assignment a later one overrides
    (here the VARS +Tag, overridden by the file's line, and +DAGNodeRetry) is parsed, never set."""
    jobad.reset_caches()
    desc = _shared_description()
    jobs = []
    for i in range(4):
        before = {"JOB": f"n{i}", "+Tag": f'"vars{i}"', "+DAGNodeRetry": '"$(RETRY)"', "note": "never"}
        after = {"MY.Mine": f"{i} + 1"}
        job = render(desc, f"n{i}", i, 10 + i, "/d", after, before)  # type: ignore[arg-type]
        assert _fields(job) == _fields(render(desc, f"n{i}", i, 10 + i, "/d", after, before,  # type: ignore[arg-type]
                                              memo=False))
        jobs.append(job)
    got = [(job.ad["job_id"], job.ad["Tag"], job.ad["DAGNodeRetry"], job.ad.eval("Mine")) for job in jobs]
    assert got == [("n0", "file", 0, 1), ("n1", "file", 1, 2), ("n2", "file", 2, 3), ("n3", "file", 3, 4)]
    recipes = [entry[2] for entry in jobad._RECIPES.values() if isinstance(entry[2], jobad._Recipe)]
    assert len(recipes) == 1
    assert [(name, live) for name, _, _, _, live in recipes[0].varying] == [
        ("tag", False), ("dagnoderetry", False), ("job_id", True), ("mine", True)]
    assert recipes[0].base["site"] == "local"


def test_a_recipe_raises_a_node_s_own_bad_value_as_before() -> None:
    """A node whose VARS value is no ClassAd expression fails as it would without a recipe, even
    where the assignment is overridden later (its error is still raised)."""
    jobad.reset_caches()
    desc = _shared_description()
    for i, retry in enumerate(['"$(RETRY)"', '"$(RETRY)"', "((", '"x"']):
        before = {"JOB": f"n{i}", "+DAGNodeRetry": retry, "note": "never"}
        fresh = _outcome(desc, f"n{i}", 0, ({}, before), False)
        assert _outcome(desc, f"n{i}", 0, ({}, before), True) == fresh
    assert "DAGNodeRetry is not a ClassAd expression" in str(_outcome(desc, "n2", 0, ({}, {
        "JOB": "n2", "+DAGNodeRetry": "((", "note": "never"}), True))


def test_a_batch_fills_only_the_calls_with_placeholders() -> None:
    """``get_all`` answers a template's constant calls once and fills the others per node: the same
    answers as fresh macros, node after node (a placeholder in one call does not unbatch the rest)."""
    values = {"executable": ("/bin/true", 1), "output": ("/o/$(JOB).out", 2), "notification": ("$(note)", 3),
              "universe": ("vanilla", 4)}
    calls = (("executable", ""), ("output", ""), ("notification", "never"), ("universe", "vanilla"),
             ("nope", "dflt"))
    for i in range(4):
        layer = {"JOB": f"n{i}", "note": ["never", "always"][i % 2]}
        memo = memoised_macros("/b.sub", values, appended={}, prepended=layer, predefined={})
        fresh = Macros("/b.sub", values, prepended=layer)
        assert memo.get_all(calls) == fresh.get_all(calls) == (
            "/bin/true", f"/o/n{i}.out", ["never", "always"][i % 2], "vanilla", "dflt")
