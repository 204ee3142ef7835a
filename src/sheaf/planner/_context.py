"""What every clustering pass reads: the abstract graph, the job table, options, aggregators."""

from __future__ import annotations

from dataclasses import dataclass, field

from sheaf.model import Graph
from sheaf.planner._aggregate import AggregatorResolver, AggregatorTool
from sheaf.planner._jobs import JobTable
from sheaf.planner._options import Options, check_aggregator, mapped_aggregator_note
from sheaf.planner._units import Units, contract
from sheaf.predict import AutoModel


@dataclass(slots=True)
class PassContext:
    graph: Graph
    levels: list[int]                # abstract level of each job
    topo_position: list[int]         # position of each job in the abstract topological order
    table: JobTable
    options: Options
    resolver: AggregatorResolver
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    auto_choices: list[dict[str, object]] = field(default_factory=list)  # what automatic clustering chose
    _auto: AutoModel | None = None

    def auto_model(self) -> AutoModel:
        """What automatic clustering optimises under, built (``Options.auto`` a function) when first
        asked: loading it reads the earlier runs, which a plan with no automatic group never needs."""
        if self._auto is None:
            given = self.options.auto
            self._auto = given if isinstance(given, AutoModel) else given()
        return self._auto

    def aggregator_for(self, members: list[int], site: str,
                       cluster: str) -> tuple[str, AggregatorTool | None]:
        """The cluster's aggregator: its last task's choice (a note when its tasks disagree)."""
        wanted = self.table.aggregators
        last = members[-1]
        where = f"the job.aggregator profile of job '{self.table.jobs[last].id}'"
        name = check_aggregator(wanted[last], where)
        mapped = mapped_aggregator_note(wanted[last], where)
        if mapped is not None and mapped not in self.warnings:
            self.warnings.append(mapped)
        if any(wanted[j] != name for j in members):
            self.notes.append(f"cluster {cluster}: its tasks ask for different aggregators; "
                              f"using the last task's, {name}")
        return name, self.resolver.resolve(site, name)

    def unit_levels(self, units: Units) -> list[int]:
        """Level of each job's unit in the current unit graph (abstract levels before any cluster)."""
        if not units.clustered:
            return self.levels
        ug = contract(units, self.graph)
        return [ug.levels[c] for c in ug.compact]
