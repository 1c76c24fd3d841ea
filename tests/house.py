"""The house drawn from its own imports: `python -m tests.house` prints it (docs/architecture.md, "The house").

- a *room* is one child of the `pipeline` package, a subpackage with everything under it (`pipeline.runtime`,
  `pipeline.families` with every family) or a top-level module (`pipeline.registry`, `pipeline.config`);
- an *arrow* runs from a room to a room it imports (any import statement of any of its modules, the ones inside
  functions included; a module named by a string, `importlib.import_module(...)` or `python -m ...`, is none);
- a room's *floor* is its depth: 0 for a room that imports no other room, else one above the highest room it
  imports, so that every arrow runs down. Rooms that import each other, directly or round a loop, cannot be
  drawn so: they share a floor, and *arrows running back up* counts the fewest of their arrows that would have
  to go for all of them to run down (a minimum feedback arc set of the loop, found by trying every order);
- a *circle* is a set of modules that import each other round a loop (a strongly connected component of the
  module graph with more than one module): a reader of any of them must read all of them at once.

The imports are read by grimp (the import-graph library import-linter is built on), the graph algorithms are
networkx's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import grimp
import networkx as nx

PACKAGE = "pipeline"


def room_of(module: str) -> str:
    """`pipeline.runtime.predict` -> `pipeline.runtime`; `pipeline.registry` -> itself; `pipeline` -> itself."""
    return ".".join(module.split(".")[:2])


def module_graph(package: str = PACKAGE) -> nx.DiGraph:
    imports = grimp.build_graph(package, cache_dir=None)
    graph = nx.DiGraph()
    graph.add_nodes_from(imports.modules)
    for module in imports.modules:
        graph.add_edges_from((module, other) for other in imports.find_modules_directly_imported_by(module))
    return graph


def room_graph(modules: nx.DiGraph) -> nx.DiGraph:
    """Rooms and the arrows between them; each arrow keeps the module imports it stands for (`via`)."""
    rooms = nx.DiGraph()
    rooms.add_nodes_from(room_of(m) for m in modules)
    for a, b in modules.edges:
        ra, rb = room_of(a), room_of(b)
        if ra != rb:
            if not rooms.has_edge(ra, rb):
                rooms.add_edge(ra, rb, via=[])
            rooms.edges[ra, rb]["via"].append((a, b))
    return rooms


def back_arrows(rooms: nx.DiGraph, loop: set[str]) -> list[tuple[str, str]]:
    """The fewest arrows inside `loop` (rooms that import each other) whose removal leaves them in an order where
    every arrow runs down: every order of the loop's rooms is tried (a loop has a handful of rooms). Among as few,
    those standing for the fewest module imports (the one import that climbs, not the many that build on a room)."""
    inner = rooms.subgraph(loop)
    if len(loop) > 8:  # too many orders to try: count every arrow of the loop
        return sorted(inner.edges)
    best: tuple[int, int, list[tuple[str, str]]] | None = None
    for order in itertools.permutations(sorted(loop)):
        rank = {room: i for i, room in enumerate(order)}  # index 0: the top floor; arrows run to higher indexes
        up = sorted((a, b) for a, b in inner.edges if rank[a] > rank[b])
        key = (len(up), sum(len(inner.edges[e]["via"]) for e in up), up)
        if best is None or key[:2] < best[:2]:
            best = key
    return best[2] if best else []


@dataclass(frozen=True)
class House:
    modules: nx.DiGraph
    rooms: nx.DiGraph
    floors: dict[str, int]  # room -> floor (0: the ground)
    back: list[tuple[str, str]]  # arrows running back up
    circles: list[list[str]]  # module circles, each sorted

    @property
    def figures(self) -> dict[str, int]:
        return {"rooms": self.rooms.number_of_nodes(), "floors": max(self.floors.values()) + 1,
                "arrows": self.rooms.number_of_edges(), "arrows running back up": len(self.back),
                "circles": len(self.circles), "modules": self.modules.number_of_nodes(),
                "module imports": self.modules.number_of_edges()}

    def drawing(self) -> str:
        lines = [", ".join(f"{v} {k}" for k, v in self.figures.items())]
        for floor in range(max(self.floors.values()), -1, -1):
            here = sorted(r for r, f in self.floors.items() if f == floor)
            lines.append(f"floor {floor:>2}: " + "  ".join(r.removeprefix(PACKAGE + ".") for r in here))
        for a, b in self.back:
            via = ", ".join(f"{x} -> {y}" for x, y in self.rooms.edges[a, b]["via"])
            lines.append(f"running back up: {a} -> {b} ({via})")
        for circle in self.circles:
            lines.append("circle: " + " <-> ".join(circle))
        return "\n".join(lines)


def house(package: str = PACKAGE) -> House:
    modules = module_graph(package)
    rooms = room_graph(modules)
    loops = nx.condensation(rooms)  # one node per set of rooms that import each other
    floor_of_loop: dict[int, int] = {}
    for node in reversed(list(nx.topological_sort(loops))):  # the ground first
        below = [floor_of_loop[n] for n in loops.successors(node)]
        floor_of_loop[node] = 1 + max(below) if below else 0
    floors = {room: floor_of_loop[loops.graph["mapping"][room]] for room in rooms}
    back = sorted(arrow for node in loops if len(members := loops.nodes[node]["members"]) > 1
                  for arrow in back_arrows(rooms, members))
    circles = sorted(sorted(c) for c in nx.strongly_connected_components(modules) if len(c) > 1)
    return House(modules, rooms, floors, back, circles)


if __name__ == "__main__":
    print(house().drawing())
