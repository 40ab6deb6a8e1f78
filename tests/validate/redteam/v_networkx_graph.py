"""Red-team corpus (valid): a shortest-path puzzle built with networkx (installed with the
project)."""

import networkx as nx

from spade.envs import TextEnv


class ShortestPathEnv(TextEnv):
    max_turns = 1

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        g = nx.gnm_random_graph(8, 16, seed=self.rng.randint(0, 10**6))
        for u, v in g.edges:
            g.edges[u, v]["w"] = self.rng.randint(1, 20)
        while not nx.is_connected(g):
            a, b = self.rng.sample(range(8), 2)
            g.add_edge(a, b, w=self.rng.randint(1, 20))
        self.g = g
        self.cost = nx.shortest_path_length(g, 0, 7, weight="w")
        edges = "; ".join(f"{u}-{v}: {d['w']}" for u, v, d in sorted(g.edges(data=True)))
        return f"Weighted undirected graph edges: {edges}. Cost of the cheapest path 0 -> 7?", {}

    def step(self, action):
        ok = action.strip() == str(self.cost)
        return "ok" if ok else "no", float(ok), True, False, {}

    def solution(self):
        return [str(self.cost)]
